#!/usr/bin/env bash
# Resident memory of the objects-directory state with many realistic Clusters.
#
#   scripts/measure-state-memory.sh [CLUSTERS] [yaml|json]
#
# 1. generates CLUSTERS (default 250) Clusters of ~150 KB (compact JSON; ~210 KB
#    as YAML), mostly CloudProfile, plus a cloudprovider Secret per shoot, into
#    a temporary directory;
# 2. loads them in-process with `ObjectsDir` and prints VmRSS/VmHWM;
# 3. if the scion binary has a `serve` command, starts
#    `scion serve --objects-dir DIR` (plus $SCION_SERVE_ARGS, e.g.
#    "--provider aws") and prints its VmRSS/VmHWM once its log says it is
#    listening or ready.
set -euo pipefail

clusters="${1:-250}"
format="${2:-yaml}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"; [[ -n "${serve_pid:-}" ]] && kill "$serve_pid" 2>/dev/null || true' EXIT

cd "$root"
cargo build --release --quiet --example state_memory
example="$root/target/release/examples/state_memory"

"$example" --clusters "$clusters" --format "$format" --generate-only "$dir"
echo "== in-process load (cargo run --release --example state_memory -- --dir $dir)"
"$example" --clusters "$clusters" --dir "$dir"

cargo build --release --quiet --bin scion
if ! "$root/target/release/scion" serve --help >/dev/null 2>&1; then
  echo "== scion serve is not available in this build; skipped the process measurement"
  exit 0
fi
echo "== scion serve --objects-dir $dir ${SCION_SERVE_ARGS:-}"
# shellcheck disable=SC2086
"$root/target/release/scion" serve --objects-dir "$dir" ${SCION_SERVE_ARGS:-} >"$dir.serve.log" 2>&1 &
serve_pid=$!
# Up to 60 s: loading 250 YAML Clusters takes ~10 s on a busy 2-core machine.
for _ in $(seq 1 600); do
  if ! kill -0 "$serve_pid" 2>/dev/null; then
    echo "scion serve exited; its log:" && cat "$dir.serve.log" && exit 1
  fi
  if grep -qi "listening\|ready" "$dir.serve.log" 2>/dev/null; then break; fi
  sleep 0.1
done
sleep 1
grep -E '^(VmRSS|VmHWM)' "/proc/$serve_pid/status"
