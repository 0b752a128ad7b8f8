#!/usr/bin/env bash
# Hostile clients against `scion serve` on loopback: each case of
# examples/attack.rs against a fresh server, PASS/FAIL with figures.
#
#   scripts/attack.sh [CASE...]        # default: every case of `attack --list`
#
# Cases (see `target/release/examples/attack --list`): silent-tls,
# partial-preface, idle-h2, open-headers, slow-h1, idle-h1 (CONNECTIONS
# connections of that kind, each closed within its deadline while /healthz
# answers and paced valid reviews keep p99 < 10 ms), chunks (a CHUNKS-byte
# review in one-byte chunks, refused early, and in 64-byte chunks, answered;
# alone and four at once: peak RSS < 64 MiB), mixed (valid reviews on 16
# connections for DURATION s, undisturbed and with hostile clients: >= 80 % of
# the throughput, no failure), fd-exhaustion (server started with an
# open-file limit of 1024: the default cap holds, no accept fails), emfile
# (the same with --max-connections 4000: one warning per burst of failed
# accepts), flags (a review with 50,000 flags in four arrangements: < 100 ms,
# peak RSS < 64 MiB), strict (bodies that are not valid JSON wherever the fault
# sits, a 6.9 MB uid, a non-object object, a duplicate request: one rule),
# in-flight (--max-requests-in-flight 16: 429 at once); the seed webhooks
# (issue 27): unit-sections (kubelet units of 12,500 to 50,000 sections:
# time and peak memory linear; 100,000 and 200,000, then four of 200,000 at
# once: refused by the memory share, valid reviews served, no server CPU
# after the answers), unit-long-lines (2,000-byte lines before the first
# section: linear, no slower than short lines), kubelet-memo (256 reviews
# with another 5 MB kubelet configuration each: RSS back near idle),
# tiny-files and many-files (850,000 one-key maps, 50,000 files, x1 x2 x4
# and eight at once: time and memory linear, within the memory shares), seed-denials (5 MB values,
# a canary Secret value, an OSC on the Secret path: short answers, the
# object named once, no canary in answers or the server log).
#
# Environment: PORT (HTTPS, default 18443; health PORT+1, metrics PORT+2),
# CONNECTIONS (default 10000), OPEN_RATE (new hostile connections per second,
# default 1000), DURATION (default 10), CHUNKS (default 1500000), LOG_LEVEL
# (server log filter).
#
# The release binary and the attack example are built once with
# `cargo build --release --locked`. A certificate is generated with
# `scion certs --cert-host 127.0.0.1` into a temporary directory. Everything is
# bounded: each case has a time limit inside the tool (300 s), each server is
# stopped with SIGTERM (SIGKILL after 20 s), and only 127.0.0.0/8 is used.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
port="${PORT:-18443}"
connections="${CONNECTIONS:-10000}"
open_rate="${OPEN_RATE:-1000}"
duration="${DURATION:-10}"
chunks="${CHUNKS:-1500000}"
log_level="${LOG_LEVEL:-warn,scion::server=info,scion::server::webhook=warn}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
bin="$target_dir/release/scion"
attack="$target_dir/release/examples/attack"

work="$(mktemp -d)"
serve_pid=""
cleanup() {
  if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -KILL "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

log() { printf '== %s\n' "$*"; }

log "building the release binary and the attack tool"
(cd "$root" && cargo build --release --locked --bin scion --example attack)

"$bin" certs --cert-dir "$work/certs" --cert-host 127.0.0.1 >/dev/null

# start_server NOFILE FLAGS...: a fresh server, ready, its pid in serve_pid.
start_server() {
  local nofile="$1"
  shift
  : >"$work/serve.log"
  (
    if [[ "$nofile" != "-" ]]; then
      ulimit -n "$nofile"
    fi
    exec "$bin" serve --provider aws --objects-dir "$root/examples/objects" \
      --cert-dir "$work/certs" --listen "127.0.0.1:$port" \
      --health-listen "127.0.0.1:$((port + 1))" --metrics-listen "127.0.0.1:$((port + 2))" \
      --controllers none --log-level "$log_level" "$@"
  ) >"$work/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$((port + 1))/readyz" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "scion serve did not become ready:" >&2
  cat "$work/serve.log" >&2
  exit 1
}

# stop_server: SIGTERM, wait (bounded), report the exit code and the drain.
stop_server() {
  kill -TERM "$serve_pid"
  local code=0 waited=0
  while kill -0 "$serve_pid" 2>/dev/null && ((waited < 200)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if kill -0 "$serve_pid" 2>/dev/null; then
    kill -KILL "$serve_pid"
    log "server did not exit within 20 s of SIGTERM"
  fi
  wait "$serve_pid" || code=$?
  serve_pid=""
  log "server exit code $code; $(grep -Eo 'all connections drained|aborted=[0-9]+' "$work/serve.log" | tail -1)"
}

log "machine: $(nproc) cpus, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo); open-file limit $(ulimit -Hn)"

mapfile -t listing < <("$attack" --list)
selected=("$@")
failed=0
for line in "${listing[@]}"; do
  IFS='|' read -r name flags nofile about <<<"$line"
  if ((${#selected[@]} > 0)) && [[ ! " ${selected[*]} " == *" $name "* ]]; then
    continue
  fi
  log "case $name: $about"
  # shellcheck disable=SC2086 # flags are words
  start_server "$nofile" $flags
  log "server pid $serve_pid, flags: ${flags:-(none)}, open-file limit: $nofile, idle VmRSS $(awk '/^VmRSS/ {print $2 " kB"}' "/proc/$serve_pid/status"), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  out="$work/$name.out"
  if "$attack" --target "127.0.0.1:$port" --health "127.0.0.1:$((port + 1))" \
    --metrics "127.0.0.1:$((port + 2))" --ca "$work/certs/ca.crt" \
    --server-pid "$serve_pid" --server-log "$work/serve.log" \
    --review "$root/examples/reviews/aws-kube-controller-manager.json" \
    --connections "$connections" --open-rate "$open_rate" --duration "$duration" --chunks "$chunks" \
    "$name" >"$out" 2>&1; then
    :
  else
    failed=$((failed + 1))
  fi
  cat "$out"
  log "load average after the case: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share these CPUs)"
  grep '^CASE' "$out" >>"$work/summary" || echo "CASE $name FAIL (no report)" >>"$work/summary"
  stop_server
done

log "summary"
cat "$work/summary"
exit $((failed > 0))
