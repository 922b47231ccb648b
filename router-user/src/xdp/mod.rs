//! The XDP front's loader and control plane: attaches `xdp_front` (built from `router-ebpf`,
//! embedded in this binary) to one interface, `nat_reverse` to its TC egress hook and, with
//! pod-facing interfaces (`--xdp-pod-interfaces`), `steer_ingress` to the TC ingress hook of the
//! interface and of each of them (same maps), pins
//! their maps under a bpffs directory, hands the steering maps to the passthrough setup
//! ([`XdpFront::take_steer_maps`], [`SteerMaps`]), keeps the nodePort maps in step with the router's own Service
//! ([`sync`]), expires idle conntrack entries ([`conntrack`]), reads counters and fill levels
//! ([`status`]), and detaches and unpins on drop.
//!
//! Pins: `<pin_dir>/<MAP>` for every map in `router_common::maps::PINNED_MAPS` (`XDP_STATS`,
//! `NODE_ADDRS`, `NODE_PORTS`, `EP_SLOTS`, `CONNTRACK`, `CONNTRACK_REV`, `STEER_PORTS`,
//! `STEER_SYNS`, `STEER_ANSWERS`, `STEER_FLOWS`, `STEER_EVENTS`), created after both
//! programs are attached, so their presence means "attached and counting"; beside them
//! `STEER_FALLBACKS` (userspace's fallback counts, [`steer_fallbacks`]) and `LAYOUT` (the layout
//! fingerprint, [`layout`]). The links are pinned too (`link_xdp_<iface>`, `link_tcx_<iface>`, `link_tci_<iface>`,
//! [`links`]): a router that dies (SIGKILL, crash) leaves the datapath running, steered flows
//! included, and the next router on the pin dir adopts links and maps ([`adopt`]): same layout,
//! the program is replaced in each link atomically; another layout, it says so and starts clean.
//! Map pins without links (a router from before link pinning) are stale and removed on attach.
//!
//! A router that hands its listeners over to the next one (ROUTER_HANDOVER_SOCKET) hands its front over
//! too: the next router adopts links and maps while this one still runs, and this one leaves them in place
//! ([`XdpFront::leave_in_place`]). Otherwise dropping the front (SIGTERM, after the graceful delay) removes
//! the link pins, which detaches both programs, and the map pins: steered flows break then (the client's next segment reaches a
//! node with no socket for it and gets a RST). They are not kept on purpose: a stopped router
//! leaves nothing behind that no process sweeps (idle entries, Q's ports) or that a later router
//! with another layout would have to throw away; SIGKILL (and a crash) is what leaves them running.
//!
//! The nodePort sync writes only `NODE_ADDRS`, `NODE_PORTS` and `EP_SLOTS`; nothing here clears
//! the steering maps (`STEER_PORTS` is filled by the passthrough setup that takes them).
//!
//! Inspecting a running router's maps with bpftool (pin dir `/sys/fs/bpf/router` by default):
//!
//! ```text
//! bpftool map dump pinned /sys/fs/bpf/router/XDP_STATS      # per-CPU counters (index layout: router_common::stats)
//! bpftool map dump pinned /sys/fs/bpf/router/NODE_ADDRS     # node addresses the nodePorts answer on
//! bpftool map dump pinned /sys/fs/bpf/router/NODE_PORTS     # nodePort/family -> local endpoint count
//! bpftool map dump pinned /sys/fs/bpf/router/EP_SLOTS       # Maglev slots -> endpoint
//! bpftool map dump pinned /sys/fs/bpf/router/CONNTRACK      # client -> nodePort flows and their endpoint
//! bpftool map dump pinned /sys/fs/bpf/router/CONNTRACK_REV  # endpoint -> client replies and their nodePort address
//! bpftool map dump pinned /sys/fs/bpf/router/STEER_PORTS    # TLS ports whose client SYNs are recorded
//! bpftool map dump pinned /sys/fs/bpf/router/STEER_SYNS     # recorded client SYNs (ISN, options, arrival)
//! bpftool map dump pinned /sys/fs/bpf/router/STEER_ANSWERS  # pods' SYN-ACK/RST to leg B
//! bpftool map dump pinned /sys/fs/bpf/router/STEER_FLOWS    # steered flows, per direction, with their counters
//! bpftool map show pinned /sys/fs/bpf/router/CONNTRACK      # type, key/value sizes, max_entries, BTF id
//! bpftool net show dev <iface>                              # xdp_front (mode) and nat_reverse (tcx egress)
//! router xdp status [--bpf-pin-dir DIR] [--json]            # attach mode, summed counters, fill levels
//! ```

