//! The XDP group's nodePort runs: per repetition and path (XDP, iptables, direct, in rotated order) a fresh
//! topology and router, then each load through it (new connections, keep-alive, new connections under a SYN flood
//! beside the load).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

use super::super::loadgen::{Wrk, CLIENT_CPU};
use super::super::measure::{wrk_measured, Meter, Watch};
use super::super::plan::XdpPlan;
use super::super::process::{self, on_path};
use super::super::results::xdp::{FloodSent, NodeLoad, NodePath, NodeResult, XdpOutcome};
use super::super::results::Sample;
use super::super::stage::Stage;
use super::flood::{self, Flood};
use super::topology::{self, client_port, NodeRouter, Topology, HOST, NODE, NODE_PORT};

/// Why the nodePort runs stopped.
pub enum Stop {
    /// The router could not attach its XDP front: the group cannot run here.
    NoXdp(String),
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Stop {
    fn from(error: anyhow::Error) -> Stop {
        Stop::Failed(error)
    }
}

/// The nodePort runs of every path and load, `stage.runs` times; failed runs are added to `failed_runs`.
pub fn run(
    stage: &Stage,
    meter: &mut Meter,
    plan: &XdpPlan,
    outcome: &mut XdpOutcome,
    failed_runs: &mut Vec<String>,
) -> Result<(), Stop> {
    let dir = stage.work.join("xdp");
    std::fs::create_dir_all(&dir).context("creating the XDP work dir")?;
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).context("creating the XDP manifest dir")?;
    std::fs::write(manifests.join("bench.yaml"), topology::manifests()).context("writing the XDP manifests")?;
    let www = stage.backends.config.parent().context("nginx dir")?.join("www");
    let mut loads = vec![NodeLoad::NewConnections, NodeLoad::KeepAlive];
    if on_path("hping3") {
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
    for rep in 0..stage.runs {
        let mut paths = NodePath::ALL.to_vec();
        paths.rotate_left(rep as usize % NodePath::ALL.len());
        for path in paths {
            let run_dir = dir.join(format!("{}-{path:?}", rep + 1));
            let topology = Topology::create(&run_dir, &www, &stage.pki)?;
            let router =
                match NodeRouter::start(&stage.binary, &topology, path, plan.mode.as_str(), &manifests, &run_dir) {
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
            meter.proxy_pids = vec![router.pid()];
            for result in &mut outcome.nodeport {
                if !result.load.paths().contains(&path) {
                    continue;
                }
                let flood = (result.load == NodeLoad::UnderFlood).then(|| FloodPlan {
                    target: flood_target,
                    count: flood_count,
                    log: run_dir.join("hping3.log"),
                });
                match measure_node(meter, plan, &topology, &router, path, result.load, rep, flood.as_ref()) {
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
                        failed_runs.push(what);
                    }
                }
            }
            if path == NodePath::Xdp {
                outcome.xdp_status =
                    router.xdp_status(&topology).unwrap_or_else(|error| format!("(router xdp status: {error:#})"));
            }
            meter.proxy_pids.clear();
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
    meter: &mut Meter,
    plan: &XdpPlan,
    topology: &Topology,
    router: &NodeRouter,
    path: NodePath,
    load: NodeLoad,
    rep: u32,
    flood: Option<&FloodPlan>,
) -> anyhow::Result<(Sample, String, Option<FloodSent>)> {
    let url = format!("http://{NODE}:{}/", client_port(path));
    let mut wrk = Wrk::new(url, Some(HOST.into()), plan.connections, plan.duration);
    wrk.close = load != NodeLoad::KeepAlive;
    wrk.netns = Some(topology.client.path());
    // The pod, and the kernel's softirq threads: past a budget the kernel moves the namespaces' packet work
    // (XDP, netfilter, veth) there, and it is this run's, not another process's.
    let mut ours = vec![(topology.nginx_pid(), CLIENT_CPU as usize)];
    ours.extend(process::softirq_threads());
    let watch = Watch { proxy_pid: Some(router.pid()), ours, check_noise: true };
    let load = || wrk_measured(&wrk, rep);
    let command = |command: String| command.replace(&topology.client.path().display().to_string(), "<client>");
    match flood {
        None => {
            let (sample, line, ()) = meter.measure_with(&watch, || Ok(()), load)?;
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
            let (sample, line, running) = meter.measure_with(&watch, start, load)?;
            Ok((sample, command(line), Some(running.finish())))
        }
    }
}

/// Where and how much one flood run sends.
struct FloodPlan {
    target: SocketAddr,
    count: u64,
    log: PathBuf,
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
        sample.machine_us_per_request().unwrap_or(f64::NAN),
        flood.map_or(String::new(), |f| format!("  flood {:.0} SYN/s", f.per_second())),
        if sample.noisy { "  (noisy)" } else { "" },
    );
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
}
