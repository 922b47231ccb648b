//! Passthrough in the network-namespace topology, four contenders per repetition (order rotated), each in a fresh
//! topology: XDP steering (`--xdp-steer-passthrough`: `xdp_front` on the node's client-facing veth and
//! `steer_ingress` on its pod-facing one carry the flow between client and pod), the router's splice(2) relay (the default), its sockmap relay
//! (`ROUTER_PASSTHROUGH_SOCKMAP=true`), and a direct connection from the client to the pod's TLS port, routed by
//! the node namespace (the same two veth hops). Per contender three wrk runs over TLS from the client namespace
//! (`PassLoad`): the 64 MiB download, new connections (`Connection: close`), and one open connection's small
//! requests (latency). A steering run counts only when the router's /metrics say its flows were steered
//! (`router_xdp_steered_connections_total` moved, `router_passthrough_bytes_total` did not).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use super::super::backend::HUGE_PATH;
use super::super::loadgen::{Wrk, CLIENT_CPU};
use super::super::measure::{wrk_measured, Meter, Watch};
use super::super::plan::XdpPlan;
use super::super::process::softirq_threads;
use super::super::results::xdp::{PassLoad, PassthroughResult, Relay};
use super::super::results::Sample;
use super::super::stage::Stage;
use super::super::tls::write_connect_script;
use super::pass_router::{self, PassRouter};
use super::topology::{Topology, NODE, PASS_HOST, POD, POD_TLS_PORT, ROUTER_HTTPS_PORT};

/// wrk's response timeout for the 64 MiB body (its default, 2 s, is too short on a shared core).
const BULK_TIMEOUT: Duration = Duration::from_secs(30);
/// wrk -c of the new-connection runs.
const NEW_CONNECTION_CLIENTS: u32 = 32;

/// Runs every contender and load, `stage.runs` times; failed runs are added to `failed_runs`.
pub fn run(
    stage: &Stage,
    meter: &mut Meter,
    plan: &XdpPlan,
    failed_runs: &mut Vec<String>,
) -> anyhow::Result<PassthroughResult> {
    let dir = stage.work.join("xdp-passthrough");
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).context("passthrough manifest dir")?;
    std::fs::write(manifests.join("bench.yaml"), pass_router::manifests()).context("passthrough manifests")?;
    let www = stage.backends.config.parent().context("nginx dir")?.join("www");
    let scripts: BTreeMap<Relay, PathBuf> = Relay::ALL
        .iter()
        .map(|relay| Ok((*relay, write_connect_script(&dir, target(*relay).0.into())?)))
        .collect::<anyhow::Result<_>>()?;
    let mut result = PassthroughResult {
        samples: BTreeMap::new(),
        commands: BTreeMap::new(),
        unavailable: BTreeMap::new(),
        not_steered: Vec::new(),
        steer_counts: Vec::new(),
        steer_status: String::new(),
        setup: vec![format!("# passthrough manifests:\n{}", pass_router::manifests().trim_end())],
    };
    let mut router_commands = BTreeMap::new();
    for rep in 0..stage.runs {
        let mut order = Relay::ALL.to_vec();
        order.rotate_left(rep as usize % Relay::ALL.len());
        for relay in order {
            if result.unavailable.contains_key(&relay) {
                continue;
            }
            let run_dir = dir.join(format!("{}-{relay:?}", rep + 1));
            let topology = Topology::create(&run_dir, &www, &stage.pki)?;
            let router = match relay {
                Relay::Direct => None,
                _ => {
                    let started = PassRouter::start(
                        &stage.binary,
                        &topology,
                        relay,
                        plan.mode.as_str(),
                        &stage.certificate,
                        &manifests,
                        &run_dir,
                    );
                    match started {
                        Ok(router) => Some(router),
                        Err(error) => {
                            println!("bench:   passthrough / {}: not available: {error:#}", relay.label());
                            result.unavailable.insert(relay, format!("{error:#}"));
                            continue;
                        }
                    }
                }
            };
            if let Some(router) = &router {
                router_commands.entry(relay).or_insert_with(|| router.command_line().to_string());
            }
            meter.proxy_pids = router.iter().map(PassRouter::pid).collect();
            for load in PassLoad::ALL {
                let wrk = wrk_for(plan, &topology, relay, load, &scripts[&relay], stage);
                let before = router.as_ref().filter(|_| relay == Relay::Steer).map(|r| r.counts(&topology));
                let measured = measure(meter, &topology, router.as_ref(), relay, &wrk, rep);
                let what = format!("{} / {} run {}", load.title(), relay.label(), rep + 1);
                let (sample, command) = match measured {
                    Ok(measured) => measured,
                    Err(error) => {
                        println!("bench:   {what}: {error:#}");
                        failed_runs.push(format!("{what}: {error:#}"));
                        continue;
                    }
                };
                if let (Some(router), Some(before)) = (&router, before) {
                    let moved = before.and_then(|before| router.counts(&topology).map(|now| now.since(&before)));
                    let why = match &moved {
                        Ok(moved) => {
                            result.steer_counts.push(format!(
                                "{what}: {} steered, {} fallbacks, {} bytes relayed in userspace ({:.0} requests)",
                                moved.steered,
                                moved.fallbacks,
                                moved.relayed_bytes,
                                sample.requests_per_second * wrk.duration.as_secs_f64()
                            ));
                            moved.not_steered()
                        }
                        Err(error) => Some(format!("{error:#}")),
                    };
                    if let Some(why) = why {
                        println!("bench:   {what}: NOT STEERED: {why}");
                        result.not_steered.push(format!("{what}: {why}"));
                        failed_runs.push(format!("{what}: not steered: {why}"));
                        continue;
                    }
                }
                print_run(load, relay, rep, &sample);
                result.commands.entry((load, relay)).or_insert(command);
                result.samples.entry((load, relay)).or_default().push(sample);
            }
            if let Some(router) = router.as_ref().filter(|_| relay == Relay::Steer) {
                result.steer_status =
                    router.xdp_status(&topology).unwrap_or_else(|error| format!("(router xdp status: {error:#})\n"));
            }
            meter.proxy_pids.clear();
            drop(router);
            drop(topology);
        }
    }
    result.setup.extend(router_commands.into_iter().map(|(relay, command)| format!("# {}:\n{command}", relay.label())));
    Ok(result)
}

