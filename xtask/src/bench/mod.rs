//! `cargo xtask bench`: the router side by side with HAProxy (the OpenShift router's engine, with the configuration
//! the OpenShift router would write) and a direct connection to a backend, following docs/benchmarking.md.
//!
//! One-way flow: `plan` -> run (`runner`, `churn`, `xdp`, over a `stage` and a `measure::Meter`) -> `results`
//! -> `report`. Lower layers never reach up: the report reads only results (and the plan's stated budget), the
//! results and the scenarios are plain values, and the tools below the runner know nothing of it.
//!
//! - `scenario`: contenders, loads, scenarios; `plan`: which scenarios a run does, and its budget;
//! - `stage`: what every group shares (work dir, router binary, pods, certificates, client files);
//! - `runner`: starting a group's proxies and measuring each run; `churn`: route changes under load;
//! - `measure`: one measured run (idle wait, load, CPU readings, noise check and reruns);
//! - `xdp`: the XDP group (nodePort through XDP / iptables / direct in network namespaces, a SYN flood, passthrough
//!   relays); `netns`: the namespaces it makes; `interrupt`: their removal on Ctrl-C;
//! - `results`: what a run found; `report`: the markdown tables and the SVG chart in bench/results/;
//! - `routes`: the route sets of both proxies (`manifest-gen`); `haproxy`: the HAProxy config;
//! - `backend`: nginx as the pods; `proxies`: starting, reloading and probing the proxies; `pki`, `tls`: the
//!   certificates and the TLS clients;
//! - `loadgen`: wrk / h2load command lines and parsing; `machine`: CPU idleness and machine facts;
//! - `process`: the processes the bench starts, /proc readings, probes; `stats`: median/min/max; `numbers`:
//!   number formatting.
//!
//! Core split: the proxy alone on CPU1; wrk/h2load and nginx on CPU0. Contenders run back to back within each
//! repetition (order rotated per repetition), so ratios come from the same minutes of the same machine.

mod backend;
mod beside;
mod churn;
mod h3load;
mod haproxy;
mod hostile;
mod interrupt;
mod loadgen;
mod machine;
mod measure;
mod netns;
mod numbers;
mod pki;
mod plan;
mod process;
mod proxies;
mod report;
mod results;
mod route_certificates;
mod routes;
mod runner;
mod scenario;
mod stage;
mod stats;
mod syslog;
mod tls;
mod xdp;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _};

