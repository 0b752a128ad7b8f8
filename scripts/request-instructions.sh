#!/usr/bin/env bash
# Instructions per HTTPS admission request, load-independent: a server runs
# under valgrind's callgrind while it answers N1, then (a second run) N2
# copies of the 10 KB kube-controller-manager review, sent one after the
# other over one keep-alive TLS connection; (Ir(N2) - Ir(N1)) / (N2 - N1) is
# what one request costs, start-up and shut-down cancelled out. Counts user
# space only (the kernel's share, e.g. futex wake-ups, is not in it: see
# the syscall counts of docs/performance.md).
#
#   scripts/request-instructions.sh [scion|noop|floor ...]   (default: all three)
#
#   scion  target/release/scion serve (aws, examples/objects, default logging)
#   noop   target/release/examples/noop_webhook: scion's server, a mutator
#          that decides nothing (scion's transport without the engine)
#   floor  target/release/examples/floor_webhook: rustls + hyper + serde_json
#
# Environment: N1 (default 100), N2 (default 600), PORT (default 19443),
# OUT (a directory to keep the callgrind files in; default a temporary one).
# Build first, with names for callgrind:
#   CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release --locked \
#     --bin scion --example noop_webhook --example floor_webhook
# Bounded: N2 requests per run, each server stopped after its run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n1="${N1:-100}"; n2="${N2:-600}"; port="${PORT:-19443}"
work="$(mktemp -d)"; out="${OUT:-$work}"; mkdir -p "$out"
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$root/target/release/scion" certs --cert-dir "$work/certs" --cert-host 127.0.0.1 >/dev/null
python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1])), open(sys.argv[2], "w"), separators=(",", ":"))' \
  "$root/examples/reviews/aws-kube-controller-manager.json" "$work/review.json"
cat >"$work/send.py" <<'PY'
import http.client, ssl, sys
port, n, body = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], "rb").read()
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=300)
bad = 0
for _ in range(n):
    conn.request("POST", "/controlplane", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse(); data = r.read()
    bad += r.status != 200 or b'"allowed":true' not in data
sys.exit(f"{bad} of {n} answers were not HTTP 200 with allowed: true" if bad else 0)
PY

run() { # which n -> total Ir
  local which=$1 n=$2 cg="$out/$1-$2.callgrind"
  local cmd
  case "$which" in
    scion) cmd=("$root/target/release/scion" serve --provider aws --objects-dir "$root/examples/objects"
             --cert-dir "$work/certs" --listen "127.0.0.1:$port" --health-listen "127.0.0.1:$((port + 1))"
             --metrics-listen "127.0.0.1:$((port + 2))" --controllers none) ;;
    noop) cmd=("$root/target/release/examples/noop_webhook" --listen "127.0.0.1:$port" --cert-dir "$work/certs") ;;
    floor) cmd=("$root/target/release/examples/floor_webhook" "127.0.0.1:$port" "$work/certs") ;;
    *) echo "unknown server $which" >&2; exit 2 ;;
  esac
  valgrind --tool=callgrind --callgrind-out-file="$cg" "${cmd[@]}" >"$cg.log" 2>&1 &
  pid=$!
  local up=""
  for _ in $(seq 1 600); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
    sleep 0.2
  done
  [[ -n "$up" ]] || { echo "$which did not listen:" >&2; cat "$cg.log" >&2; exit 1; }
  python3 "$work/send.py" "$port" "$n" "$work/review.json"
  # SIGTERM: scion and noop drain and exit; the floor dies of it. Either way
  # callgrind writes its counts.
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  callgrind_annotate "$cg" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}'
}

servers=("$@"); [[ ${#servers[@]} -gt 0 ]] || servers=(floor noop scion)
for which in "${servers[@]}"; do
  a=$(run "$which" "$n1"); b=$(run "$which" "$n2")
  printf '%s\t%d instructions per request\t(%s after %d requests, %s after %d)\n' \
    "$which" $(( (b - a) / (n2 - n1) )) "$a" "$n1" "$b" "$n2"
done
