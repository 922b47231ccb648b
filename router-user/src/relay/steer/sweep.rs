//! Removing steered flows that ended (the contract's step 6): FIN seen both ways, removed 5 s after
//! the last packet (late retransmits still translated); a RST either way, after 1 s; idle longer
//! than the route's tunnel timeout. Both entries go, Q's port is freed, the gauge follows.
//!
//! An idle flow is also ended at the pod, as the userspace relay's tunnel timeout closes both
//! sockets: a RST from Q at the sequence number P expects next (`acked`, P's highest
//! acknowledgement: nothing is in flight on an idle flow). The client needs none: R is gone, so the
//! node's kernel answers its next segment with a RST.

use std::sync::Weak;
use std::time::Duration;

use router_common::nat::{ip_from_bytes, FlowKey};
use router_common::steer::{SteerFlow, STEER_FIN, STEER_RST};

use super::segment::{Segment, TcpOptions, TCP_RST};
use super::{lock, Steering};
use crate::xdp::conntrack::monotonic_ns;

/// Linger after FIN both ways.
const FIN_LINGER: Duration = Duration::from_secs(5);
/// Linger after a RST.
const RST_LINGER: Duration = Duration::from_secs(1);

/// Why a flow is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Closed,
    Reset,
    Idle,
    /// One of its entries is gone already.
    Vanished,
}

/// Whether the flow with these entries is over at `now_ns` (CLOCK_MONOTONIC).
pub fn verdict(
    to_client: Option<&SteerFlow>,
    to_pod: Option<&SteerFlow>,
    now_ns: u64,
    idle_limit: Duration,
) -> Option<Ended> {
    let (Some(to_client), Some(to_pod)) = (to_client, to_pod) else {
        return Some(Ended::Vanished);
    };
    let last = to_client.last_seen_ns.max(to_pod.last_seen_ns);
    let quiet = Duration::from_nanos(now_ns.saturating_sub(last));
    let seen = to_client.seen | to_pod.seen;
    if seen & STEER_RST != 0 && quiet >= RST_LINGER {
        return Some(Ended::Reset);
    }
    if to_client.seen & STEER_FIN != 0 && to_pod.seen & STEER_FIN != 0 && quiet >= FIN_LINGER {
        return Some(Ended::Closed);
    }
    if quiet >= idle_limit {
        return Some(Ended::Idle);
    }
    None
}

impl Steering {
    /// Removes the flows that are over at `now_ns`; returns how many.
    pub fn sweep(&self, now_ns: u64) -> usize {
        let mut removed = 0;
        for flow in self.watched() {
            let to_client = self.datapath.flow(&flow.pod_key);
            let to_pod = self.datapath.flow(&flow.client_key);
            let (Ok(to_client), Ok(to_pod)) = (to_client, to_pod) else {
                continue;
            };
            let Some(ended) = verdict(to_client.as_ref(), to_pod.as_ref(), now_ns, flow.idle_limit) else {
                continue;
            };
            tracing::debug!(?ended, port = flow.port, "steered flow removed");
            let _ = self.datapath.remove_flow(&flow.client_key);
            let _ = self.datapath.remove_flow(&flow.pod_key);
            if let (Ended::Idle, Some(to_client)) = (ended, to_client) {
                self.reset_pod(&flow.pod_key, to_client.acked);
            }
            // Drops what the caller held for the flow (its pod's in-flight count, its connection ticket).
            lock(&self.flows).remove(&flow.pod_key);
            self.free_port(flow.port);
            self.metrics.xdp_steered_flows.dec();
            removed += 1;
        }
        removed
    }
}

impl Steering {
    /// Sends P the RST that ends leg B (`pod_key` is P -> Q) at sequence `seq`.
    fn reset_pod(&self, pod_key: &FlowKey, seq: u32) {
        let (Some(src), Some(dst)) =
            (ip_from_bytes(pod_key.family, pod_key.dst_addr), ip_from_bytes(pod_key.family, pod_key.src_addr))
        else {
            return;
        };
        let rst = Segment {
            src,
            dst,
            src_port: pod_key.dst_port,
            dst_port: pod_key.src_port,
            seq,
            ack: 0,
            flags: TCP_RST,
            window: 0,
            options: TcpOptions::default(),
            payload: &[],
        };
        if let Err(error) = self.sender.send(rst.dst, &rst.build()) {
            tracing::debug!(%error, "sending the idle flow's RST to the pod");
        }
    }
}

/// Sweeps every `every` while the setup lives.
pub async fn run(steering: Weak<Steering>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(steering) = steering.upgrade() else { return };
        steering.sweep(monotonic_ns());
        steering.pod_interfaces.prune();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;
    const HOUR: Duration = Duration::from_secs(3600);

    fn entry(last_seen_s: u64, seen: u16) -> SteerFlow {
        SteerFlow { last_seen_ns: last_seen_s * SECOND, seen, ..SteerFlow::default() }
    }

    #[test]
    fn fin_both_ways_ends_after_the_linger() {
        let (a, b) = (entry(100, STEER_FIN), entry(101, STEER_FIN));
        assert_eq!(verdict(Some(&a), Some(&b), 105 * SECOND, HOUR), None, "4 s after the last packet");
        assert_eq!(verdict(Some(&a), Some(&b), 106 * SECOND, HOUR), Some(Ended::Closed));
        let half = entry(101, 0);
        assert_eq!(verdict(Some(&a), Some(&half), 200 * SECOND, HOUR), None, "half-closed flows live on");
    }

    #[test]
    fn rst_either_way_ends_after_a_second() {
        let (a, b) = (entry(100, 0), entry(100, STEER_RST));
        assert_eq!(verdict(Some(&a), Some(&b), 100 * SECOND + SECOND / 2, HOUR), None);
        assert_eq!(verdict(Some(&b), Some(&a), 101 * SECOND, HOUR), Some(Ended::Reset));
    }

    #[test]
    fn idle_flows_end_at_the_tunnel_timeout() {
        let (a, b) = (entry(100, 0), entry(50, 0));
        let limit = Duration::from_secs(30);
        assert_eq!(verdict(Some(&a), Some(&b), 129 * SECOND, limit), None, "the newer side counts");
        assert_eq!(verdict(Some(&a), Some(&b), 130 * SECOND, limit), Some(Ended::Idle));
    }

    #[test]
    fn a_missing_entry_ends_the_flow() {
        let a = entry(100, 0);
        assert_eq!(verdict(Some(&a), None, 100 * SECOND, HOUR), Some(Ended::Vanished));
        assert_eq!(verdict(None, Some(&a), 100 * SECOND, HOUR), Some(Ended::Vanished));
    }
}
