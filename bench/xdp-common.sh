# Shared by bench/xdp-*.sh (sourced): a client / node / pod namespace topology like the e2e test's,
# the router in the node namespace either with the XDP front (nodePort DNAT in XDP) or without it
# and with kube-proxy-style iptables DNAT rules, and cleanup of everything by name and PID.
#
# Network rule: every address lives in namespaces created here (10.211.0.0/16); nothing leaves them.
set -euo pipefail
cd "$(dirname "$0")/.."

NS="rtbench-$$"
CLIENT=$NS-client NODE=$NS-node POD=$NS-pod
CLIENT4=10.211.0.1 NODE4=10.211.0.2 POD4=10.211.1.2
NODE_PORT=30080 HEALTH_PORT=32000
PIN_DIR=/sys/fs/bpf/router-bench-$$
XDP_MODE=${XDP_MODE:-skb}
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
pids=()
router_pid=

in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "$CLIENT" "$NODE" "$POD"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$PIN_DIR" "$work"
}
trap cleanup EXIT

require() { for tool in "$@"; do command -v "$tool" >/dev/null || { echo "$tool missing: run cargo xtask setup" >&2; exit 1; }; done; }

setup_topology() {
  require ip nsenter wrk curl ethtool iptables
  [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, XDP)" >&2; exit 1; }
  cargo build --release --quiet --package router-user --bin router --package router-tests --bin test-backend
  for ns in "$CLIENT" "$NODE" "$POD"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
  ip link add veth-c netns "$CLIENT" type veth peer name veth-n netns "$NODE"
  ip link add veth-p netns "$NODE" type veth peer name veth-q netns "$POD"
  ip -n "$CLIENT" addr add $CLIENT4/24 dev veth-c; ip -n "$NODE" addr add $NODE4/24 dev veth-n
  ip -n "$NODE" addr add 10.211.1.1/24 dev veth-p; ip -n "$POD" addr add $POD4/24 dev veth-q
  for pair in "$CLIENT veth-c" "$NODE veth-n" "$NODE veth-p" "$POD veth-q"; do
    set -- $pair; ip -n "$1" link set "$2" up
  done
  in_ns "$CLIENT" ethtool -K veth-c tx off >/dev/null; in_ns "$NODE" ethtool -K veth-n tx off >/dev/null
  mkdir -p "$work/manifests"
  cat > "$work/manifests/bench.yaml" <<YAML
apiVersion: v1
kind: Service
metadata: {name: router-default, namespace: openshift-ingress}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  healthCheckNodePort: $HEALTH_PORT
  ports: [{name: http, port: 80, nodePort: $NODE_PORT, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: router-default-1, namespace: openshift-ingress, labels: {kubernetes.io/service-name: router-default}}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}]
endpoints: [{addresses: ["$NODE4"], nodeName: bench-node}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: bench, labels: {kubernetes.io/service-name: app}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints: [{addresses: ["$POD4"]}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: app, namespace: bench}
spec: {host: app.example.com, to: {kind: Service, name: app}}
YAML
  taskset -c 0 nsenter --net="/run/netns/$POD" -- "$bin/test-backend" "app=$POD4:8080" 2>/dev/null & pids+=($!)
}

# start_router xdp|iptables: the router on CPU1 in the node namespace, with the XDP front or with
# kube-proxy's nodePort chain shape (KUBE-SERVICES -> KUBE-NODEPORTS -> KUBE-EXT -> KUBE-SVL -> KUBE-SEP DNAT).
start_router() {
  local args=(--manifests "$work/manifests" --listen-addr 0.0.0.0 --http-port 80 --stats-port 1936
    --router-service openshift-ingress/router-default --node-name bench-node)
  if [ "$1" = xdp ]; then
    args+=(--xdp-iface veth-n --xdp-mode "$XDP_MODE" --bpf-pin-dir "$PIN_DIR")
  else
    in_ns "$NODE" iptables -t nat -N KUBE-SERVICES
    in_ns "$NODE" iptables -t nat -N KUBE-NODEPORTS
    in_ns "$NODE" iptables -t nat -N KUBE-EXT-ROUTER
    in_ns "$NODE" iptables -t nat -N KUBE-SVL-ROUTER
    in_ns "$NODE" iptables -t nat -N KUBE-SEP-ROUTER
    in_ns "$NODE" iptables -t nat -A PREROUTING -j KUBE-SERVICES
    in_ns "$NODE" iptables -t nat -A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
    in_ns "$NODE" iptables -t nat -A KUBE-NODEPORTS -p tcp --dport $NODE_PORT -j KUBE-EXT-ROUTER
    in_ns "$NODE" iptables -t nat -A KUBE-EXT-ROUTER -j KUBE-SVL-ROUTER
    in_ns "$NODE" iptables -t nat -A KUBE-SVL-ROUTER -j KUBE-SEP-ROUTER
    in_ns "$NODE" iptables -t nat -A KUBE-SEP-ROUTER -p tcp -j DNAT --to-destination $NODE4:80
  fi
  RUST_LOG=warn taskset -c 1 nsenter --net="/run/netns/$NODE" -- "$bin/router" "${args[@]}" & router_pid=$!
  pids+=($router_pid)
  for _ in $(seq 100); do
    in_ns "$CLIENT" curl -sf -m 1 -H 'Host: app.example.com' "http://$NODE4:$NODE_PORT/" >/dev/null && return 0
    sleep 0.1
  done
  echo "router ($1) does not answer on the nodePort" >&2; exit 1
}

stop_router() {
  kill "$router_pid"; wait "$router_pid" 2>/dev/null || true
  in_ns "$NODE" iptables -t nat -F 2>/dev/null || true
  in_ns "$NODE" iptables -t nat -X 2>/dev/null || true
}

router_ticks() { awk '{print $14 + $15}' "/proc/$router_pid/stat"; }

# wrk_run NAME ARGS...: wrk from the client namespace on CPU0; prints "NAME req/s p50 p99 router-us/req".
wrk_run() {
  local name=$1; shift
  local before after
  before=$(router_ticks)
  taskset -c 0 nsenter --net="/run/netns/$CLIENT" -- wrk --latency -H 'Host: app.example.com' "$@" \
    "http://$NODE4:$NODE_PORT/" > "$work/$name.txt"
  after=$(router_ticks)
  awk -v n="$name" -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
    /requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
    /Socket errors/ {errs=$0}
    END {printf "%-22s %10.0f req/s  p50 %-9s p99 %-9s router CPU %.1f us/req %s\n", n, rps, p50, p99, ticks / hz * 1e6 / (reqs ? reqs : 1), errs}' \
    "$work/$name.txt"
}

rps_of() { awk '{print $2}' <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
