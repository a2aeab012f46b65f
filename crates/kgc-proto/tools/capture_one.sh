#!/bin/bash
# usage: run.sh name kubectl-args...   (DRY=0 to skip the dry-run JSON)
export KUBECONFIG=/tmp/cap/kubeconfig
K=/usr/lib/google-cloud-sdk/bin/kubectl.1.32
name=$1; shift
n_before=$(ls /tmp/cap/[0-9]*.pb 2>/dev/null | wc -l)
out=$($K "$@" 2>&1)
n_after=$(ls /tmp/cap/[0-9]*.pb 2>/dev/null | wc -l)
last=$(ls /tmp/cap/[0-9]*.pb 2>/dev/null | tail -1)
if [ "$n_after" -eq $((n_before+1)) ]; then
  mkdir -p /tmp/cap/fx
  cp "$last" /tmp/cap/fx/$name.pb; cp "${last%.pb}.meta" /tmp/cap/fx/$name.meta
  if [ "${DRY:-1}" = 1 ]; then
    # the same command as a client dry run (flags before any `--`): the JSON kubectl would send
    args=(); done_=0
    for a in "$@"; do
      if [ "$a" = "--" ] && [ $done_ = 0 ]; then args+=(--dry-run=client -o json --); done_=1; else args+=("$a"); fi
    done
    [ $done_ = 0 ] && args+=(--dry-run=client -o json)
    $K "${args[@]}" > /tmp/cap/fx/$name.dryrun.json 2>/tmp/cap/fx/$name.dryrun.err
    [ "$(ls /tmp/cap/[0-9]*.pb | wc -l)" -ne "$n_after" ] && echo "WARNING: dry run sent a body"
  fi
  echo "captured $name ($(stat -c %s $last) bytes): $out"
else
  echo "NOT captured $name ($n_before -> $n_after): $out"
fi