mod addrs;
mod adopt;
mod bpffs;
pub mod conntrack;
mod counters;
mod desired;
mod ebpf_log;
#[cfg(test)]
mod ebpf_log_tests;
mod error;
mod layout;
mod links;
mod loader;
mod maglev;
mod maps;
mod netlink;
mod object;
#[cfg(test)]
mod packet_tests;
mod pod_facing;
mod route_get;
pub mod status;
mod steer_fallback;
mod steer_fallbacks;
mod steer_flows;
#[cfg(test)]
mod steer_front_tests;
#[cfg(test)]
mod steer_ipv6_tests;
mod steer_maps;
#[cfg(test)]
mod steer_packet_tests;
#[cfg(test)]
mod steer_tc_tests;
pub mod sync;

use std::{
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Mutex,
    },
};

use aya::Ebpf;

pub use conntrack::{ConntrackSweep, ConntrackTimeouts};
pub use counters::XdpCounters;
pub use desired::Desired;
pub use error::XdpError;
pub use maps::MapFill;
pub use route_get::{route_to, RouteTo};
pub use steer_fallback::Fallback as SteerFallback;
pub use steer_fallbacks::{STEER_FALLBACKS, STEER_FALLBACK_SLOTS};
pub use steer_flows::SteeredFlowRow;
pub use steer_maps::SteerMaps;
pub use sync::{SyncOptions, SyncReport};

/// How to attach the program (`--xdp-mode`). Besides these names, the ones iproute2 and bpftool use
/// are accepted: `generic` / `xdpgeneric` for skb, `native` / `drv` / `xdpdrv` for driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpMode {
    /// Native (driver) mode, falling back to generic (skb) mode when the driver has no XDP support.
    #[default]
    Auto,
    /// Native (driver) mode only.
    #[value(aliases = ["native", "drv", "xdpdrv"])]
    Driver,
    /// Generic (skb) mode: runs after the kernel allocated the skb; works on every interface.
    #[value(aliases = ["generic", "xdpgeneric"])]
    Skb,
}

/// Default `max_entries` of each conntrack map.
pub const DEFAULT_CONNTRACK_SIZE: u32 = router_common::maps::CONNTRACK_DEFAULT_MAX;

/// Where and how to attach.
#[derive(Clone, Debug)]
pub struct XdpOptions {
    /// Interface name in the router's network namespace.
    pub iface: String,
    pub mode: XdpMode,
    /// A directory on bpffs (normally under `/sys/fs/bpf`) for this router's pins; created when
    /// missing and removed on drop if this router created it.
    pub pin_dir: PathBuf,
    /// `max_entries` of `CONNTRACK` and of `CONNTRACK_REV` (LRU: the least recently used flows are
    /// evicted when full).
    pub conntrack_size: u32,
    /// Passthrough steering: `steer_ingress` goes on the tcx ingress of `iface`, of each of
    /// `pod_interfaces`, and of every pod-facing interface the FIB names later
    /// ([`XdpFront::watch_pod_interface`]); a restart adopts the links of those that still exist.
    pub steer: bool,
    /// Pod-facing interfaces to attach `steer_ingress` to at start (`--xdp-pod-interfaces`), before any
    /// flow is steered through them. `iface` itself and repeats are skipped.
    pub pod_interfaces: Vec<String>,
    /// The process id of the router handing its front over to this one (ROUTER_HANDOVER_SOCKET): its links
    /// and maps are adopted while it still runs (it leaves them in place, [`XdpFront::leave_in_place`]).
    pub handed_over_by: Option<u32>,
    /// The eBPF programs' debug records (unusual packets) forwarded to tracing ([`ebpf_log`]).
    pub debug_log: bool,
}