/// Where `relay`'s client connects: the router's HTTPS port on the node address, or the pod's TLS port.
fn target(relay: Relay) -> (Ipv4Addr, u16) {
    match relay {
        Relay::Direct => (POD, POD_TLS_PORT),
        _ => (NODE, ROUTER_HTTPS_PORT),
    }
}

/// The wrk run of `load` against `relay`, from the client namespace: the URL names the route (SNI and Host), the
/// connect script the address.
fn wrk_for(plan: &XdpPlan, topology: &Topology, relay: Relay, load: PassLoad, script: &Path, stage: &Stage) -> Wrk {
    let (_, port) = target(relay);
    let (path, connections, duration) = match load {
        PassLoad::Download => (HUGE_PATH, plan.passthrough_connections, plan.passthrough_duration),
        PassLoad::NewConnections => ("/", NEW_CONNECTION_CLIENTS, plan.duration),
        PassLoad::OpenConnection => ("/", 1, plan.duration),
    };
    let mut wrk = Wrk::new(format!("https://{PASS_HOST}:{port}{path}"), Some(PASS_HOST.into()), connections, duration);
    wrk.script = Some(script.to_path_buf());
    wrk.close = load == PassLoad::NewConnections;
    wrk.timeout = (load == PassLoad::Download).then_some(BULK_TIMEOUT);
    wrk.env = vec![("OPENSSL_CONF".into(), stage.client_config.display().to_string())];
    wrk.netns = Some(topology.client.path());
    wrk
}

/// One measured run: the router's CPU, the machine's, the pod's and the softirq threads' as the run's own. The
/// sockmap's kworker time cannot be told from other processes': no noise check there.
fn measure(
    meter: &mut Meter,
    topology: &Topology,
    router: Option<&PassRouter>,
    relay: Relay,
    wrk: &Wrk,
    rep: u32,
) -> anyhow::Result<(Sample, String)> {
    let mut ours = vec![(topology.nginx_pid(), CLIENT_CPU as usize)];
    ours.extend(softirq_threads());
    let watch = Watch { proxy_pid: router.map(PassRouter::pid), ours, check_noise: relay != Relay::Sockmap };
    let (sample, line, ()) = meter.measure_with(&watch, || Ok(()), || wrk_measured(wrk, rep))?;
    let line = line.replace(&topology.client.path().display().to_string(), "<client>");
    Ok((sample, line))
}

fn print_run(load: PassLoad, relay: Relay, rep: u32, sample: &Sample) {
    let figure = match load {
        PassLoad::Download => format!("{:>7.0} MiB/s", sample.bytes_per_second / 1048576.0),
        _ => format!("{:>7.0} req/s  p99 {:.2} ms", sample.requests_per_second, sample.p99_ms),
    };
    println!(
        "bench:   {:<44} {:<28} run {}: {figure}  router {:.1}%  machine {:.0}%{}",
        load.title(),
        relay.label(),
        rep + 1,
        sample.cpu_percent.unwrap_or(0.0),
        sample.machine_cpu_percent.unwrap_or(0.0),
        if sample.noisy { "  (noisy)" } else { "" },
    );
}
