#!/usr/bin/env bash
# The webhook's latency as the API server sees it: scion and a no-op webhook
# (the floor) behind a test bed kube-apiserver, gardenlet-like writes at each
# rate, the API server's apiserver_admission_webhook_admission_duration_seconds
# per webhook (examples/apiserver_bench.rs says how). A benchmark, not a test:
# run it on a quiet machine and put the table in docs/performance.md with the
# machine's state.
#
#   scripts/bench-apiserver.sh                      # RATES="100 1000" DURATION=20
#   RATES="100 500 1000" DURATION=30 scripts/bench-apiserver.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/testbed.sh build >/dev/null
cargo build --locked --release --bin scion --example noop_webhook --example apiserver_bench
target="${CARGO_TARGET_DIR:-$PWD/target}/release"

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)" >&2
flags=(--net)
[ "$(id -u)" = 0 ] || flags=(--map-root-user --net)
exec unshare "${flags[@]}" -- bash -c 'ip link set lo up && exec "$0" --rates "$1" --duration "$2"' \
  "$target/examples/apiserver_bench" "${RATES:-100 1000}" "${DURATION:-20}"
