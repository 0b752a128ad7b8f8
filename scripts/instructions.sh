#!/usr/bin/env bash
# Instruction counts of `scion render` and `scion mutate` per example, for
# comparing two builds on a shared machine: valgrind's callgrind counts
# instructions, which the load of other processes does not change.
#
#   scripts/instructions.sh <scion binary> <repo root with examples/> <out.tsv>
#
# Columns: example, instructions of the whole process, of loading the
# profile (ProviderArgs::profile), of the render (ccm::render before issue
# 24, render::render after) or the engine's mutate (Engine::mutate; "?" where
# it is inlined into the CLI). Build both binaries with
# CARGO_PROFILE_RELEASE_DEBUG=line-tables-only so the functions are named.
# Bounded: one process per example, 17 examples.
set -eu
bin=$1; root=$2; out=$3; : > "$out"
tmp=$(mktemp -d)
measure() { # label fnregex args...
  local label=$1 fn=$2; shift 2
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" "$@" >/dev/null 2>"$tmp/err" || { echo "FAIL $label"; tail -3 "$tmp/err"; return; }
  local total incl
  total=$(callgrind_annotate "$tmp/cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1; exit}')
  incl=$(callgrind_annotate --inclusive=yes "$tmp/cg" 2>/dev/null | { grep -E "$fn" || true; } | head -1 | awk '{gsub(",","",$1); print $1}')
  local prof
  prof=$(callgrind_annotate --inclusive=yes "$tmp/cg" 2>/dev/null | { grep -E 'ProviderArgs::profile \[' || true; } | head -1 | awk '{gsub(",","",$1); print $1}')
  printf '%s\t%s\t%s\t%s\n' "$label" "$total" "${prof:-?}" "${incl:-?}" | tee -a "$out"
}
cd "$root"
for p in aws openstack gcp azure alicloud; do
  od=examples/objects/$p
  measure "render/$p" ':scion::(ccm|render)::render \[' render --provider $p --objects-dir $od --controlplane shoot--dev--$p/control-plane
  measure "mutate-osc/$p" 'Engine::mutate(<.*>)? \[' mutate --provider $p --objects-dir $od -f examples/osc/$p-original.json -o patch
  measure "mutate-etcd/$p" 'Engine::mutate(<.*>)? \[' mutate --provider $p --objects-dir $od -f examples/etcd/$p-etcd-main.json -o patch
done
measure "mutate-kcm/aws" 'Engine::mutate(<.*>)? \[' mutate --provider aws --objects-dir examples/objects/aws -f examples/reviews/aws-kube-controller-manager.json -o patch
measure "mutate-oscreview/aws" 'Engine::mutate(<.*>)? \[' mutate --provider aws --objects-dir examples/objects/aws -f examples/reviews/aws-operatingsystemconfig.json -o patch
rm -rf "$tmp"