/// The attached XDP front. Dropping it detaches both programs and removes the pins (and the pin
/// dir, if it created it).
///
/// Field order is drop order: after `drop` detaches, the map fds close, `pins` unpins, and the
/// `Ebpf` (the programs) goes last.
pub struct XdpFront {
    iface: String,
    if_index: u32,
    prog_id: u32,
    mode: &'static str,
    /// Whether a previous router's pinned links and maps were adopted.
    adopted: bool,
    stats: counters::StatsMap,
    nat: Mutex<maps::NatMaps>,
    /// Until the passthrough setup takes them ([`XdpFront::take_steer_maps`]).
    steer: Option<SteerMaps>,
    pin_dir: PathBuf,
    /// Handed over to the next router: dropping detaches nothing and removes no pin.
    left_in_place: AtomicBool,
    /// The links, the pins and the programs: behind a lock because pod-facing interfaces are attached
    /// while the router runs ([`pod_facing`]).
    hooks: Mutex<Hooks>,
    /// The reader of the programs' debug records, when asked for (stops with the front).
    _debug_log: Option<ebpf_log::EbpfLogReader>,
}

/// Field order is drop order: the links are detached first (in `Drop`), then `pins` unpins, and the `Ebpf`
/// (the programs) goes last.
struct Hooks {
    /// `xdp_front` on the interface, `nat_reverse` on its tc egress, then `steer_ingress` on the tc
    /// ingress of the interface and of each pod-facing one.
    links: Vec<links::FrontLink>,
    pins: bpffs::PinDir,
    ebpf: Ebpf,
}

impl XdpFront {
    /// Mounts bpffs at `/sys/fs/bpf` if needed, creates the pin dir, refuses if the interface
    /// already has an XDP program or the pins belong to a live router, then loads, attaches and
    /// pins.
    pub fn attach(opts: &XdpOptions) -> Result<XdpFront, XdpError> {
        let loader::Attached { mut ebpf, if_index, prog_id, links, stats, nat, steer, pins, adopted } =
            loader::attach(opts)?;
        let debug_log = opts.debug_log.then(|| ebpf_log::EbpfLogReader::start(&mut ebpf)).transpose()?;
        let mode = links.first().map_or("?", |link| link.mode);
        tracing::info!(
            iface = %opts.iface,
            mode,
            prog_id,
            conntrack_size = opts.conntrack_size,
            pin_dir = %pins.path().display(),
            adopted,
            "XDP front attached (xdp_front on ingress, nat_reverse on tc egress)"
        );
        for link in &links {
            let pinned = matches!(link.held, links::Held::Pinned(_));
            tracing::info!(
                iface = %link.iface,
                kind = ?link.kind,
                mode = link.mode,
                prog_id,
                pinned,
                adopted = link.adopted,
                "XDP front link"
            );
        }
        Ok(XdpFront {
            iface: opts.iface.clone(),
            if_index,
            prog_id,
            mode,
            adopted,
            stats,
            nat: Mutex::new(nat),
            steer: Some(steer),
            pin_dir: pins.path().to_path_buf(),
            left_in_place: AtomicBool::new(false),
            hooks: Mutex::new(Hooks { links, pins, ebpf }),
            _debug_log: debug_log,
        })
    }

