#!/bin/sh
# Passthrough relay throughput on loopback: a direct connection, the splice(2) relay and the sockmap
# relay (in the kernel), each moving 4 GiB one way (sender and sink threads, relay on its own thread),
# twice each. Prints GB/s and CPU seconds per GB: the relay thread's, this process's, and the whole
# machine's busy CPU from /proc/stat (the sockmap's work runs in softirq and kworker context, so only the
# machine figure sees it; run on an otherwise idle machine). Needs root (loads the sk_skb program).
# Bounded: a few seconds per run; every process it starts is cargo's own test binary, which exits.
set -eu
cd "$(dirname "$0")/.."
exec cargo test --release -p router-user --lib relay::sockmap::throughput -- --ignored --nocapture --test-threads=1
