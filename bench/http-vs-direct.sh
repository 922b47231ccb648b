#!/usr/bin/env bash
# Requests/s through the router vs straight to the backend, with wrk, in one run and one core split:
# backend and wrk on CPU0, the router on CPU1 (docs/benchmarking.md). Loopback only; bounded by -d.
# Usage: bench/http-vs-direct.sh [duration, default 10s] [connections, default 32]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
connections=${2:-32}
command -v wrk >/dev/null || { echo "wrk missing: run cargo xtask setup" >&2; exit 1; }

cargo build --release --quiet --package router-user --bin router --package test-backend --bin test-backend
bin=target/release
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

backend_port=18181; http_port=18180; stats_port=18182
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
spec: {host: bench.example.com, to: {kind: Service, name: bench}}
YAML

taskset -c 0 "$bin/test-backend" "pod=127.0.0.1:$backend_port" 2>/dev/null & pids+=($!)
RUST_LOG=warn taskset -c 1 "$bin/router" --manifests "$work" --allow-loopback-endpoints --listen-addr 127.0.0.1 \
  --http-port "$http_port" --stats-port "$stats_port" & pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$stats_port/healthz/ready" >/dev/null && break; sleep 0.1; done
curl -sf -H 'Host: bench.example.com' "http://127.0.0.1:$http_port/" >/dev/null || { echo "router does not answer" >&2; exit 1; }

router_pid=${pids[1]}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$router_pid/stat"; }
run() { # name url
  local before after
  before=$(cpu_ticks)
  taskset -c 0 wrk -t1 -c"$connections" -d"$duration" --latency -H 'Host: bench.example.com' "$2" > "$work/$1.txt"
  after=$(cpu_ticks)
  # Router CPU per request (us), from its utime+stime; meaningful for the run through the router.
  awk -v n="$1" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
    /requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
    END {printf "%-8s %10.0f req/s  p50 %-9s p99 %-9s router CPU %.1f us/req\n", n, rps, p50, p99, ticks / hz * 1e6 / reqs}' "$work/$1.txt"
}
echo "wrk -t1 -c$connections -d$duration; backend+wrk on CPU0, router on CPU1; $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
direct=$(run direct "http://127.0.0.1:$backend_port/"); echo "$direct"
router=$(run router "http://127.0.0.1:$http_port/"); echo "$router"
awk -v d="$(echo "$direct" | awk '{print $2}')" -v r="$(echo "$router" | awk '{print $2}')" \
  'BEGIN {printf "ratio router/direct: %.2f\n", r/d}'
