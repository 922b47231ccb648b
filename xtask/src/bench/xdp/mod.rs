//! The XDP group: the router's nodePort front and its passthrough steering and relays, in network namespaces.
//!
//! - nodePort (`nodeport`, in a `topology`): new connections/s and keep-alive requests/s from a client namespace to
//!   the router in the node namespace, through the router's XDP front (nodePort DNAT in `xdp_front`, `nat_reverse`
//!   on egress), through kube-proxy-style iptables DNAT, and straight to the router pod's address (no nodePort);
//!   then legit new connections/s under a bounded SYN flood (`flood`, hping3) through XDP and through iptables. A
//!   fresh topology (and router) per path and repetition; paths in rotated order per repetition.
//! - passthrough (`passthrough`, routers by `pass_router`, in a `topology` too): XDP steering, the splice(2) relay,
//!   the sockmap relay and a direct connection: download throughput, new connections/s and small-request latency
//!   on an open connection, with router and machine CPU; steering runs checked as steered by the router's /metrics.
//!
//! The group needs root (namespaces, XDP, iptables, the sockmap); without it, or when the router cannot attach its
//! XDP front, the group is reported as skipped with the reason. Its results are `results::xdp` values.

mod flood;
mod nodeport;
mod pass_router;
mod passthrough;
pub mod topology;

use std::time::Instant;

use super::interrupt;
use super::measure::Meter;
use super::netns::NetNs;
use super::plan::XdpPlan;
use super::process::on_path;
use super::results::xdp::{XdpOutcome, XdpStatus};
use super::stage::Stage;
use nodeport::Stop;
use topology::PinDir;

/// Why the group cannot run on this machine (none: it can).
fn cannot_run() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, XDP, iptables, the sockmap)".into());
    }
    for tool in ["ip", "nsenter", "iptables", "ethtool", "curl", "sysctl", "wrk"] {
        if !on_path(tool) {
            return Some(format!("{tool} is not installed: run `cargo xtask setup`"));
        }
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    if !mounts.lines().any(|line| line.split_whitespace().nth(1) == Some("/sys/fs/bpf") && line.contains(" bpf ")) {
        return Some("no bpffs at /sys/fs/bpf (the XDP front pins its maps there)".into());
    }
    None
}

/// The XDP group. Never fails: a group that cannot run is `Skipped`, one that broke is `Failed`. Runs that fail
/// are added to `failed_runs`.
pub fn run(stage: &Stage, meter: &mut Meter, plan: &XdpPlan, failed_runs: &mut Vec<String>) -> XdpOutcome {
    let started = Instant::now();
    let extra_before = meter.extra_time;
    let mut outcome = XdpOutcome::new(plan);
    if let Some(reason) = cannot_run() {
        println!("bench:   XDP group skipped: {reason}");
        outcome.status = XdpStatus::Skipped(reason);
        return outcome;
    }
    let _interrupt = interrupt::Guard::install();
    NetNs::remove_stale();
    PinDir::remove_stale();
    match nodeport::run(stage, meter, plan, &mut outcome, failed_runs) {
        Ok(()) => {}
        Err(Stop::NoXdp(reason)) => {
            println!("bench:   XDP group skipped: {reason}");
            outcome.status = XdpStatus::Skipped(reason);
        }
        Err(Stop::Failed(error)) => {
            println!("bench:   XDP group failed: {error:#}");
            outcome.status = XdpStatus::Failed(format!("{error:#}"));
        }
    }
    meter.proxy_pids.clear();
    match passthrough::run(stage, meter, plan, failed_runs) {
        Ok(result) => outcome.passthrough = Some(result),
        Err(error) => {
            println!("bench:   passthrough: not run: {error:#}");
            outcome.passthrough_skipped = Some(format!("{error:#}"));
        }
    }
    meter.proxy_pids.clear();
    outcome.wall = started.elapsed();
    outcome.extra = meter.extra_time.saturating_sub(extra_before);
    outcome
}
