#!/usr/bin/env bash
# Load and soak test of `scion serve` on loopback, over TLS with keep-alive.
#
#   scripts/load.sh [throughput|rate|soak|all]
#
#   throughput  CONNS connections (default 16), DURATION seconds (default 10),
#               as fast as possible: req/s, p50/p99/p99.9, VmRSS/VmHWM
#   rate        RATE req/s (default 1000) for DURATION seconds: p50/p99/p99.9
#   soak        SOAK_MINUTES (default 3) at RATE req/s; a kubelet-style
#               certificate rotation (new pair, `..data` symlink swapped) half
#               way; then SIGTERM during a last short burst. Reports failed
#               requests, VmRSS at start/middle/end and the exit code.
#   all         the three in turn (default)
#   ratio       scion against a floor server (examples/floor_webhook.rs:
#               rustls + hyper + serde_json, a fixed answer) in the same run:
#               servers pinned to SERVER_CPU (default 1), wrk to LOAD_CPUS
#               (default 0), ROUNDS rounds (default 3) alternating floor and
#               scion; per server and round throughput, CPU per request, p99
#               at ~RATE req/s and peak RSS; prints the ratios of the medians.
#               scion runs with its default configuration (info logs).
#
# Environment: REVIEW (default examples/reviews/aws-kube-controller-manager.json),
# OSC_SHARE (percent of the requests that send OSC_REVIEW instead, default 0;
# e.g. 50 for a Deployment+OperatingSystemConfig mix, interleaved evenly),
# OSC_REVIEW (default examples/reviews/aws-operatingsystemconfig.json, 84 KB compact),
# PORT (HTTPS, default 18443; health PORT+1, metrics PORT+2), CONNS, DURATION,
# RATE, SOAK_MINUTES, THREADS (load-generator threads, default 2), PACING, COMPACT
# (default 1: the review is sent as compact JSON, as an API server sends it
# (10 KB); 0 sends the file as is, pretty-printed, 18 KB).
#
# The load generator is wrk (Debian package `wrk`, installed with apt-get if
# missing). Fixed-rate mode paces each connection with wrk's `delay()` hook: by
# default a pause drawn uniformly from [pace/2, 3*pace/2] (same mean rate), so
# that requests arrive spread out as from independent API servers; with
# PACING=lockstep every connection waits exactly `pace`, and the connections,
# all started together, keep firing in bursts of 50 at once.
# Everything is bounded: each wrk run has a duration, the server is killed on
# exit, and only 127.0.0.1 is used. Timing figures (everything but RSS) are
# only worth writing down when the machine is otherwise quiet: the load
# average is printed before and after each run.
set -euo pipefail

mode="${1:-all}"
root="$(cd "$(dirname "$0")/.." && pwd)"
review="${REVIEW:-$root/examples/reviews/aws-kube-controller-manager.json}"
osc_review="${OSC_REVIEW:-$root/examples/reviews/aws-operatingsystemconfig.json}"
osc_share="${OSC_SHARE:-0}"
if ! [[ "$osc_share" =~ ^[0-9]+$ ]] || (( osc_share > 100 )); then
  echo "OSC_SHARE must be 0..100, got $osc_share" >&2
  exit 2
fi
port="${PORT:-18443}"
conns="${CONNS:-16}"
duration="${DURATION:-10}"
rate="${RATE:-1000}"
soak_minutes="${SOAK_MINUTES:-3}"
threads="${THREADS:-2}"
bin="$root/target/release/scion"
url="https://127.0.0.1:$port/controlplane"

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

# --- tools --------------------------------------------------------------------
if [[ ! -x "$bin" ]]; then
  log "building $bin"
  (cd "$root" && cargo build --release --locked --bin scion)
fi
if ! command -v wrk >/dev/null; then
  log "installing wrk (Debian)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null
fi

