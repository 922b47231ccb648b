//! `xdp::sync`: turns the router's own Service ([`LocalService`]) and the node's addresses into
//! the contents of `NODE_ADDRS`, `NODE_PORTS` and `EP_SLOTS`, and writes only the differences
//! with what the maps hold; and expires idle conntrack entries.
//!
//! Write order keeps the kernel's view consistent at every step: node addresses first, then new
//! or changed endpoint slots, then `NODE_PORTS` (so a nodePort only counts endpoints whose slots
//! are in place), and stale slots last. Changed slots are written one by one, in place (Katran's
//! way, rather than swapping a whole inner map): a packet racing a rewrite sees the old or the
//! new endpoint of that slot, never an empty one, except for a nodePort going from some
//! endpoints to none, where `NODE_PORTS` says 0 before the slots go.
//!
//! Conntrack expiry: an entry pair (forward and reverse) is deleted when neither direction saw a
//! packet for the idle timeout (the closing timeout once either side sent a FIN or RST), or when
//! its endpoint is no longer a local endpoint of that nodePort. The LRU maps also evict the least
//! recently used entries by themselves when full.

#![allow(unsafe_code)]

use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    net::IpAddr,
    sync::Arc,
    time::Duration,
};

use router_common::{
    maps::RING_SIZE,
    nat::{CtEntry, Endpoint, FlowKey, NodeAddr, NodeAddrKey, NodePort, NodePortKey, FAMILY_IPV4, FAMILY_IPV6},
};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::{
    maglev,
    maps::NatMaps,
    service::{Family, LocalService},
    XdpError, XdpFront,
};

/// How the sync loop runs.
#[derive(Clone, Debug)]
pub struct SyncOptions {
    /// Fixed node addresses; empty means "the addresses on the XDP interface".
    pub node_addresses: Vec<IpAddr>,
    /// Conntrack entries idle this long are deleted.
    pub idle_timeout: Duration,
    /// ... or this long once a FIN or RST was seen.
    pub closing_timeout: Duration,
}

/// The map contents the router wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    pub node_addrs: BTreeMap<NodeAddrKey, NodeAddr>,
    pub node_ports: BTreeMap<NodePortKey, NodePort>,
    pub slots: BTreeMap<router_common::nat::SlotKey, Endpoint>,
}

impl Desired {
    /// From the router Service (none: no nodePorts) and the node addresses with the interface
    /// index they were read from (0 for configured ones).
    pub fn new(service: Option<&LocalService>, node_addrs: &[(IpAddr, u32)]) -> Desired {
        let mut desired = Desired::default();
        for &(ip, if_index) in node_addrs {
            desired.node_addrs.insert(NodeAddrKey::new(ip), NodeAddr { if_index });
        }
        let Some(service) = service else { return desired };
        for port in &service.node_ports {
            for family in &service.families {
                let family_tag = match family {
                    Family::V4 => FAMILY_IPV4,
                    Family::V6 => FAMILY_IPV6,
                };
                let key = NodePortKey::tcp(port.node_port, family_tag);
                let endpoints: Vec<Endpoint> = port
                    .endpoints
                    .iter()
                    .filter(|e| Family::of(&e.ip()) == *family)
                    .map(|e| Endpoint::new(e.ip(), e.port()))
                    .collect();
                for (slot, &index) in maglev::table(&endpoints, RING_SIZE).iter().enumerate() {
                    desired.slots.insert(key.slot(slot as u32), endpoints[index]);
                }
                let count = u32::try_from(endpoints.len()).unwrap_or(u32::MAX);
                desired.node_ports.insert(key, NodePort { endpoints: count, flags: 0 });
            }
        }
        desired
    }

    /// Number of distinct endpoints over all nodePorts.
    fn endpoint_count(&self) -> usize {
        self.slots.values().collect::<BTreeSet<_>>().len()
    }
}

/// What one sync wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Entries created or changed.
    pub written: usize,
    pub deleted: usize,
}

/// What one conntrack sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    pub scanned: usize,
    /// Flows deleted (a forward entry and its reverse count as one).
    pub expired: usize,
    /// Reverse entries whose forward entry was gone.
    pub orphans: usize,
}

