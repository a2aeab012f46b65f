#!/usr/bin/env bash
# Deploy-side GC: `kgc apply` against `kubectl apply --prune -l …` on the same `kgc serve`, in
# one run. An app of N objects (default 2,000) in 20 namespaces and 10 kinds (plus the 20
# Namespaces): first apply, unchanged re-apply, then 10% changed + 10% removed. Each tool has
# its own namespaces and label. API requests per run come from the server's /metrics
# (kgc_apiserver_requests_total, all status codes), writes from kgc_store_revision.
#
#   cargo build --release -p kgc && benches/prune.sh [N]
set -euo pipefail
N=${1:-2000}
KGC=${KGC:-$(dirname "$0")/../target/release/kgc}
dir=$(mktemp -d)
"$KGC" serve --listen 127.0.0.1:0 --insecure-http --in-memory --data-dir "$dir" >"$dir/out" 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 200); do grep -q "listening on" "$dir/out" 2>/dev/null && break; sleep 0.05; done
url=$(sed -n 's/.*listening on //p' "$dir/out" | head -1)
export KUBECONFIG="$dir/kubeconfig" KUBECACHEDIR="$dir/cache"

# gen TOOL STEP: writes $dir/TOOL-STEP/{00-namespaces,KIND}.yaml. Step 1 is the full app; step 2
# changes every 10th object and drops every 10th (offset by 5).
gen() {
  python3 - "$1" "$2" "$N" "$dir/$1-$2" <<'PY'
import os, sys
tool, step, n, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.makedirs(out, exist_ok=True)
kinds = {
 "configmap": lambda m: f"apiVersion: v1\nkind: ConfigMap\n{m}data: {{key: VAL}}\n",
 "secret": lambda m: f"apiVersion: v1\nkind: Secret\n{m}data: {{key: dmFsdWU=}}\ntype: VAL\n",
 "serviceaccount": lambda m: f"apiVersion: v1\nkind: ServiceAccount\n{m}automountServiceAccountToken: false\n",
 "service": lambda m: f"apiVersion: v1\nkind: Service\n{m}spec: {{ports: [{{port: 80, name: VAL}}], selector: {{app: x}}}}\n",
 "role": lambda m: f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n{m}rules: [{{apiGroups: [''], resources: [configmaps], verbs: [get], resourceNames: [VAL]}}]\n",
 "rolebinding": lambda m: f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n{m}roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}}\nsubjects: [{{kind: ServiceAccount, name: VAL}}]\n",
 "deployment": lambda m: f"apiVersion: apps/v1\nkind: Deployment\n{m}spec: {{replicas: 0, selector: {{matchLabels: {{app: x}}}}, template: {{metadata: {{labels: {{app: x}}}}, spec: {{containers: [{{name: c, image: VAL}}]}}}}}}\n",
 "networkpolicy": lambda m: f"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n{m}spec: {{podSelector: {{matchLabels: {{app: VAL}}}}}}\n",
 "poddisruptionbudget": lambda m: f"apiVersion: policy/v1\nkind: PodDisruptionBudget\n{m}spec: {{minAvailable: 0, selector: {{matchLabels: {{app: VAL}}}}}}\n",
 "persistentvolumeclaim": lambda m: f"apiVersion: v1\nkind: PersistentVolumeClaim\n{m}spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}, storageClassName: VAL}}\n",
}
label = f"labels: {{app: bench-{tool}}}"
with open(f"{out}/00-namespaces.yaml", "w") as f:
    for ns in range(20):
        f.write(f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: {tool}-{ns}, {label}}}\n")
per = n // (20 * len(kinds))
for kind, make in kinds.items():
    with open(f"{out}/{kind}.yaml", "w") as f:
        i = 0
        for ns in range(20):
            for j in range(per):
                i += 1
                if step == 2 and i % 10 == 5:
                    continue  # removed
                val = "v2" if step == 2 and i % 10 == 0 else "v1"
                meta = f"metadata: {{name: o-{j}, namespace: {tool}-{ns}, {label}}}\n"
                f.write("---\n" + make(meta).replace("VAL", val))
PY
}
for tool in kgc kubectl; do gen "$tool" 1; gen "$tool" 2; done

requests() { curl -s "$url/metrics" | awk '/^kgc_apiserver_requests_total/ {s+=$2} END {print s}'; }
revision() { curl -s "$url/metrics" | awk '/^kgc_store_revision/ {print $2}'; }
allow=(--prune-allowlist=core/v1/ConfigMap --prune-allowlist=core/v1/Secret
  --prune-allowlist=core/v1/ServiceAccount --prune-allowlist=core/v1/Service
  --prune-allowlist=rbac.authorization.k8s.io/v1/Role
  --prune-allowlist=rbac.authorization.k8s.io/v1/RoleBinding
  --prune-allowlist=apps/v1/Deployment --prune-allowlist=networking.k8s.io/v1/NetworkPolicy
  --prune-allowlist=policy/v1/PodDisruptionBudget
  --prune-allowlist=core/v1/PersistentVolumeClaim --prune-allowlist=core/v1/Namespace)
kgc_apply() { local rc=0; "$KGC" apply "$1" --app bench --env prod -n kgc-0 --kubeconfig "$KUBECONFIG" >"$dir/kgc.out" 2>&1 || rc=$?; [ $rc -eq 0 ] || [ $rc -eq 2 ] || { cat "$dir/kgc.out" >&2; exit 1; }; }
kubectl_apply() { kubectl apply --prune -l app=bench-kubectl "${allow[@]}" -R -f "$1" >/dev/null 2>"$dir/kubectl.err"; }
kubectl get namespaces >/dev/null   # warm kubectl's discovery cache

row() { # label command…
  local r0 w0 s e
  r0=$(requests); w0=$(revision); s=$(date +%s.%N)
  "${@:2}"
  e=$(date +%s.%N)
  printf '%-50s %8.2f s %8d requests %8d writes\n' "$1" "$(echo "$e - $s" | bc)" \
    "$(( $(requests) - r0 - 1 ))" "$(( $(revision) - w0 ))"
}
echo "kgc apply vs kubectl $(kubectl version --client 2>/dev/null | head -1 | sed 's/.*: //') apply --prune, $N objects + 20 namespaces, $(nproc) cores"
row "kgc apply (first)" kgc_apply "$dir/kgc-1"
row "kubectl apply --prune (first)" kubectl_apply "$dir/kubectl-1"
row "kgc apply (unchanged)" kgc_apply "$dir/kgc-1"
row "kubectl apply --prune (unchanged)" kubectl_apply "$dir/kubectl-1"
row "kgc apply (10% changed, 10% removed)" kgc_apply "$dir/kgc-2"
row "kubectl apply --prune (10% changed, 10% removed)" kubectl_apply "$dir/kubectl-2"
left() { kubectl get "$(echo configmap,secret,serviceaccount,service,role,rolebinding,deployment,networkpolicy,poddisruptionbudget,persistentvolumeclaim)" -A -l "app=bench-$1" -o name | wc -l; }
echo "objects left: kgc $(left kgc), kubectl $(left kubectl)"
