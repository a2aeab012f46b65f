#!/usr/bin/env bash
# kubectl against kgc serve, end to end: `kubectl create -f` and `kubectl apply -f` of 1,000
# objects (create, unchanged re-apply, 10% changed, server-side apply), in one run.
#
#   cargo build --release -p kgc && benches/kubectl-apply.sh [N]
set -euo pipefail
N=${1:-1000}
KGC=${KGC:-$(dirname "$0")/../target/release/kgc}
dir=$(mktemp -d)
# Plain HTTP, as the recorded figures were measured (TLS adds a handshake per kubectl run).
"$KGC" serve --insecure-http --listen 127.0.0.1:0 --data-dir "$dir" >"$dir/out" 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$dir/out" 2>/dev/null && break; sleep 0.05; done
export KUBECONFIG="$dir/kubeconfig" KUBECACHEDIR="$dir/cache"

gen() { # prefix value file
  : >"$3"
  for i in $(seq "$N"); do
    printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s-%d, namespace: bench, labels: {app: bench}}\ndata: {key: "%s"}\n' "$1" "$i" "$2" >>"$3"
  done
}
kubectl create namespace bench >/dev/null
kubectl get configmaps -n bench >/dev/null   # warm the discovery cache
gen c v1 "$dir/create.yaml"; gen a v1 "$dir/apply.yaml"; gen s v1 "$dir/ssa.yaml"
# 10% of the applied objects change.
awk -v n="$N" '/name: a-/{split($0,p,"a-"); split(p[2],q,","); i=q[1]} /key:/ && i % 10 == 0 {sub("v1","v2")} {print}' "$dir/apply.yaml" >"$dir/apply2.yaml"

t() { local s; s=$(date +%s.%N); "$@" >/dev/null; echo "$(echo "$(date +%s.%N) - $s" | bc)"; }
create=$(t kubectl create -f "$dir/create.yaml")
apply1=$(t kubectl apply -f "$dir/apply.yaml")
apply2=$(t kubectl apply -f "$dir/apply.yaml")
apply3=$(t kubectl apply -f "$dir/apply2.yaml")
ssa=$(t kubectl apply --server-side -f "$dir/ssa.yaml")
ssa2=$(t kubectl apply --server-side -f "$dir/ssa.yaml")
echo "kubectl ($(kubectl version --client 2>/dev/null | head -1)) against kgc serve (durable), $N ConfigMaps, $(nproc) cores"
printf '%-48s %8.2f s\n' "kubectl create -f" "$create" \
  "kubectl apply -f (all created)" "$apply1" \
  "kubectl apply -f (unchanged)" "$apply2" \
  "kubectl apply -f (10% changed)" "$apply3" \
  "kubectl apply --server-side -f (all created)" "$ssa" \
  "kubectl apply --server-side -f (unchanged)" "$ssa2"