    /// The mode the program runs in: `"driver"` or `"skb"`.
    pub fn attached_mode(&self) -> &'static str {
        self.mode
    }

    pub fn iface(&self) -> &str {
        &self.iface
    }

    pub fn if_index(&self) -> u32 {
        self.if_index
    }

    /// The pod-facing interfaces `steer_ingress` is attached to.
    pub fn pod_interfaces(&self) -> Vec<String> {
        self.hooks()
            .links
            .iter()
            .filter(|link| link.kind == links::LinkKind::TcxIngress && link.if_index != self.if_index)
            .map(|link| link.iface.clone())
            .collect()
    }

    /// Leaves links, maps and pins in place when this front is dropped: the next router adopted them (a
    /// hand-over), and its steered flows and nodePort traffic run on.
    pub fn leave_in_place(&self) {
        self.left_in_place.store(true, Ordering::Release);
    }

    /// Whether this front adopted the pinned links and maps of a router that died.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// The counters since attach, summed over CPUs.
    pub fn counters(&self) -> Result<XdpCounters, XdpError> {
        self.stats.read()
    }

    /// Entries and capacity of the nodePort, conntrack and steering hash maps (the steering maps
    /// read through their pins, so this works after [`XdpFront::take_steer_maps`]).
    pub fn fill(&self) -> Result<Vec<MapFill>, XdpError> {
        let mut fill = self.nat_maps().fill()?;
        fill.extend(SteerMaps::open_pinned(&self.pin_dir)?.fill()?);
        Ok(fill)
    }

    /// The steering maps, for the passthrough setup in userspace; `Some` once, `None` after.
    pub fn take_steer_maps(&mut self) -> Option<SteerMaps> {
        self.steer.take()
    }

    /// Writes the differences between `desired` and the maps' contents (see [`sync`]).
    pub fn apply(&self, desired: &Desired) -> Result<SyncReport, XdpError> {
        self.nat_maps().apply(desired)
    }

    /// Deletes expired conntrack entries; `now_ns` is CLOCK_MONOTONIC (see [`conntrack`]).
    pub fn sweep_conntrack(
        &self,
        desired: &Desired,
        now_ns: u64,
        timeouts: &ConntrackTimeouts,
    ) -> Result<ConntrackSweep, XdpError> {
        self.nat_maps().sweep_conntrack(desired, now_ns, timeouts)
    }

    fn nat_maps(&self) -> std::sync::MutexGuard<'_, maps::NatMaps> {
        // A panic while holding the lock leaves the maps as consistent as the kernel has them.
        self.nat.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn hooks(&self) -> std::sync::MutexGuard<'_, Hooks> {
        self.hooks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for XdpFront {
    fn drop(&mut self) {
        let hooks = self.hooks.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.left_in_place.load(Ordering::Acquire) {
            // Closing a pinned link's descriptor leaves the link attached; the pins stay for the next router.
            hooks.pins.keep_all();
            tracing::info!(iface = %self.iface, "XDP front left in place for the next router");
            return;
        }
        for link in std::mem::take(&mut hooks.links) {
            let (iface, kind) = (link.iface.clone(), link.kind);
            if let Err(err) = loader::detach(&mut hooks.ebpf, link, self.prog_id) {
                tracing::warn!(%iface, ?kind, %err, "detaching the XDP front");
            }
        }
        tracing::info!(iface = %self.iface, mode = self.mode, "XDP front detached; unpinning");
    }
}

impl std::fmt::Debug for XdpFront {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpFront")
            .field("iface", &self.iface)
            .field("mode", &self.mode)
            .field("prog_id", &self.prog_id)
            .field("pin_dir", &self.pin_dir)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdp_mode_accepts_the_names_iproute2_and_bpftool_use() {
        use clap::Parser as _;
        let cases = [
            ("auto", XdpMode::Auto),
            ("driver", XdpMode::Driver),
            ("native", XdpMode::Driver),
            ("drv", XdpMode::Driver),
            ("xdpdrv", XdpMode::Driver),
            ("skb", XdpMode::Skb),
            ("generic", XdpMode::Skb),
            ("xdpgeneric", XdpMode::Skb),
        ];
        for (name, mode) in cases {
            let settings = crate::config::Settings::try_parse_from(["router", "--xdp-mode", name])
                .unwrap_or_else(|err| panic!("--xdp-mode {name}: {err}"));
            assert_eq!(settings.xdp_mode, mode, "--xdp-mode {name}");
        }
        let default = crate::config::Settings::try_parse_from(["router"]).expect("no flags");
        assert_eq!(default.xdp_mode, XdpMode::Auto);
        for refused in ["hw", "offload", "xdp", ""] {
            assert!(
                crate::config::Settings::try_parse_from(["router", "--xdp-mode", refused]).is_err(),
                "--xdp-mode {refused:?} must be refused"
            );
        }
    }

    #[test]
    fn pod_interfaces_are_a_comma_list_without_the_main_interface_or_repeats() {
        use clap::Parser as _;
        let settings = crate::config::Settings::try_parse_from([
            "router",
            "--xdp-iface",
            "eth0",
            "--xdp-pod-interfaces",
            "cni0,eth0,veth1,cni0,",
        ])
        .expect("flags parse");
        assert_eq!(settings.xdp_pod_interfaces, ["cni0", "eth0", "veth1", "cni0", ""]);
        let opts = XdpOptions {
            iface: "eth0".into(),
            mode: XdpMode::Skb,
            pin_dir: PathBuf::from("/sys/fs/bpf/x"),
            conntrack_size: 16,
            steer: true,
            pod_interfaces: settings.xdp_pod_interfaces,
            handed_over_by: None,
            debug_log: false,
        };
        assert_eq!(loader::pod_interfaces(&opts), ["cni0", "veth1"]);
        let none = crate::config::Settings::try_parse_from(["router"]).expect("no flags");
        assert!(none.xdp_pod_interfaces.is_empty(), "none by default");
    }

    #[test]
    fn front_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<XdpFront>();
    }
}
