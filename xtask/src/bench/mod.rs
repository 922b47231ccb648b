//! `cargo xtask bench`: the router side by side with HAProxy (the OpenShift router's engine, with the configuration
//! the OpenShift router would write) and a direct connection to a backend, following ../shared/BENCH-METHOD.md.
//!
//! - `scenario`: contenders, loads, scenarios, samples and the outcome; `plan`: which scenarios a run does;
//! - `runner`: starting a group's proxies and measuring each run; `churn`: route changes under load;
//! - `routes`: one route generator for both proxies (manifests for the router); `haproxy`: the HAProxy config;
//! - `backend`: nginx as the pods; `proxies`: starting, reloading and probing the proxies;
//! - `loadgen`: wrk / h2load command lines and parsing; `machine`: CPU idleness and machine facts;
//! - `process`: the processes the bench starts, /proc readings, probes; `stats`: median/min/max;
//! - `xdp`: the XDP group (nodePort through XDP / iptables / direct in network namespaces, a SYN flood, passthrough
//!   relays); `netns`: the namespaces it makes; `interrupt`: their removal on Ctrl-C;
//! - `report`: the markdown tables and the SVG chart in bench/results/.
//!
//! Core split: the proxy alone on CPU1; wrk/h2load and nginx on CPU0. Contenders run back to back within each
//! repetition (order rotated per repetition), so ratios come from the same minutes of the same machine.

mod backend;
mod churn;
mod haproxy;
mod interrupt;
mod loadgen;
mod machine;
mod measure;
mod netns;
mod pki;
mod plan;
mod process;
mod proxies;
mod report;
mod routes;
mod runner;
mod scenario;
mod stats;
mod tls;
mod xdp;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::cargo::{cargo, workspace_root};
use backend::Backends;
use loadgen::write_random_path_script;
use machine::MachineInfo;
use pki::Pki;
pub use plan::XdpMode;
use process::clock_ticks_per_second;
use proxies::default_certificate;
use routes::RouteSet;
use runner::{haproxy_options, Bench};
use scenario::Outcome;

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
    /// tls-4000, tls-full-40, xdp; `http` and `tls` select several.
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
    let info = MachineInfo::collect();
    let pki = Pki::create(&work.path.join("pki"))?;
    let backends = Backends::start(&work.path.join("nginx"), &pki)?;
    let script = write_random_path_script(&work.path)?;
    let client_config = tls::write_client_config(&work.path)?;
    let mut connect_scripts = std::collections::BTreeMap::new();
    for ip in [std::net::Ipv4Addr::LOCALHOST, backends.tls_pods[0].ip] {
        connect_scripts.insert(ip.into(), tls::write_connect_script(&work.path, ip.into())?);
    }
    let mut bench = Bench {
        work: work.path.clone(),
        binary,
        backends,
        certificate: pki.default_pem.clone(),
        pki,
        client_config,
        connect_scripts,
        script,
        hz: clock_ticks_per_second(),
        quick: args.quick,
        runs: if args.quick { 1 } else { args.runs.max(1) },
        results: Vec::new(),
        lifecycle: Vec::new(),
        churn: Vec::new(),
        setup_commands: Vec::new(),
        reruns: 0,
        idle_timeouts: 0,
        haproxy_sample: String::new(),
        failed_runs: Vec::new(),
        cookies: None,
        extra_time: Duration::ZERO,
        proxy_pids: Vec::new(),
    };
    bench.setup_commands.push(format!(
        "taskset -c {} nginx -p {dir} -e {dir}/error.log -c {}  # pods: {}; TLS on :{}, without resumption on :{}",
        loadgen::CLIENT_CPU,
        bench.backends.config.display(),
        bench.backends.pods.iter().map(|p| format!("{}:{}", p.ip, p.port)).collect::<Vec<_>>().join(" "),
        bench.backends.tls_pods[0].port,
        bench.backends.tls_full_port,
        dir = bench.backends.config.parent().map_or(String::new(), |d| d.display().to_string()),
    ));

    for group in &plan.groups {
        match group.tls {
            None => println!("bench: {} routes", report::thousands(group.routes)),
            Some(tls) => println!(
                "bench: {} mixed routes (HTTP, edge, reencrypt, passthrough), TLS session resumption {}",
                report::thousands(group.routes),
                if tls.resumption { "on" } else { "off" }
            ),
        }
        bench.run_group(group)?;
    }
    let xdp = plan.xdp.as_ref().map(|xdp| {
        println!("bench: XDP group: nodePort in network namespaces ({} mode), passthrough relays", xdp.mode.as_str());
        bench.run_xdp(xdp)
    });

    let outcome = Outcome {
        info,
        quick: bench.quick,
        runs: bench.runs,
        results: std::mem::take(&mut bench.results),
        lifecycle: std::mem::take(&mut bench.lifecycle),
        churn: std::mem::take(&mut bench.churn),
        setup_commands: std::mem::take(&mut bench.setup_commands),
        reruns: bench.reruns,
        idle_timeouts: bench.idle_timeouts,
        h2load,
        wall: started.elapsed(),
        haproxy_sample: std::mem::take(&mut bench.haproxy_sample),
        failed_runs: std::mem::take(&mut bench.failed_runs),
        cookies: bench.cookies,
        xdp,
        only: args.only.clone(),
    };
    drop(bench);
    drop(work);

    let dir =
        if args.quick { target_dir().join("bench-quick") } else { workspace_root().join("bench").join("results") };
    let (markdown, svg) = report::write(&outcome, &dir)?;
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
        Some(xdp::XdpStatus::Failed(reason)) => bail!("the XDP group failed: {reason}"),
        // Asked for the XDP group alone and it could not run: not a pass.
        Some(xdp::XdpStatus::Skipped(reason)) if plan.groups.is_empty() => bail!("the XDP group was skipped: {reason}"),
        _ => Ok(()),
    }
}

/// `--generate DIR`: the route set as manifests and as HAProxy configuration (HTTP on 127.0.0.1:8080, HTTPS on :8443).
fn generate(dir: &Path, count: usize) -> anyhow::Result<()> {
    let pods: Vec<routes::Pod> = backend::POD_IPS
        .iter()
        .enumerate()
        .map(|(i, ip)| routes::Pod { name: format!("bench-pod-{i}"), ip: *ip, port: 8080 })
        .collect();
    let set = RouteSet::http(count, &pods);
    let manifest_dir = dir.join("manifests");
    std::fs::create_dir_all(&manifest_dir).with_context(|| format!("creating {}", manifest_dir.display()))?;
    set.write_manifests(&manifest_dir.join("routes.yaml"))?;
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

/// Builds the router: release for measurements, the debug build (already built by `cargo xtask test`) for the
/// smoke test.
fn build_router(quick: bool) -> anyhow::Result<PathBuf> {
    let mut args = vec!["build", "--package", "router-user", "--bin", "router"];
    if !quick {
        args.push("--release");
    }
    cargo(&args)?;
    let binary = target_dir().join(if quick { "debug" } else { "release" }).join("router");
    if !binary.is_file() {
        bail!("no router binary at {}", binary.display());
    }
    Ok(binary)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
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