# --- certificates, kubelet-style ----------------------------------------------
certs="$work/certs"
mkdir -p "$certs"
# new_pair: generate a pair into a timestamped dir and point `..data` at it
# atomically (rename of a fresh symlink over the old one).
new_pair() {
  local ts
  ts="..$(date -u +%Y_%m_%d_%H_%M_%S.%N)"
  "$bin" certs --cert-dir "$certs/$ts" --cert-host 127.0.0.1 >/dev/null
  ln -s "$ts" "$certs/..data_tmp"
  mv -T "$certs/..data_tmp" "$certs/..data"
  for f in tls.crt tls.key ca.crt; do
    [[ -L "$certs/$f" ]] || ln -s "..data/$f" "$certs/$f"
  done
}
new_pair

# --- server -------------------------------------------------------------------
# PIN: a command prefix for the server (ratio: `taskset -c SERVER_CPU`);
# LOG_FLAGS: the log flags (default `--log-level warn`; ratio: none, the
# default configuration).
start_server() {
  ${PIN:-} "$bin" serve --provider aws --objects-dir "$root/examples/objects" \
    --cert-dir "$certs" --listen "127.0.0.1:$port" \
    --health-listen "127.0.0.1:$((port + 1))" --metrics-listen "127.0.0.1:$((port + 2))" \
    --controllers none ${LOG_FLAGS---log-level warn} >"$work/serve.log" 2>&1 &
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

rss() { awk '/^VmRSS|^VmHWM/ {printf "%s %s kB  ", $1, $2}' "/proc/$serve_pid/status"; }

# --- wrk script ---------------------------------------------------------------
# PACE_MS > 0: each connection waits that long between requests (fixed rate).
# Counts answers that are not HTTP 200 with an allowed AdmissionReview.
cat >"$work/post.lua" <<'LUA'
local threads = {}
local pace = tonumber(os.getenv("PACE_MS") or "0")
local function slurp(name)
  local f = assert(io.open(name, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end
local body = slurp(os.getenv("BODY"))
-- OSC_SHARE percent of the requests send the second body, spread evenly
-- (a running sum, no randomness): 50 alternates, 25 sends every fourth.
local share = tonumber(os.getenv("OSC_SHARE") or "0")
local second = share > 0 and slurp(os.getenv("OSC_BODY")) or nil
wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
if second then
  local first_req, second_req, acc
  function request()
    if not first_req then
      first_req = wrk.format("POST", nil, nil, body)
      second_req = wrk.format("POST", nil, nil, second)
      acc = 0
    end
    acc = acc + share
    if acc >= 100 then
      acc = acc - 100
      return second_req
    end
    return first_req
  end
end

function setup(thread) table.insert(threads, thread) end
local jitter = os.getenv("PACING") ~= "lockstep"
if pace > 0 then
  -- Uniform in [pace/2, 3*pace/2]: the same mean rate, but the connections
  -- drift apart instead of firing in step (see PACING in the header).
  function delay()
    if jitter then return pace * (0.5 + math.random()) end
    return pace
  end
end
function init(args) bad = 0; math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16)) end
function response(status, headers, resp)
  if status ~= 200 or not string.find(resp, '"allowed":true', 1, true) then
    bad = bad + 1
  end
end
function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + t:get("bad") end
  local e = summary.errors
  io.write(string.format("RESULT requests=%d req_per_s=%.0f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f bad_answers=%d connect_err=%d read_err=%d write_err=%d timeout=%d non2xx=%d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, b,
    e.connect, e.read, e.write, e.timeout, e.status))
end
LUA

# The body on the wire: compact JSON with the field order kept.
body="$work/review.json"
if [[ "${COMPACT:-1}" == 1 ]]; then
  python3 -c 'import json,sys; json.dump(json.load(sys.stdin), sys.stdout, separators=(",", ":"))' \
    <"$review" >"$body"
else
  cp "$review" "$body"
fi
log "review body: $(wc -c <"$body") bytes"
osc_body="$work/osc-review.json"
if (( osc_share > 0 )); then
  python3 -c 'import json,sys; json.dump(json.load(sys.stdin), sys.stdout, separators=(",", ":"))' \
    <"$osc_review" >"$osc_body"
  log "mix: ${osc_share}% $(basename "$osc_review") ($(wc -c <"$osc_body") bytes), the rest $(basename "$review")"
fi

# run_wrk SECONDS CONNS PACE_MS (WRK_PIN: a command prefix, ratio's taskset)
run_wrk() {
  BODY="$body" OSC_BODY="$osc_body" OSC_SHARE="$osc_share" PACE_MS="$3" ${WRK_PIN:-} wrk -t"$threads" -c"$2" -d"$1"s --timeout 5s \
    -s "$work/post.lua" "$url" | grep '^RESULT'
}

# Connections and per-connection pause giving about RATE req/s.
rate_conns=$(( rate >= 50 ? 50 : rate ))
rate_pace=$(( 1000 * rate_conns / rate ))

throughput() {
  log "throughput: $conns connections, ${duration}s, $(basename "$review")"
  run_wrk "$duration" "$conns" 0
  log "memory after throughput: $(rss)"
  loadavg
}

fixed_rate() {
  log "fixed rate: ~$rate req/s ($rate_conns connections, ${rate_pace} ms apart), ${duration}s"
  run_wrk "$duration" "$rate_conns" "$rate_pace"
  log "memory after fixed rate: $(rss)"
  loadavg
}

soak() {
  local total=$(( soak_minutes * 60 )) half
  half=$(( total / 2 ))
  log "soak: ${soak_minutes} min at ~$rate req/s, rotation after ${half}s"
  log "memory at start: $(rss)"
  run_wrk "$total" "$rate_conns" "$rate_pace" >"$work/soak.out" &
  local wrk_pid=$!
  sleep "$half"
  log "memory in the middle: $(rss)"
  local before after
  before="$(openssl x509 -noout -fingerprint -sha256 -in "$certs/tls.crt")"
  new_pair
  after="$(openssl x509 -noout -fingerprint -sha256 -in "$certs/tls.crt")"
  log "rotated: ..data -> $(readlink "$certs/..data")"
  local served=""
  for _ in $(seq 1 100); do
    served="$(openssl s_client -connect "127.0.0.1:$port" </dev/null 2>/dev/null |
      openssl x509 -noout -fingerprint -sha256 2>/dev/null || true)"
    [[ "$served" == "$after" ]] && break
    sleep 0.1
  done
  if [[ "$served" == "$after" && "$before" != "$after" ]]; then
    log "new certificate served by new connections"
  else
    log "ROTATION NOT PICKED UP: served $served, expected $after"
  fi
  wait "$wrk_pid"
  cat "$work/soak.out"
  log "memory at end: $(rss)"
  log "shutdown: 4s burst, SIGTERM after 1s"
  run_wrk 4 "$rate_conns" "$rate_pace" >"$work/shutdown.out" &
  wrk_pid=$!
  sleep 1
  kill -TERM "$serve_pid"
  local code=0
  wait "$serve_pid" || code=$?
  wait "$wrk_pid" || true
  cat "$work/shutdown.out"
  log "(after SIGTERM the listener closes: connect errors are expected; read errors and bad answers are failures)"
  log "exit code after SIGTERM: $code"
  serve_pid=""
}

