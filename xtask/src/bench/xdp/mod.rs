//! The XDP group: the router's nodePort front in network namespaces, and its passthrough relays on loopback.
//!
//! - nodePort (`topology`): new connections/s and keep-alive requests/s from a client namespace to the router in
//!   the node namespace, through the router's XDP front (nodePort DNAT in `xdp_front`, `nat_reverse` on egress),
//!   through kube-proxy-style iptables DNAT, and straight to the router pod's address (no nodePort); then legit new
//!   connections/s under a bounded SYN flood (`flood`, hping3) through XDP and through iptables. A fresh topology
//!   (and router) per path and repetition; paths in rotated order per repetition.
//! - passthrough (`passthrough`): download throughput through the splice(2) relay, the sockmap splice, and direct.
//!
//! The group needs root (namespaces, XDP, iptables, the sockmap); without it, or when the router cannot attach its
//! XDP front, the group is reported as skipped with the reason.

mod flood;
mod passthrough;
pub mod topology;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::interrupt;
use super::loadgen::{Wrk, CLIENT_CPU};
use super::measure::{wrk_measured, Watch};
use super::netns::NetNs;
use super::plan::XdpPlan;
use super::process;
use super::runner::Bench;
use super::scenario::Sample;
use flood::{Flood, FloodSent};
use topology::{NodeRouter, PinDir, Topology, HOST, NODE, NODE_PORT, ROUTER_PORT};

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

    /// The port the client connects to.
    pub fn port(self) -> u16 {
        match self {
            NodePath::Xdp | NodePath::Iptables => NODE_PORT,
            NodePath::Direct => ROUTER_PORT,
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

/// A way the passthrough bytes take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Relay {
    /// wrk straight to the TLS pod.
    Direct,
    /// The router's userspace relay (splice(2) through a pipe).
    Splice,
    /// The router's kernel relay (sk_skb verdict on a SOCKHASH).
    Sockmap,
}

impl Relay {
    pub const ALL: [Relay; 3] = [Relay::Direct, Relay::Splice, Relay::Sockmap];

    pub fn label(self) -> &'static str {
        match self {
            Relay::Direct => "direct",
            Relay::Splice => "router, splice(2) relay",
            Relay::Sockmap => "router, sockmap relay",
        }
    }
}

