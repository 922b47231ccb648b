//! The XDP group's results, as plain values: the nodePort paths and loads with their runs, what each SYN flood
//! sent, the passthrough relays' runs, and whether the group ran, was skipped or failed.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::plan::XdpPlan;
use super::Sample;

/// A way from the client namespace to the router in the node namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodePath {
    /// nodeIP:30080, DNAT by the router's XDP front.
    Xdp,
    /// nodeIP:30080, DNAT by kube-proxy-style iptables rules (the router without XDP).
    Iptables,
    /// nodeIP:80, the router pod's own address: no nodePort, no DNAT (the router without XDP).
    Direct,
}

impl NodePath {
    pub const ALL: [NodePath; 3] = [NodePath::Xdp, NodePath::Iptables, NodePath::Direct];

    pub fn label(self) -> &'static str {
        match self {
            NodePath::Xdp => "XDP nodePort",
            NodePath::Iptables => "iptables nodePort",
            NodePath::Direct => "router pod direct",
        }
    }
}

/// The loads of the nodePort scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeLoad {
    /// wrk, `Connection: close`: one TCP connection (and one nodePort translation setup) per request.
    NewConnections,
    /// wrk, keep-alive.
    KeepAlive,
    /// As `NewConnections`, with a SYN flood at the nodePort from the same client namespace.
    UnderFlood,
}

impl NodeLoad {
    pub fn title(self) -> &'static str {
        match self {
            NodeLoad::NewConnections => "nodePort new connections",
            NodeLoad::KeepAlive => "nodePort keep-alive",
            NodeLoad::UnderFlood => "nodePort new connections under SYN flood",
        }
    }

    /// The paths the load runs on (the flood only through the nodePort).
    pub fn paths(self) -> &'static [NodePath] {
        match self {
            NodeLoad::UnderFlood => &[NodePath::Xdp, NodePath::Iptables],
            _ => &NodePath::ALL,
        }
    }
}

/// The runs of one nodePort load.
pub struct NodeResult {
    pub load: NodeLoad,
    pub samples: BTreeMap<NodePath, Vec<Sample>>,
    pub commands: BTreeMap<NodePath, String>,
    /// Flood runs: what the flood sent, per path, in run order.
    pub floods: BTreeMap<NodePath, Vec<FloodSent>>,
}

/// A way the passthrough bytes take, in the passthrough topology (client -> node -> TLS pod namespaces).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relay {
    /// The router's XDP front steers the flow to the pod (`--xdp-steer-passthrough`): no router socket carries it.
    Steer,
    /// The router's userspace relay (splice(2) through a pipe).
    Splice,
    /// The router's kernel relay (sk_skb verdict on a SOCKHASH).
    Sockmap,
    /// wrk straight to the TLS pod, routed by the node namespace (the same two veth hops).
    Direct,
}

impl Relay {
    pub const ALL: [Relay; 4] = [Relay::Steer, Relay::Splice, Relay::Sockmap, Relay::Direct];

    pub fn label(self) -> &'static str {
        match self {
            Relay::Steer => "router, XDP steering",
            Relay::Splice => "router, splice(2) relay",
            Relay::Sockmap => "router, sockmap relay",
            Relay::Direct => "direct (routed by the node)",
        }
    }
}

/// The loads of the passthrough runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PassLoad {
    /// wrk over TLS, keep-alive, the 64 MiB file.
    Download,
    /// wrk over TLS, `Connection: close`, the 1 KiB body: a new passthrough connection (resumed TLS session) per
    /// request.
    NewConnections,
    /// wrk over TLS, one keep-alive connection, the 1 KiB body: latency of a small request on an open connection.
    OpenConnection,
}

impl PassLoad {
    pub const ALL: [PassLoad; 3] = [PassLoad::Download, PassLoad::NewConnections, PassLoad::OpenConnection];

    pub fn title(self) -> &'static str {
        match self {
            PassLoad::Download => "passthrough download, 64 MiB",
            PassLoad::NewConnections => "passthrough new connections",
            PassLoad::OpenConnection => "passthrough small request, open connection",
        }
    }
}

/// The passthrough runs: samples per load and relay.
pub struct PassthroughResult {
    pub samples: BTreeMap<(PassLoad, Relay), Vec<Sample>>,
    pub commands: BTreeMap<(PassLoad, Relay), String>,
    /// Relays that could not run, and why.
    pub unavailable: BTreeMap<Relay, String>,
    /// Steering runs whose flows were not steered (the steered count did not move, or the userspace relay carried
    /// bytes): `load / run: why`. Such a run's sample is kept out of `samples`.
    pub not_steered: Vec<String>,
    /// Per steering run: steered connections, fallbacks and relayed bytes the router's /metrics counted.
    pub steer_counts: Vec<String>,
    /// `router xdp status` of the last steering router after its runs.
    pub steer_status: String,
    /// The routers' command lines.
    pub setup: Vec<String>,
}

impl PassthroughResult {
    pub fn of(&self, load: PassLoad, relay: Relay) -> Option<&Vec<Sample>> {
        self.samples.get(&(load, relay))
    }
}

/// Whether the group ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XdpStatus {
    Ran,
    /// It could not run here (not root, a tool missing, no XDP): not a pass.
    Skipped(String),
    /// It started and broke.
    Failed(String),
}

pub struct XdpOutcome {
    pub status: XdpStatus,
    pub plan: XdpPlan,
    pub nodeport: Vec<NodeResult>,
    /// Why the flood scenario did not run (hping3 missing).
    pub flood_skipped: Option<String>,
    pub passthrough: Option<PassthroughResult>,
    /// Why the passthrough runs did not happen.
    pub passthrough_skipped: Option<String>,
    /// `router xdp status` after the last XDP path's runs.
    pub xdp_status: String,
    /// Topology, iptables rules, routers, flood: how the runs were set up.
    pub setup_commands: Vec<String>,
    pub wall: Duration,
    /// Part of `wall` spent waiting for idle CPUs and rerunning noisy runs (the bench's extra-time budget).
    pub extra: Duration,
}

impl XdpOutcome {
    pub fn new(plan: &XdpPlan) -> XdpOutcome {
        XdpOutcome {
            status: XdpStatus::Ran,
            plan: plan.clone(),
            nodeport: Vec::new(),
            flood_skipped: None,
            passthrough: None,
            passthrough_skipped: None,
            xdp_status: String::new(),
            setup_commands: Vec::new(),
            wall: Duration::ZERO,
            extra: Duration::ZERO,
        }
    }
}

/// What one SYN flood sent.
#[derive(Clone, Copy, Debug)]
pub struct FloodSent {
    pub packets: u64,
    pub seconds: f64,
}

impl FloodSent {
    pub fn per_second(&self) -> f64 {
        self.packets as f64 / self.seconds.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_has_paths_and_the_flood_only_nodeports() {
        assert_eq!(NodeLoad::UnderFlood.paths(), &[NodePath::Xdp, NodePath::Iptables]);
        assert_eq!(NodeLoad::KeepAlive.paths().len(), 3);
    }
}