use crate::cargo::{cargo, workspace_root};
pub use hostile::{run as run_hostile_clients, HostileArgs};
use machine::MachineInfo;
use measure::Meter;
use numbers::thousands;
pub use plan::XdpMode;
use process::on_path;
use proxies::{default_certificate, haproxy_options};
use results::xdp::XdpStatus;
use results::Outcome;
use routes::{write_manifests, Pod, RouteSet};
use stage::Stage;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// One scenario (10 routes, keep-alive, same URL; 2 s per contender, debug build): a smoke test of the bench.
    #[arg(long)]
    pub quick: bool,
    /// Runs per contender and scenario (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Only write the route set (manifests/ for the router, haproxy/ for HAProxy, pods on 127.0.0.11-14:8080) into
    /// this directory and exit: for reading the generated configuration or running a contender by hand.
    #[arg(long, value_name = "DIR")]
    pub generate: Option<PathBuf>,
    /// Routes to generate with --generate.
    #[arg(long, default_value_t = 10)]
    pub routes: usize,
    /// Only these groups (comma-separated; a name or its start before `-`): http-10, http-1000, http-10000,
    /// tls-4000, tls-full-40, tls-full-ecdsa-40, xdp; `http` and `tls` select several.
    #[arg(long, value_delimiter = ',', value_name = "GROUP")]
    pub only: Vec<String>,
    /// How the router attaches its XDP front in the XDP group.
    #[arg(long, value_enum, default_value_t = plan::XdpMode::Skb)]
    pub xdp_mode: plan::XdpMode,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if let Some(dir) = &args.generate {
        return generate(dir, args.routes);
    }
    let started = Instant::now();
    for tool in ["haproxy", "nginx", "wrk", "taskset", "openssl", "curl"] {
        if !on_path(tool) {
            bail!("{tool} is not installed: run `cargo xtask setup`");
        }
    }
    if std::thread::available_parallelism().map_or(0, usize::from) < 2 {
        bail!("the bench pins the proxy to CPU1 and the load to CPU0: it needs 2 CPUs");
    }
    let h2load = on_path("h2load");
    let plan = plan::plan(args.quick, h2load, args.xdp_mode).select(&args.only)?;
    let binary = router_binary(args.quick)?;
    let work = WorkDir::create()?;
    let runs = if args.quick { 1 } else { args.runs.max(1) };
    let mut outcome = Outcome {
        info: MachineInfo::collect(),
        quick: args.quick,
        runs,
        results: Vec::new(),
        lifecycle: Vec::new(),
        churn: Vec::new(),
        setup_commands: Vec::new(),
        reruns: 0,
        idle_timeouts: 0,
        h2load,
        wall: started.elapsed(),
        haproxy_sample: String::new(),
        failed_runs: Vec::new(),
        cookies: None,
        xdp: None,
        only: args.only.clone(),
        random_path_script: loadgen::RANDOM_PATH_SCRIPT.into(),
    };
    let shown_paths = report::ShownPaths::new(&work.path, &workspace_root(), &[binary.as_path()]);
    let uses_h3load = plan.groups.iter().flat_map(|g| &g.scenarios).any(|s| s.load == scenario::Load::EdgeHttp3);
    let h3load = if uses_h3load { build_h3load()? } else { PathBuf::new() };
    let stage = Stage::prepare(&work.path, binary, h3load, args.quick, runs)?;
    let mut meter = Meter::new(&stage);
    outcome.setup_commands.push(stage.pods_command());

    for group in &plan.groups {
        match group.tls {
            None => println!("bench: {} routes", thousands(group.routes)),
            Some(tls) => println!(
                "bench: {} mixed routes (HTTP, edge, reencrypt, passthrough), TLS session resumption {}",
                thousands(group.routes),
                if tls.resumption { "on" } else { "off" }
            ),
        }
        runner::run_group(&stage, &mut meter, group, &mut outcome)?;
    }
    if let Some(xdp) = &plan.xdp {
        println!("bench: XDP group: nodePort in network namespaces ({} mode), passthrough relays", xdp.mode.as_str());
        outcome.xdp = Some(xdp::run(&stage, &mut meter, xdp, &mut outcome.failed_runs));
    }
    outcome.reruns = meter.reruns;
    outcome.idle_timeouts = meter.idle_timeouts;
    outcome.wall = started.elapsed();
    drop(stage);
    drop(work);

    let dir =
        if args.quick { target_dir().join("bench-quick") } else { workspace_root().join("bench").join("results") };
    let (markdown, svg) = report::write(&outcome, &dir, &shown_paths)?;
    if !outcome.results.is_empty() {
        println!("{}", report::summary_table(&outcome));
    }
    let tls = report::tls_table(&outcome);
    if !tls.is_empty() {
        println!("{tls}");
    }
    if let Some(xdp) = &outcome.xdp {
        println!("{}", report::xdp_summary(xdp));
    }
    println!("bench: results in {} and {} ({:.0} s)", markdown.display(), svg.display(), outcome.wall.as_secs_f64());
    if args.quick {
        check_quick(&outcome)?;
    }
    match outcome.xdp.as_ref().map(|xdp| &xdp.status) {
        Some(XdpStatus::Failed(reason)) => bail!("the XDP group failed: {reason}"),
        // Asked for the XDP group alone and it could not run: not a pass.
        Some(XdpStatus::Skipped(reason)) if plan.groups.is_empty() => bail!("the XDP group was skipped: {reason}"),
        _ => Ok(()),
    }
}

