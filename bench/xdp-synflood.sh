#!/usr/bin/env bash
# Legitimate requests/s through the nodePort while a bounded SYN flood (hping3, from the client
# namespace to the nodePort, random source ports, fixed count and time limit) hits it: with the XDP
# front vs with kube-proxy-style iptables DNAT, each compared with its own flood-free baseline in the
# same run. wrk (new connection per request) and the backend on CPU0, the router on CPU1, hping3 on
# CPU0. Needs root. Namespaces only (bench/xdp-common.sh).
# Usage: bench/xdp-synflood.sh [duration, default 10s] [flood interval us, default 20 (50k SYN/s)]
source "$(dirname "$0")/xdp-common.sh"
duration=${1:-10s}
interval=${2:-20}
secs=${duration%s}
count=$(( secs * 1000000 / interval ))
require hping3
setup_topology
echo "wrk -t1 -c16 -d$duration, Connection: close; hping3 -S -i u$interval -c $count (<= $((secs + 5))s);" \
  "xdp mode $XDP_MODE; $(nproc) CPUs; kernel $(uname -r)"
results=()
for contender in xdp iptables; do
  start_router "$contender"
  base=$(wrk_run "$contender-baseline" -t1 -c16 -d"$duration" -H 'Connection: close'); echo "$base"
  taskset -c 0 timeout $((secs + 5)) nsenter --net="/run/netns/$CLIENT" -- \
    hping3 -q -S -p $NODE_PORT -i "u$interval" -c "$count" "$NODE4" >"$work/hping-$contender.txt" 2>&1 & flood=$!
  pids+=($flood)
  sleep 1
  under=$(wrk_run "$contender-under-flood" -t1 -c16 -d"$duration" -H 'Connection: close'); echo "$under"
  wait "$flood" 2>/dev/null || true
  grep -m1 "packets transmitted" "$work/hping-$contender.txt" | sed "s/^/  hping3 ($contender): /" || true
  if [ "$contender" = xdp ]; then
    in_ns "$NODE" "$bin/router" xdp status --bpf-pin-dir "$PIN_DIR" | grep -E "^  (nat|ct_miss|drop_ct_full|CONNTRACK) " || true
  fi
  results+=("$(rps_of "$base")" "$(rps_of "$under")")
  stop_router
done
echo "ratio under flood / baseline, xdp: $(ratio "${results[1]}" "${results[0]}")"
echo "ratio under flood / baseline, iptables: $(ratio "${results[3]}" "${results[2]}")"
echo "ratio xdp/iptables under flood: $(ratio "${results[1]}" "${results[3]}")"