impl NatMaps {
    /// Makes the three userspace-written maps equal `desired`, writing only differences.
    pub(crate) fn apply(&mut self, desired: &Desired) -> Result<SyncReport, XdpError> {
        let mut report = SyncReport::default();
        let map_err = |name| move |cause| XdpError::Map { name, cause };
        use router_common::maps::{EP_SLOTS, NODE_ADDRS, NODE_PORTS};

        let current: BTreeMap<_, _> = self.node_addrs.iter().filter_map(Result::ok).collect();
        for (key, value) in &desired.node_addrs {
            if current.get(key) != Some(value) {
                self.node_addrs.insert(key, value, 0).map_err(map_err(NODE_ADDRS))?;
                report.written += 1;
            }
        }
        for key in current.keys().filter(|k| !desired.node_addrs.contains_key(k)) {
            self.node_addrs.remove(key).map_err(map_err(NODE_ADDRS))?;
            report.deleted += 1;
        }

        let current_slots: BTreeMap<_, _> = self.slots.iter().filter_map(Result::ok).collect();
        for (key, value) in &desired.slots {
            if current_slots.get(key) != Some(value) {
                self.slots.insert(key, value, 0).map_err(map_err(EP_SLOTS))?;
                report.written += 1;
            }
        }
        let current_ports: BTreeMap<_, _> = self.node_ports.iter().filter_map(Result::ok).collect();
        for (key, value) in &desired.node_ports {
            if current_ports.get(key) != Some(value) {
                self.node_ports.insert(key, value, 0).map_err(map_err(NODE_PORTS))?;
                report.written += 1;
            }
        }
        for key in current_ports.keys().filter(|k| !desired.node_ports.contains_key(k)) {
            self.node_ports.remove(key).map_err(map_err(NODE_PORTS))?;
            report.deleted += 1;
        }
        for key in current_slots.keys().filter(|k| !desired.slots.contains_key(k)) {
            self.slots.remove(key).map_err(map_err(EP_SLOTS))?;
            report.deleted += 1;
        }
        Ok(report)
    }