# --- ratio: scion against the floor, alternated, pinned ----------------------
# The server gets core SERVER_CPU (default 1), wrk the other cores (default 0);
# each round runs the floor (examples/floor_webhook.rs) and scion, one after the
# other, with the same certificates, review and wrk settings. Per server and
# round: throughput (CONNS connections, DURATION s, closed loop), the server's
# CPU per request (utime+stime of the process over the run / requests), p99 at
# ~RATE req/s, and the peak RSS (VmHWM) after both runs. The ratios are of the
# medians over ROUNDS rounds (default 3); load and machine are printed beside.
proc_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# wait_port: until the HTTPS port accepts (the floor has no health port).
wait_port() {
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "the floor server did not listen on $port:" >&2
  cat "$work/floor.log" >&2
  exit 1
}
ratio() {
  local floor_bin="$root/target/release/examples/floor_webhook"
  if [[ ! -x "$floor_bin" ]]; then
    log "building $floor_bin"
    (cd "$root" && cargo build --release --locked --example floor_webhook)
  fi
  local rounds="${ROUNDS:-3}" server_cpu="${SERVER_CPU:-1}" load_cpus="${LOAD_CPUS:-0}"
  local hz; hz=$(getconf CLK_TCK)
  : >"$work/ratio.tsv"
  for round in $(seq 1 "$rounds"); do
    for which in floor scion; do
      if [[ "$which" == floor ]]; then
        taskset -c "$server_cpu" "$floor_bin" "127.0.0.1:$port" "$certs" >"$work/floor.log" 2>&1 &
        serve_pid=$!
        wait_port
      else
        LOG_FLAGS="" PIN="taskset -c $server_cpu" start_server
      fi
      local t0 t1 out req rps p99 cpu_us rate_out rate_p99 hwm
      t0=$(proc_cpu_ticks "$serve_pid")
      out=$(WRK_PIN="taskset -c $load_cpus" run_wrk "$duration" "$conns" 0)
      t1=$(proc_cpu_ticks "$serve_pid")
      req=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$out")
      rps=$(sed -E 's/.*req_per_s=([0-9]+).*/\1/' <<<"$out")
      cpu_us=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v n="$req" 'BEGIN {printf "%.1f", (b - a) * 1e6 / hz / n}')
      rate_out=$(WRK_PIN="taskset -c $load_cpus" run_wrk "$duration" "$rate_conns" "$rate_pace")
      rate_p99=$(sed -E 's/.*p99_ms=([0-9.]+).*/\1/' <<<"$rate_out")
      hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$serve_pid/status")
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$which" "$rps" "$cpu_us" "$rate_p99" "$hwm" >>"$work/ratio.tsv"
      log "round $round $which: $rps req/s, ${cpu_us} µs CPU/request, p99 ${rate_p99} ms at ~$rate req/s, peak RSS ${hwm} kB ($(grep -o 'bad_answers=[0-9]*' <<<"$out") $(grep -o 'non2xx=[0-9]*' <<<"$out"))"
      kill -KILL "$serve_pid" 2>/dev/null || true
      wait "$serve_pid" 2>/dev/null || true
      serve_pid=""
    done
    loadavg
  done
  python3 - "$work/ratio.tsv" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
