#!/usr/bin/env bash
# nodePort -> local router endpoint: XDP DNAT (router's xdp_front + nat_reverse) vs kube-proxy-style
# iptables DNAT rules, same topology, same run: new TCP connections/s (one request per connection,
# `Connection: close`) and keep-alive requests/s through nodeIP:nodePort. wrk and the backend on
# CPU0, the router on CPU1. Needs root. Namespaces only (bench/xdp-common.sh).
# Usage: bench/xdp-nodeport.sh [duration, default 10s] [connections, default 32]; XDP_MODE=skb|driver (skb).
source "$(dirname "$0")/xdp-common.sh"
duration=${1:-10s}
connections=${2:-32}
setup_topology
echo "wrk -t1 -c$connections -d$duration from the client ns; xdp mode $XDP_MODE; backend+wrk CPU0, router CPU1;" \
  "$(nproc) CPUs:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); kernel $(uname -r)"
results=()
for contender in xdp iptables; do
  start_router "$contender"
  conn=$(wrk_run "$contender-new-conn" -t1 -c"$connections" -d"$duration" -H 'Connection: close'); echo "$conn"
  keep=$(wrk_run "$contender-keepalive" -t1 -c"$connections" -d"$duration"); echo "$keep"
  results+=("$(rps_of "$conn")" "$(rps_of "$keep")")
  stop_router
done
echo "ratio xdp/iptables new connections/s: $(ratio "${results[0]}" "${results[2]}")"
echo "ratio xdp/iptables keep-alive requests/s: $(ratio "${results[1]}" "${results[3]}")"