/// `--generate DIR`: the route set as manifests and as HAProxy configuration (HTTP on 127.0.0.1:8080, HTTPS on :8443).
fn generate(dir: &Path, count: usize) -> anyhow::Result<()> {
    let pods: Vec<Pod> = backend::POD_IPS
        .iter()
        .enumerate()
        .map(|(i, ip)| Pod { name: format!("bench-pod-{i}"), ip: *ip, port: 8080 })
        .collect();
    let set = RouteSet::http(count, &pods);
    let manifest_dir = dir.join("manifests");
    std::fs::create_dir_all(&manifest_dir).with_context(|| format!("creating {}", manifest_dir.display()))?;
    write_manifests(&set, &manifest_dir.join("routes.yaml"))?;
    let haproxy_dir = dir.join("haproxy");
    let layout = haproxy::Layout {
        dir: haproxy_dir.clone(),
        listen: std::net::Ipv4Addr::LOCALHOST,
        http_port: 8080,
        https_port: 8443,
        default_certificate: default_certificate(&haproxy_dir)?,
    };
    let config = haproxy::write(&set, &layout, &haproxy_options(false))?;
    println!("bench: {count} routes: {} and {}", manifest_dir.display(), config.display());
    Ok(())
}

/// The smoke test fails when a contender served nothing or answered with errors.
fn check_quick(outcome: &Outcome) -> anyhow::Result<()> {
    if let Some(failed) = outcome.failed_runs.first() {
        bail!("bench --quick: a run failed: {failed}");
    }
    for result in &outcome.results {
        for (contender, samples) in &result.samples {
            for sample in samples {
                // A timeout or two on a loaded machine is tolerated; a broken proxy fails most requests.
                let requests = sample.requests_per_second * result.scenario.duration.as_secs_f64();
                if sample.requests_per_second <= 0.0 || sample.errors as f64 > requests / 100.0 {
                    bail!(
                        "bench --quick: {} served {:.0} requests/s with {} errors in {}",
                        contender.label(),
                        sample.requests_per_second,
                        sample.errors,
                        result.scenario.title()
                    );
                }
            }
        }
    }
    Ok(())
}

/// Set to a router binary to bench that one instead of building the workspace's (e.g. while the tree does not build).
const ROUTER_BINARY_ENV: &str = "XTASK_BENCH_ROUTER";

/// The router to bench: `XTASK_BENCH_ROUTER` if set, else the workspace's build.
fn router_binary(quick: bool) -> anyhow::Result<PathBuf> {
    match std::env::var_os(ROUTER_BINARY_ENV) {
        Some(path) => {
            let binary = PathBuf::from(path);
            anyhow::ensure!(binary.is_file(), "{ROUTER_BINARY_ENV}={} is not a file", binary.display());
            println!("bench: router binary from {ROUTER_BINARY_ENV}: {}", binary.display());
            Ok(binary)
        }
        None => build_router(quick),
    }
}

/// Builds the router: release with both crypto providers for measurements, the debug build (already built by
/// `cargo xtask test`, ring only) for the smoke test.
fn build_router(quick: bool) -> anyhow::Result<PathBuf> {
    let mut args = vec!["build", "--package", "router-user", "--bin", "router"];
    if !quick {
        args.extend(["--release", "--features", "aws-lc-rs"]);
    }
    cargo(&args)?;
    let binary = target_dir().join(if quick { "debug" } else { "release" }).join("router");
    if !binary.is_file() {
        bail!("no router binary at {}", binary.display());
    }
    Ok(binary)
}

/// Builds the HTTP/3 load generator (release: its CPU is on the load's core, as wrk's and h2load's).
fn build_h3load() -> anyhow::Result<PathBuf> {
    cargo(&["build", "--release", "--package", "h3load"])?;
    let binary = target_dir().join("release").join("h3load");
    anyhow::ensure!(binary.is_file(), "no h3load binary at {}", binary.display());
    Ok(binary)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"))
}

/// The bench's scratch directory (configs, manifests, logs, sockets), removed at the end.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn create() -> anyhow::Result<WorkDir> {
        let path = std::env::temp_dir().join(format!("xtask-bench-{}", std::process::id()));
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
