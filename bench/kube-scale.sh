#!/usr/bin/env bash
# Scale figures of the Kubernetes source: table build with 10,000 routes and 30,000 endpoints (in process), and
# against a real kube-apiserver 1.20 (provisioned by `cargo xtask setup`): router start -> first table, the
# router's own table build time, and Route create -> first 200 at that scale. Loopback only; bounded.
# Prints the figures with the commit and machine. Usage: bench/kube-scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty'); $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
export ROUTER_TEST_REQUIRE_APISERVER=1
RUST_LOG=${RUST_LOG:-warn} cargo test --release -p router-tests --test kube_scale -- --ignored --nocapture 2>&1 \
  | grep -E '^(in-process|created|router start|table builds|Route create|test result)'