pub struct PassthroughResult {
    pub samples: BTreeMap<Relay, Vec<Sample>>,
    pub commands: BTreeMap<Relay, String>,
    /// Relays that could not run, and why.
    pub unavailable: BTreeMap<Relay, String>,
    /// The two routers' command lines.
    pub setup: Vec<String>,
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
    pub(super) fn new(plan: &XdpPlan) -> XdpOutcome {
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

/// Why the nodePort runs stopped.
enum Stop {
    /// The router could not attach its XDP front: the group cannot run here.
    NoXdp(String),
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Stop {
    fn from(error: anyhow::Error) -> Stop {
        Stop::Failed(error)
    }
}

/// Why the group cannot run on this machine (none: it can).
fn cannot_run() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, XDP, iptables, the sockmap)".into());
    }
    for tool in ["ip", "nsenter", "iptables", "ethtool", "curl"] {
        if !super::on_path(tool) {
            return Some(format!("{tool} is not installed: run `cargo xtask setup`"));
        }
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    if !mounts.lines().any(|line| line.split_whitespace().nth(1) == Some("/sys/fs/bpf") && line.contains(" bpf ")) {
        return Some("no bpffs at /sys/fs/bpf (the XDP front pins its maps there)".into());
    }
    None
}

impl Bench {
    /// The XDP group. Never fails: a group that cannot run is `Skipped`, one that broke is `Failed`.
    pub fn run_xdp(&mut self, plan: &XdpPlan) -> XdpOutcome {
        let started = Instant::now();
        let extra_before = self.extra_time;
        let mut outcome = XdpOutcome::new(plan);
        if let Some(reason) = cannot_run() {
            println!("bench:   XDP group skipped: {reason}");
            outcome.status = XdpStatus::Skipped(reason);
            return outcome;
        }
        let _interrupt = interrupt::Guard::install();
        NetNs::remove_stale();
        PinDir::remove_stale();
        match self.run_nodeport(plan, &mut outcome) {
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
        self.proxy_pids.clear();
        match self.run_passthrough(plan) {
            Ok(result) => outcome.passthrough = Some(result),
            Err(error) => {
                println!("bench:   passthrough relays: not run: {error:#}");
                outcome.passthrough_skipped = Some(format!("{error:#}"));
            }
        }
        self.proxy_pids.clear();
        outcome.wall = started.elapsed();
        outcome.extra = self.extra_time.saturating_sub(extra_before);
        outcome
    }

    fn run_nodeport(&mut self, plan: &XdpPlan, outcome: &mut XdpOutcome) -> Result<(), Stop> {
        let dir = self.work.join("xdp");
        std::fs::create_dir_all(&dir).context("creating the XDP work dir")?;
        let manifests = dir.join("manifests");
        std::fs::create_dir_all(&manifests).context("creating the XDP manifest dir")?;
        std::fs::write(manifests.join("bench.yaml"), topology::manifests()).context("writing the XDP manifests")?;
        let www = self.backends.config.parent().context("nginx dir")?.join("www");
        let mut loads = vec![NodeLoad::NewConnections, NodeLoad::KeepAlive];
        if super::on_path("hping3") {
            loads.push(NodeLoad::UnderFlood);
        } else {
            outcome.flood_skipped = Some("hping3 is not installed (`cargo xtask setup` installs it)".into());
        }
        outcome.nodeport = loads
            .iter()
            .map(|load| NodeResult {
                load: *load,
                samples: BTreeMap::new(),
                commands: BTreeMap::new(),
                floods: BTreeMap::new(),
            })
            .collect();
        outcome.setup_commands.extend(Topology::commands());
        let rules: Vec<String> =
            topology::iptables_rules().iter().map(|rule| format!("iptables -t nat {}", rule.join(" "))).collect();
        outcome.setup_commands.push(format!("# iptables path, in <node>:\n{}", rules.join("\n")));
        let flood_target = SocketAddr::from((NODE, NODE_PORT));
        let flood_count = flood_count(plan);
        if outcome.flood_skipped.is_none() {
            outcome.setup_commands.push(format!(
                "{}  # beside the flood runs, from {:.1} s before wrk; stopped when wrk ends",
                flood::command_line(flood_target, plan.flood_interval_us, flood_count),
                plan.flood_warmup.as_secs_f64()
            ));
        }
        let mut router_commands = BTreeMap::new();
        let mut xdp_ran = false;
        for rep in 0..self.runs {
            let mut paths = NodePath::ALL.to_vec();
            paths.rotate_left(rep as usize % NodePath::ALL.len());
            for path in paths {
                let run_dir = dir.join(format!("{}-{path:?}", rep + 1));
                let topology = Topology::create(&run_dir, &www)?;
                let router =
                    match NodeRouter::start(&self.binary, &topology, path, plan.mode.as_str(), &manifests, &run_dir) {
                        Ok(router) => router,
                        Err(error) if path == NodePath::Xdp && !xdp_ran => {
                            return Err(Stop::NoXdp(format!(
                                "the router could not attach its XDP front ({} mode) in a network namespace: {error:#}",
                                plan.mode.as_str()
                            )));
                        }
                        Err(error) => return Err(Stop::Failed(error)),
                    };
                xdp_ran |= path == NodePath::Xdp;
                router_commands.entry(path).or_insert_with(|| router.command_line());
                self.proxy_pids = vec![router.pid()];
                for result in &mut outcome.nodeport {
                    if !result.load.paths().contains(&path) {
                        continue;
                    }
                    let flood = (result.load == NodeLoad::UnderFlood).then(|| FloodPlan {
                        target: flood_target,
                        count: flood_count,
                        log: run_dir.join("hping3.log"),
                    });
                    match self.measure_node(plan, &topology, &router, path, result.load, rep, flood.as_ref()) {
                        Ok((sample, command, sent)) => {
                            print_run(result.load, path, rep, &sample, sent);
                            result.commands.entry(path).or_insert(command);
                            result.samples.entry(path).or_default().push(sample);
                            if let Some(sent) = sent {
                                result.floods.entry(path).or_default().push(sent);
                            }
                        }
                        Err(error) => {
                            let what = format!("{} / {} run {}: {error:#}", result.load.title(), path.label(), rep + 1);
                            println!("bench:   {what}");
                            self.failed_runs.push(what);
                        }
                    }
                }
                if path == NodePath::Xdp {
                    outcome.xdp_status =
                        router.xdp_status(&topology).unwrap_or_else(|error| format!("(router xdp status: {error:#})"));
                }
                self.proxy_pids.clear();
                drop(router);
                drop(topology);
            }
        }
        for (path, command) in router_commands {
            outcome.setup_commands.push(format!("# {} path:\n{command}", path.label()));
        }
        Ok(())
    }

    /// One run of `load` through `path`: wrk from the client namespace, the router's CPU, and the flood beside it
    /// when there is one.
    #[allow(clippy::too_many_arguments)]
    fn measure_node(
        &mut self,
        plan: &XdpPlan,
        topology: &Topology,
        router: &NodeRouter,
        path: NodePath,
        load: NodeLoad,
        rep: u32,
        flood: Option<&FloodPlan>,
    ) -> anyhow::Result<(Sample, String, Option<FloodSent>)> {
        let url = format!("http://{NODE}:{}/", path.port());
        let mut wrk = Wrk::new(url, Some(HOST.into()), plan.connections, plan.duration);
        wrk.close = load != NodeLoad::KeepAlive;
        wrk.netns = Some(topology.client.path());
        // The pod, and the kernel's softirq threads: past a budget the kernel moves the namespaces' packet work
        // (XDP, netfilter, veth) there, and it is this run's, not another process's.
        let mut ours = vec![(topology.nginx_pid(), CLIENT_CPU as usize)];
        ours.extend(softirq_threads());
        let watch = Watch { proxy_pid: Some(router.pid()), ours, check_noise: true };
        let load = || wrk_measured(&wrk, rep);
        let command = |command: String| command.replace(&topology.client.path().display().to_string(), "<client>");
        match flood {
            None => {
                let (sample, line, ()) = self.measure_with(&watch, || Ok(()), load)?;
                Ok((sample, command(line), None))
            }
            Some(flood) => {
                let start = || {
                    Flood::start(
                        &topology.client,
                        flood.target,
                        plan.flood_interval_us,
                        flood.count,
                        plan.flood_warmup,
                        &flood.log,
                    )
                };
                let (sample, line, running) = self.measure_with(&watch, start, load)?;
                Ok((sample, command(line), Some(running.finish())))
            }
        }
    }
}

/// Where and how much one flood run sends.
struct FloodPlan {
    target: SocketAddr,
    count: u64,
    log: std::path::PathBuf,
}

/// The kernel's `ksoftirqd/<cpu>` threads and their CPU.
pub(super) fn softirq_threads() -> Vec<(u32, usize)> {
    process::pids_named("ksoftirqd/")
        .into_iter()
        .filter_map(|(pid, name)| Some((pid, name.strip_prefix("ksoftirqd/")?.parse().ok()?)))
        .collect()
}

/// SYNs one flood may send at most: its rate over the warm-up, the run and wrk's slack.
fn flood_count(plan: &XdpPlan) -> u64 {
    let seconds = plan.flood_warmup + plan.duration + Duration::from_secs(2);
    (seconds.as_secs_f64() * 1e6 / f64::from(plan.flood_interval_us.max(1))) as u64
}

fn print_run(load: NodeLoad, path: NodePath, rep: u32, sample: &Sample, flood: Option<FloodSent>) {
    println!(
        "bench:   {:<48} {:<17} run {}: {:>9.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  {}  machine {:.1} us/req{}{}",
        load.title(),
        path.label(),
        rep + 1,
        sample.requests_per_second,
        sample.p50_ms,
        sample.p99_ms,
        sample.us_per_request.map_or(String::new(), |us| format!("{us:.1} us/req")),
        machine_us_per_request(sample).unwrap_or(f64::NAN),
        flood.map_or(String::new(), |f| format!("  flood {:.0} SYN/s", f.per_second())),
        if sample.noisy { "  (noisy)" } else { "" },
    );
}

/// The whole machine's CPU (interrupt context included) per request, microseconds.
pub fn machine_us_per_request(sample: &Sample) -> Option<f64> {
    let cpu = sample.machine_cpu_percent? / 100.0;
    (sample.requests_per_second > 0.0).then(|| cpu * 1e6 / sample.requests_per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flood_is_bounded_by_count() {
        let plan = XdpPlan::default();
        let count = flood_count(&plan);
        let seconds = (plan.flood_warmup + plan.duration).as_secs_f64() + 2.0;
        assert_eq!(count, (seconds * 1e6 / f64::from(plan.flood_interval_us)) as u64);
        assert!(count < 1_000_000, "{count}");
    }

    #[test]
    fn every_load_has_paths_and_the_flood_only_nodeports() {
        assert_eq!(NodeLoad::UnderFlood.paths(), &[NodePath::Xdp, NodePath::Iptables]);
        assert_eq!(NodeLoad::KeepAlive.paths().len(), 3);
    }
}