    /// Deletes expired conntrack entries (see the module comment). `now_ns` is CLOCK_MONOTONIC,
    /// the clock of `bpf_ktime_get_ns`.
    pub(crate) fn collect_garbage(
        &mut self,
        desired: &Desired,
        now_ns: u64,
        options: &SyncOptions,
    ) -> Result<GcReport, XdpError> {
        use router_common::maps::{CONNTRACK, CONNTRACK_REV};
        let live: HashSet<(NodePortKey, [u8; 16], u16)> =
            desired.slots.iter().map(|(slot, ep)| (slot.node_port(), ep.addr, ep.port)).collect();
        let idle = options.idle_timeout.as_nanos() as u64;
        let closing = options.closing_timeout.as_nanos() as u64;
        let mut report = GcReport::default();

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
pub(crate) fn reply_key(forward: &FlowKey, entry: &CtEntry) -> FlowKey {
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
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// How often the loop looks at the interface addresses (and at most how long a sync waits).
const TICK: Duration = Duration::from_secs(1);

/// The sweep interval: a quarter of the shorter timeout, between 250 ms and 30 s.
fn gc_interval(options: &SyncOptions) -> Duration {
    (options.idle_timeout.min(options.closing_timeout) / 4).clamp(Duration::from_millis(250), Duration::from_secs(30))
}

/// Keeps the maps in step with the router Service (each change of `service`) and the interface
/// addresses (polled every second), and sweeps conntrack. Runs until `service`'s sender is gone;
/// callers abort it on shutdown.
pub async fn run(front: Arc<XdpFront>, mut service: watch::Receiver<Option<LocalService>>, options: SyncOptions) {
    let gc_every = gc_interval(&options);
    let mut tick = tokio::time::interval(TICK.min(gc_every));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut applied: Option<Desired> = None;
    let mut last_gc = tokio::time::Instant::now();
    loop {
        tokio::select! {
            changed = service.changed() => if changed.is_err() { return },
            _ = tick.tick() => {}
        }
        let local = service.borrow_and_update().clone();
        let addrs = node_addresses(&front, &options);
        let desired = Arc::new(Desired::new(local.as_ref(), &addrs));
        if applied.as_ref() != Some(&*desired) {
            let (front2, wanted) = (front.clone(), desired.clone());
            match tokio::task::spawn_blocking(move || front2.apply(&wanted)).await {
                Ok(Ok(report)) => {
                    info!(
                        node_addresses = desired.node_addrs.len(),
                        node_ports = desired.node_ports.len(),
                        local_endpoints = desired.endpoint_count(),
                        written = report.written,
                        deleted = report.deleted,
                        "XDP nodePort maps synced"
                    );
                    applied = Some((*desired).clone());
                }
                Ok(Err(err)) => warn!(%err, "syncing the XDP nodePort maps failed; retrying in a second"),
                Err(err) => warn!(%err, "XDP sync task failed"),
            }
        }
        if last_gc.elapsed() >= gc_every {
            last_gc = tokio::time::Instant::now();
            let (front2, wanted, opts) = (front.clone(), desired.clone(), options.clone());
            match tokio::task::spawn_blocking(move || front2.collect_garbage(&wanted, monotonic_ns(), &opts)).await {
                Ok(Ok(report)) if report.expired + report.orphans > 0 => {
                    debug!(
                        scanned = report.scanned,
                        expired = report.expired,
                        orphans = report.orphans,
                        "conntrack sweep"
                    )
                }
                Ok(Ok(_)) => {}
                Ok(Err(err)) => warn!(%err, "conntrack sweep failed"),
                Err(err) => warn!(%err, "conntrack sweep task failed"),
            }
        }
    }
}

fn node_addresses(front: &XdpFront, options: &SyncOptions) -> Vec<(IpAddr, u32)> {
    if !options.node_addresses.is_empty() {
        return options.node_addresses.iter().map(|ip| (*ip, 0)).collect();
    }
    match super::addrs::interface_addresses(front.iface()) {
        Ok(addrs) => addrs.into_iter().map(|ip| (ip, front.if_index())).collect(),
        Err(err) => {
            warn!(iface = front.iface(), %err, "reading the interface addresses failed");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::{model::ObjectKey, xdp::service::NodePortSpec};

    fn service(endpoints: &[&str], families: &[Family]) -> LocalService {
        let endpoints: BTreeSet<SocketAddr> = endpoints.iter().map(|e| e.parse().expect("addr")).collect();
        LocalService {
            service: ObjectKey::new("ns", "router"),
            found: true,
            families: families.iter().copied().collect(),
            node_ports: vec![NodePortSpec { name: "http".into(), node_port: 30080, endpoints: endpoints.clone() }],
            health_check_node_port: Some(32000),
            local_addresses: endpoints.iter().map(SocketAddr::ip).collect(),
        }
    }

    #[test]
    fn one_full_table_per_node_port_and_family() {
        let svc = service(&["10.0.0.2:80", "[fd00::2]:80"], &[Family::V4, Family::V6]);
        let desired = Desired::new(Some(&svc), &[("10.0.0.2".parse().expect("ip"), 3)]);
        assert_eq!(desired.node_addrs.len(), 1);
        assert_eq!(desired.node_ports.len(), 2);
        assert!(desired.node_ports.values().all(|p| p.endpoints == 1));
        assert_eq!(desired.slots.len(), 2 * RING_SIZE as usize);
        let v4 = NodePortKey::tcp(30080, FAMILY_IPV4);
        assert_eq!(desired.slots[&v4.slot(0)], Endpoint::new("10.0.0.2".parse().expect("ip"), 80));
    }

    #[test]
    fn no_local_endpoint_keeps_the_port_with_zero() {
        let desired = Desired::new(Some(&service(&[], &[Family::V4])), &[]);
        assert_eq!(desired.node_ports.values().map(|p| p.endpoints).collect::<Vec<_>>(), vec![0]);
        assert!(desired.slots.is_empty());
        assert_eq!(Desired::new(None, &[]), Desired::default());
    }

    #[test]
    fn gc_interval_is_bounded() {
        let opts = |idle, closing| SyncOptions {
            node_addresses: Vec::new(),
            idle_timeout: Duration::from_secs(idle),
            closing_timeout: Duration::from_secs(closing),
        };
        assert_eq!(gc_interval(&opts(3600, 60)), Duration::from_secs(15));
        assert_eq!(gc_interval(&opts(3600, 3600)), Duration::from_secs(30));
        assert_eq!(gc_interval(&opts(1, 0)), Duration::from_millis(250));
    }
}