med = {}
for which in ("floor", "scion"):
    cols = list(zip(*[[float(x) for x in r[2:]] for r in rows if r[1] == which]))
    med[which] = [statistics.median(c) for c in cols]
f, s = med["floor"], med["scion"]
print("RATIO throughput %.2fx (scion %.0f / floor %.0f req/s)" % (s[0] / f[0], s[0], f[0]))
print("RATIO cpu_per_request %.2fx (scion %.1f / floor %.1f us)" % (s[1] / f[1], s[1], f[1]))
print("RATIO p99_at_rate %.2fx (scion %.2f / floor %.2f ms)" % (s[2] / f[2], s[2], f[2]))
print("PEAK_RSS scion %.1f MiB, floor %.1f MiB" % (s[3] / 1024, f[3] / 1024))
PY
  # The timing ratios mean something only on an otherwise quiet machine.
  if awk '{exit !($1 >= 0.5)}' /proc/loadavg; then
    log "WARNING: 1-minute load average $(cut -d' ' -f1 /proc/loadavg) at the end: the timing ratios were taken under other load and are not results (peak RSS is)"
  fi
}

log "machine: $(nproc) cpus, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
log "tool: $(wrk -v 2>&1 | head -1)"
# The machine may be shared: the load average before and after each run says
# how much else was running (the figures are only comparable when it is low).
loadavg() { log "load average (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"; }
loadavg
if [[ "$mode" == ratio ]]; then
  ratio
  exit 0
fi
start_server
log "memory idle: $(rss)"
case "$mode" in
  throughput) throughput ;;
  rate) fixed_rate ;;
  soak) soak ;;
  all) throughput; fixed_rate; soak ;;
  *) echo "usage: $0 [throughput|rate|soak|all|ratio]" >&2; exit 2 ;;
esac
