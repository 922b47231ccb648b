//! Passthrough download through the router's two relays, on loopback beside a direct connection: the userspace
//! splice(2) relay (the default) and the kernel sockmap splice (`ROUTER_PASSTHROUGH_SOCKMAP=true`, an `sk_skb`
//! program on a SOCKHASH). Two routers on a small mixed route set (one route of each kind), both on CPU1; wrk over
//! TLS downloads the 64 MiB file from the nginx TLS pod through the passthrough route, as the TLS group's
//! passthrough scenario does. The sockmap's work runs in softirq and kworker context, charged to no router
//! process: the machine's CPU per GiB (interrupt context included) is the figure that compares the relays.

use std::collections::BTreeMap;

use anyhow::Context as _;

use super::super::measure::{Endpoint, Meter};
use super::super::pki::CertKey;
use super::super::plan::XdpPlan;
use super::super::process::softirq_threads;
use super::super::proxies::{Router, RouterRun, SOCKMAP_LOADED};
use super::super::results::xdp::{PassthroughResult, Relay};
use super::super::results::Sample;
use super::super::routes::{write_manifests, RouteSet, Termination};
use super::super::scenario::{Load, Scenario};
use super::super::stage::Stage;
use super::super::tls::https_get;

/// Runs the passthrough download with each relay, `stage.runs` times, order rotated per repetition; failed runs
/// are added to `failed_runs`.
pub fn run(
    stage: &Stage,
    meter: &mut Meter,
    plan: &XdpPlan,
    failed_runs: &mut Vec<String>,
) -> anyhow::Result<PassthroughResult> {
    let set = RouteSet::mixed(
        1,
        &stage.backends.pods,
        &stage.backends.tls_pods,
        &stage.pki.route_tls(CertKey::Rsa2048, false),
        &stage.pki.route_tls(CertKey::Rsa2048, true),
    );
    let host = set.target_of(Termination::Passthrough).context("no passthrough route")?.host.clone();
    let dir = stage.work.join("xdp-passthrough");
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).context("passthrough manifest dir")?;
    write_manifests(&set, &manifests.join("routes.yaml"))?;
    let start = |sockmap: bool, name: &str| {
        let run = RouterRun { passthrough_sockmap: sockmap, ..RouterRun::default() };
        Router::start(&stage.binary, &manifests, &set, &dir.join(name), &stage.certificate, run)
            .map(|(router, _)| router)
    };
    let splice = start(false, "router-splice.log").context("starting the router (splice relay)")?;
    let sockmap = start(true, "router-sockmap.log").context("starting the router (sockmap relay)")?;
    let mut result = PassthroughResult {
        samples: BTreeMap::new(),
        commands: BTreeMap::new(),
        unavailable: BTreeMap::new(),
        setup: vec![splice.command_line(), sockmap.command_line()],
    };
    // The splice logs one line when it loaded; without it the router relays in userspace.
    let log = std::fs::read_to_string(dir.join("router-sockmap.log")).unwrap_or_default();
    if !log.contains(SOCKMAP_LOADED) {
        let line = log.lines().find(|l| l.contains("sockmap")).unwrap_or("no sockmap line in its log");
        result.unavailable.insert(Relay::Sockmap, format!("the splice did not load: {}", line.trim()));
    }
    meter.proxy_pids = vec![splice.proc.pid(), sockmap.proc.pid()];
    let endpoint_of = |relay: Relay| match relay {
        Relay::Direct => Endpoint { addr: stage.backends.first_tls(false), host: Some(host.clone()), proxy_pid: None },
        Relay::Splice => {
            Endpoint { addr: splice.https_addr(), host: Some(host.clone()), proxy_pid: Some(splice.proc.pid()) }
        }
        Relay::Sockmap => {
            Endpoint { addr: sockmap.https_addr(), host: Some(host.clone()), proxy_pid: Some(sockmap.proc.pid()) }
        }
    };
    let endpoints: BTreeMap<Relay, Endpoint> = Relay::ALL.iter().map(|relay| (*relay, endpoint_of(*relay))).collect();
    for (relay, at) in &endpoints {
        let relay = *relay;
        if result.unavailable.contains_key(&relay) {
            continue;
        }
        match https_get(at.addr, &host, false, &stage.pki.ca, &stage.client_config) {
            Ok((200, _)) => {}
            Ok((status, _)) => {
                result.unavailable.insert(relay, format!("GET https://{host}/ at {} answered {status}", at.addr));
            }
            Err(error) => {
                result.unavailable.insert(relay, format!("GET https://{host}/ at {}: {error:#}", at.addr));
            }
        }
    }
    let scenario = Scenario {
        load: Load::PassthroughBulk,
        routes: set.routes.len(),
        contenders: Vec::new(),
        duration: plan.passthrough_duration,
        connections: plan.passthrough_connections,
        access_log: false,
        threads: 1,
    };
    for rep in 0..stage.runs {
        let mut order = Relay::ALL.to_vec();
        order.rotate_left(rep as usize % Relay::ALL.len());
        for relay in order {
            if result.unavailable.contains_key(&relay) {
                continue;
            }
            // The kernel's softirq threads move the loopback bytes: theirs is the run's CPU. The sockmap's
            // kworker time cannot be told from other processes': no noise check there.
            let ours = softirq_threads();
            let measured = meter.measure_load(stage, &scenario, &endpoints[&relay], rep, ours, relay != Relay::Sockmap);
            match measured {
                Ok((sample, command)) => {
                    print_run(relay, rep, &sample);
                    result.commands.entry(relay).or_insert(command);
                    result.samples.entry(relay).or_default().push(sample);
                }
                Err(error) => {
                    let what = format!("passthrough download / {} run {}: {error:#}", relay.label(), rep + 1);
                    println!("bench:   {what}");
                    failed_runs.push(what);
                }
            }
        }
    }
    meter.proxy_pids.clear();
    Ok(result)
}

fn print_run(relay: Relay, rep: u32, sample: &Sample) {
    println!(
        "bench:   passthrough download, 64 MiB            {:<26} run {}: {:>7.0} MiB/s  machine CPU {:>4.0}%{}",
        relay.label(),
        rep + 1,
        sample.bytes_per_second / 1048576.0,
        sample.machine_cpu_percent.unwrap_or(0.0),
        if sample.noisy { "  (noisy)" } else { "" },
    );
}
