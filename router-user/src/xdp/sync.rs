//! `xdp::sync`: keeps `NODE_ADDRS`, `NODE_PORTS` and `EP_SLOTS` equal to what the router's own
//! Service ([`LocalService`]) and the node's addresses ask for ([`Desired`]), writing only the
//! differences with what the maps hold, and runs the conntrack sweep ([`super::conntrack`]).
//!
//! Write order keeps the kernel's view consistent at every step: node addresses first, then new
//! or changed endpoint slots, then `NODE_PORTS` (so a nodePort only counts endpoints whose slots
//! are in place), and stale slots last. Changed slots are written one by one, in place (Katran's
//! way, rather than swapping a whole inner map): a packet racing a rewrite sees the old or the
//! new endpoint of that slot, never an empty one, except for a nodePort going from some
//! endpoints to none, where `NODE_PORTS` says 0 before the slots go.

use std::{collections::BTreeMap, net::IpAddr, sync::Arc, time::Duration};

use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::{
    conntrack::{monotonic_ns, ConntrackTimeouts},
    desired::Desired,
    maps::NatMaps,
    XdpError, XdpFront,
};
use crate::model::LocalService;

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

impl SyncOptions {
    pub fn conntrack_timeouts(&self) -> ConntrackTimeouts {
        ConntrackTimeouts { idle: self.idle_timeout, closing: self.closing_timeout }
    }
}

/// What one sync wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Entries created or changed.
    pub written: usize,
    pub deleted: usize,
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
}

/// How often the loop looks at the interface addresses (and at most how long a sync waits).
const TICK: Duration = Duration::from_secs(1);

/// Keeps the maps in step with the router Service (each change of `service`) and the interface
/// addresses (polled every second), and sweeps conntrack. Runs until `service`'s sender is gone;
/// callers abort it on shutdown.
pub async fn run(front: Arc<XdpFront>, mut service: watch::Receiver<Option<LocalService>>, options: SyncOptions) {
    let timeouts = options.conntrack_timeouts();
    let sweep_every = timeouts.sweep_interval();
    let mut tick = tokio::time::interval(TICK.min(sweep_every));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut applied: Option<Desired> = None;
    let mut last_sweep = tokio::time::Instant::now();
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
        if last_sweep.elapsed() >= sweep_every {
            last_sweep = tokio::time::Instant::now();
            let (front2, wanted) = (front.clone(), desired.clone());
            match tokio::task::spawn_blocking(move || front2.sweep_conntrack(&wanted, monotonic_ns(), &timeouts)).await
            {
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
