//! Conntrack expiry, the userspace half of the XDP front's conntrack (the programs write the entries:
//! `router-ebpf/src/conntrack.rs`). A flow's entry pair (forward in `CONNTRACK`, reverse in
//! `CONNTRACK_REV`) is deleted when neither direction saw a packet for the idle timeout (the closing
//! timeout once either side sent a FIN or RST), or when its endpoint is no longer a local endpoint of
//! that nodePort; a reverse entry whose forward entry is gone is deleted after the closing timeout.
//! The LRU maps also evict the least recently used entries by themselves when full.

use std::{collections::HashSet, time::Duration};

use router_common::nat::{CtEntry, FlowKey, NodePortKey};

use super::{desired::Desired, maps::NatMaps, XdpError};

/// How long conntrack entries live without traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConntrackTimeouts {
    /// Entries idle this long are deleted.
    pub idle: Duration,
    /// ... or this long once a FIN or RST was seen.
    pub closing: Duration,
}

impl ConntrackTimeouts {
    /// The sweep interval: a quarter of the shorter timeout, between 250 ms and 30 s.
    pub fn sweep_interval(&self) -> Duration {
        (self.idle.min(self.closing) / 4).clamp(Duration::from_millis(250), Duration::from_secs(30))
    }
}

/// What one conntrack sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConntrackSweep {
    pub scanned: usize,
    /// Flows deleted (a forward entry and its reverse count as one).
    pub expired: usize,
    /// Reverse entries whose forward entry was gone.
    pub orphans: usize,
}

impl NatMaps {
    /// Deletes expired conntrack entries (see the module comment); the live endpoints are those of
    /// `desired`. `now_ns` is CLOCK_MONOTONIC, the clock of `bpf_ktime_get_ns`.
    pub(crate) fn sweep_conntrack(
        &mut self,
        desired: &Desired,
        now_ns: u64,
        timeouts: &ConntrackTimeouts,
    ) -> Result<ConntrackSweep, XdpError> {
        use router_common::maps::{CONNTRACK, CONNTRACK_REV};
        let live: HashSet<(NodePortKey, [u8; 16], u16)> =
            desired.slots.iter().map(|(slot, ep)| (slot.node_port(), ep.addr, ep.port)).collect();
        let idle = timeouts.idle.as_nanos() as u64;
        let closing = timeouts.closing.as_nanos() as u64;
        let mut report = ConntrackSweep::default();

        let forward: Vec<(FlowKey, CtEntry)> = self.conntrack.iter().filter_map(Result::ok).collect();
        for (key, entry) in forward {
            report.scanned += 1;
            let reply = reply_key(&key, &entry);
            let reverse = self.conntrack_rev.get(&reply, 0).ok();
            let last = reverse.map_or(entry.last_seen_ns, |r| r.last_seen_ns.max(entry.last_seen_ns));
            let flags = entry.flags | reverse.map_or(0, |r| r.flags);
            let limit = if flags != 0 { closing } else { idle };
            let node_port = NodePortKey { port: key.dst_port, family: key.family, protocol: key.protocol };
            let gone = !live.contains(&(node_port, entry.addr, entry.port));
            if now_ns.saturating_sub(last) > limit || gone {
                ignore_missing(self.conntrack.remove(&key))
                    .map_err(|cause| XdpError::Map { name: CONNTRACK, cause })?;
                if reverse.is_some() {
                    ignore_missing(self.conntrack_rev.remove(&reply))
                        .map_err(|cause| XdpError::Map { name: CONNTRACK_REV, cause })?;
                }
                report.expired += 1;
            }
        }

        let reverse: Vec<(FlowKey, CtEntry)> = self.conntrack_rev.iter().filter_map(Result::ok).collect();
        for (reply, entry) in reverse {
            report.scanned += 1;
            let forward_key = FlowKey {
                src_addr: reply.dst_addr,
                dst_addr: entry.addr,
                src_port: reply.dst_port,
                dst_port: entry.port,
                family: reply.family,
                protocol: reply.protocol,
                _pad: [0; 2],
            };
            if self.conntrack.get(&forward_key, 0).is_err() && now_ns.saturating_sub(entry.last_seen_ns) > closing {
                ignore_missing(self.conntrack_rev.remove(&reply))
                    .map_err(|cause| XdpError::Map { name: CONNTRACK_REV, cause })?;
                report.orphans += 1;
            }
        }
        Ok(report)
    }
}

/// The reverse-map key of a forward entry: endpoint -> client.
fn reply_key(forward: &FlowKey, entry: &CtEntry) -> FlowKey {
    FlowKey {
        src_addr: entry.addr,
        dst_addr: forward.src_addr,
        src_port: entry.port,
        dst_port: forward.src_port,
        family: forward.family,
        protocol: forward.protocol,
        _pad: [0; 2],
    }
}

/// A delete that found nothing (the kernel evicted or another sweep deleted it) is fine.
fn ignore_missing(result: Result<(), aya::maps::MapError>) -> Result<(), aya::maps::MapError> {
    match result {
        Err(aya::maps::MapError::KeyNotFound) => Ok(()),
        Err(aya::maps::MapError::SyscallError(err)) if err.io_error.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        other => other,
    }
}

/// CLOCK_MONOTONIC in nanoseconds, the clock `bpf_ktime_get_ns` reads.
#[allow(unsafe_code)] // clock_gettime(2)
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_interval_is_bounded() {
        let timeouts = |idle, closing| ConntrackTimeouts {
            idle: Duration::from_secs(idle),
            closing: Duration::from_secs(closing),
        };
        assert_eq!(timeouts(3600, 60).sweep_interval(), Duration::from_secs(15));
        assert_eq!(timeouts(3600, 3600).sweep_interval(), Duration::from_secs(30));
        assert_eq!(timeouts(1, 0).sweep_interval(), Duration::from_millis(250));
    }
}
