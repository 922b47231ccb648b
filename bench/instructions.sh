#!/usr/bin/env bash
# User-space instructions per request of the router, counted by callgrind: deterministic where this machine's
# timing is not (CPU per request spreads +-15% run to run here), so a change to the request path can be judged
# by itself before a side-by-side run of `cargo xtask bench`. Kernel time is not counted.
# Two loads, each a warm-up then N counted requests: keep-alive HTTP/1.1 on :80 (16 connections) and HTTP/2
# over edge TLS on :443 (16 connections, 10 streams each; the counted load's 16 handshakes included).
# Loopback only; bounded by N. Usage: bench/instructions.sh [requests, default 5000] [router binary...]
# (default: this tree's release build). Needs valgrind and h2load (cargo xtask setup).
# ACCESS_LOG=1: the access log on (default httplog format, ROUTER_LOG_LEVEL=info) to a UDP sink on loopback
# that checks one datagram arrived per counted request.
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-5000}
shift || true
for tool in valgrind callgrind_control h2load openssl; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run cargo xtask setup" >&2; exit 1; }
done
cargo build --release --quiet --package test-backend --bin test-backend
routers=("$@")
if [ ${#routers[@]} -eq 0 ]; then
  cargo build --release --quiet --package router-user --bin router
  routers=(target/release/router)
fi
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

backend_port=18191; http_port=18190; https_port=18193; stats_port=18192
host=bench.example.com
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/tls.key" -out "$work/tls.crt" \
  -days 2 -subj "/CN=$host" -addext "subjectAltName=DNS:$host,DNS:edge.$host" 2>/dev/null
indent() { sed 's/^/      /' "$1"; }
cat > "$work/bench.yaml" <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: bench-1, namespace: bench, labels: {kubernetes.io/service-name: bench}}
addressType: IPv4
ports: [{name: http, port: $backend_port, protocol: TCP}]
endpoints: [{addresses: ["127.0.0.1"]}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: bench, namespace: bench}
spec: {host: $host, to: {kind: Service, name: bench}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: edge, namespace: bench}
spec:
  host: edge.$host
  to: {kind: Service, name: bench}
  tls:
    termination: edge
    key: |
$(indent "$work/tls.key")
    certificate: |
$(indent "$work/tls.crt")
YAML
target/release/test-backend "pod=127.0.0.1:$backend_port" 2>/dev/null & pids+=($!)

log_env=()
if [ "${ACCESS_LOG:-0}" = 1 ]; then
  syslog_port=18194
  # Counts the datagrams; SIGUSR1 writes the count so far to $work/lines.
  python3 -c '
import signal, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("127.0.0.1", int(sys.argv[1])))
n = 0
def report(*_):
    open(sys.argv[2], "w").write(str(n))
signal.signal(signal.SIGUSR1, report)
while True:
    try:
        s.recv(65536)
        n += 1
    except InterruptedError:
        pass
' "$syslog_port" "$work/lines" & pids+=($!)
  syslog_pid=$!
  log_env=(ROUTER_SYSLOG_ADDRESS="127.0.0.1:$syslog_port" ROUTER_LOG_LEVEL=info)
fi
# The datagrams the sink has received so far (0 without the access log).
lines_logged() {
  [ -n "${syslog_pid:-}" ] || { echo 0; return; }
  rm -f "$work/lines"; kill -USR1 "$syslog_pid"
  for _ in $(seq 50); do [ -s "$work/lines" ] && break; sleep 0.1; done
  cat "$work/lines"
}

# Runs `router` under callgrind, loads it with `load` (h1 or h2) and prints its instructions per counted request.
count() { # router load
  local out="$work/callgrind.out" router_pid
  rm -f "$out"*
  env "${log_env[@]}" ROUTER_THREADS=1 RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" "$1" --manifests "$work" \
    --allow-loopback-endpoints --listen-addr 127.0.0.1 --http-port "$http_port" --https-port "$https_port" \
    --stats-port "$stats_port" 2>"$work/valgrind.log" & pids+=($!)
  router_pid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$stats_port/healthz/ready" >/dev/null && break; sleep 0.2; done
  local h2load_args=(-t1 -c16)
  if [ "$2" = h1 ]; then
    h2load_args+=(--h1 "http://$host:$http_port/" --connect-to="127.0.0.1:$http_port")
  else
    h2load_args+=(-m10 "https://edge.$host:$https_port/" --connect-to="127.0.0.1:$https_port")
  fi
  h2load -n 2000 "${h2load_args[@]}" >/dev/null
  callgrind_control --zero "$router_pid" >/dev/null 2>&1
  local lines_before lines_after
  lines_before=$(lines_logged)
  h2load -n "$requests" "${h2load_args[@]}" > "$work/h2load.txt"
  callgrind_control --dump "$router_pid" >/dev/null 2>&1
  sleep 0.5
  lines_after=$(lines_logged)
  kill "$router_pid"; wait "$router_pid" 2>/dev/null || true
  grep -q "$requests succeeded, 0 failed" "$work/h2load.txt" || { echo "$1 $2: requests failed:" >&2; cat "$work/h2load.txt" >&2; exit 1; }
  grep -q "status codes: $requests 2xx" "$work/h2load.txt" || { echo "$1 $2: not all 2xx:" >&2; grep status "$work/h2load.txt" >&2; exit 1; }
  if [ -n "${syslog_pid:-}" ] && [ $((lines_after - lines_before)) -ne "$requests" ]; then
    echo "$1 $2: $((lines_after - lines_before)) access log lines for $requests requests" >&2; exit 1
  fi
  callgrind_annotate "$out.1" 2>/dev/null | awk -v n="$requests" -v r="$1" -v l="$2" \
    '/PROGRAM TOTALS/ {gsub(",", "", $1); printf "%-40s %s %8.0f instructions/request\n", r, l, $1 / n}'
}
echo "callgrind, $requests counted requests per load, ROUTER_THREADS=1${syslog_pid:+, access log on}"
for router in "${routers[@]}"; do
  count "$router" h1
  count "$router" h2
done
