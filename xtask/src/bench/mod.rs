//! `cargo xtask bench`: the router side by side with HAProxy (the OpenShift router's engine, with the configuration
//! the OpenShift router would write) and a direct connection to a backend, following ../shared/BENCH-METHOD.md.
//!
//! - `routes`: one route generator for both proxies (manifests for the router); `haproxy`: the HAProxy config;
//! - `backend`: nginx as the pods; `proxies`: starting, reloading and probing the proxies;
//! - `loadgen`: wrk / h2load command lines and parsing; `machine`: CPU idleness and machine facts;
//! - `stats`: median/min/max; `report`: the markdown table and the SVG chart in bench/results/.
//!
//! Core split: the proxy alone on CPU1; wrk/h2load and nginx on CPU0. Contenders run back to back within each
//! repetition (order rotated per repetition), so ratios come from the same minutes of the same machine.

mod backend;
mod haproxy;
mod loadgen;
mod machine;
mod process;
mod proxies;
mod report;
mod routes;
mod stats;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

use crate::cargo::{cargo, workspace_root};
use backend::{Backends, LARGE_PATH};
use loadgen::{finish_background_wrk, write_random_path_script, H2load, Wrk};
use machine::{wait_for_idle, CpuBusy, MachineInfo};
use process::{clock_ticks_per_second, reaped_children_ticks, wait_until};
use proxies::{default_certificate, serves, Haproxy, Router};
use routes::{http_route, manifests, write_atomically, RouteSet};

/// Route changes in the churn scenario.
const CHURN_CHANGES: usize = 100;
/// Total rate of the fixed-rate latency runs (BENCH-METHOD: e.g. 20k requests/s).
const FIXED_RATE: u32 = 20_000;
/// A run is repeated when processes other than the contenders took more than this share of a CPU.
const NOISE_LIMIT: f64 = 0.05;
/// Time a whole bench may spend beyond its planned runs (waiting for idle CPUs, rerunning noisy runs): the
/// planned runs take about 15 minutes, so a full bench stays under 20.
const EXTRA_TIME_BUDGET: Duration = Duration::from_secs(240);
/// Longest wait for idle CPUs before one run.
const IDLE_WAIT: Duration = Duration::from_secs(10);
/// Longest the route churn of one contender may take (changes not done by then are reported as not done).
const CHURN_LIMIT: Duration = Duration::from_secs(240);
/// The HAProxy churn stops early when old processes pile up beyond these (bounded memory on the machine).
const CHURN_MAX_PROCESSES: usize = 30;
const CHURN_MAX_RSS_KIB: u64 = 6 * 1024 * 1024;

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Contender {
    Direct,
    Haproxy,
    Router,
}

impl Contender {
    pub fn label(self) -> &'static str {
        match self {
            Contender::Direct => "direct",
            Contender::Haproxy => "HAProxy",
            Contender::Router => "router",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// wrk, keep-alive, the same URL on every request.
    SameUrl,
    /// wrk, keep-alive, a random path per request.
    RandomPath,
    /// wrk, `Connection: close`: one connection per request.
    ConnectionPerRequest,
    /// wrk, keep-alive, a 1 MiB body.
    Bulk,
    /// h2load, HTTP/1.1 keep-alive at a fixed total rate.
    FixedRate,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub load: Load,
    pub routes: usize,
    pub contenders: Vec<Contender>,
    pub duration: Duration,
    pub connections: u32,
}

impl Scenario {
    pub fn title(&self) -> String {
        let what = match self.load {
            Load::SameUrl => "HTTP keep-alive, same URL".to_string(),
            Load::RandomPath => "HTTP keep-alive, random path".to_string(),
            Load::ConnectionPerRequest => "HTTP connection per request".to_string(),
            Load::Bulk => "HTTP keep-alive, 1 MiB body".to_string(),
            Load::FixedRate => format!("HTTP keep-alive at {}k requests/s", FIXED_RATE / 1000),
        };
        format!("{what}, {} routes", report::thousands(self.routes))
    }
}

/// One run of one contender.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub rep: u32,
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: Option<f64>,
    /// Proxy CPU (utime + stime) per request, microseconds.
    pub us_per_request: Option<f64>,
    /// Proxy CPU over the run, percent of one CPU.
    pub cpu_percent: Option<f64>,
    pub errors: u64,
    pub bytes_per_second: f64,
    /// Other processes took noticeable CPU and the rerun budget was spent.
    pub noisy: bool,
}

pub struct ScenarioResult {
    pub scenario: Scenario,
    pub samples: BTreeMap<Contender, Vec<Sample>>,
    pub commands: BTreeMap<Contender, String>,
}

/// Start time and memory of a proxy at a route count.
pub struct Lifecycle {
    pub contender: Contender,
    pub routes: usize,
    pub config_bytes: u64,
    pub start: Duration,
    pub rss_idle_kib: u64,
    pub rss_loaded_kib: u64,
}

/// Route changes under load.
pub struct Churn {
    pub contender: Contender,
    pub routes: usize,
    pub changes: usize,
    /// From the start of writing the change until the new route answered 200, per change.
    pub latencies_ms: Vec<f64>,
    /// Changes whose route did not answer within the limit.
    pub timeouts: usize,
    pub requests: u64,
    pub non_2xx: u64,
    pub socket_errors: u64,
    pub seconds: f64,
    /// Most HAProxy processes alive at once (old ones finishing their connections).
    pub max_processes: usize,
    /// Why the churn stopped before `CHURN_CHANGES` changes.
    pub stopped: Option<String>,
    pub command: String,
}

pub struct Outcome {
    pub info: MachineInfo,
    pub quick: bool,
    pub runs: u32,
    pub results: Vec<ScenarioResult>,
    pub lifecycle: Vec<Lifecycle>,
    pub churn: Vec<Churn>,
    pub setup_commands: Vec<String>,
    pub reruns: u32,
    pub idle_timeouts: u32,
    pub h2load: bool,
    pub wall: Duration,
    pub haproxy_sample: String,
    pub failed_runs: Vec<String>,
    /// Whether both proxies inserted the sticky cookie (the router's behaviour, mirrored on HAProxy).
    pub cookies: Option<bool>,
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if let Some(dir) = &args.generate {
        return generate(dir, args.routes);
    }
    let started = Instant::now();
    for tool in ["haproxy", "nginx", "wrk", "taskset", "openssl"] {
        if !on_path(tool) {
            bail!("{tool} is not installed: run `cargo xtask setup`");
        }
    }
    if std::thread::available_parallelism().map_or(0, usize::from) < 2 {
        bail!("the bench pins the proxy to CPU1 and the load to CPU0: it needs 2 CPUs");
    }
    let h2load = on_path("h2load");
    let binary = build_router(args.quick)?;
    let work = WorkDir::create()?;
    let info = MachineInfo::collect();
    let backends = Backends::start(&work.path.join("nginx"))?;
    let certificate = default_certificate(&work.path)?;
    let script = write_random_path_script(&work.path)?;
    let mut bench = Bench {
        work: work.path.clone(),
        binary,
        backends,
        certificate,
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
        "taskset -c {} nginx -p {dir} -e {dir}/error.log -c {}  # pods: {}",
        loadgen::CLIENT_CPU,
        bench.backends.config.display(),
        bench.backends.pods.iter().map(|p| format!("{}:{}", p.ip, p.port)).collect::<Vec<_>>().join(" "),
        dir = bench.backends.config.parent().map_or(String::new(), |d| d.display().to_string()),
    ));

    for group in plan(args.quick, h2load) {
        println!("bench: {} routes", report::thousands(group.routes));
        bench.run_group(&group)?;
    }

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
    };
    drop(bench);
    drop(work);

    let dir =
        if args.quick { target_dir().join("bench-quick") } else { workspace_root().join("bench").join("results") };
    let (markdown, svg) = report::write(&outcome, &dir)?;
    println!("{}", report::summary_table(&outcome));
    println!("bench: results in {} and {} ({:.0} s)", markdown.display(), svg.display(), outcome.wall.as_secs_f64());
    if args.quick {
        check_quick(&outcome)?;
    }
    Ok(())
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

/// Scenarios grouped by route count (both proxies are started once per group).
struct Group {
    routes: usize,
    scenarios: Vec<Scenario>,
    churn: bool,
    lifecycle: bool,
}

fn plan(quick: bool, h2load: bool) -> Vec<Group> {
    use Contender::{Direct, Haproxy as H, Router as R};
    let secs = Duration::from_secs;
    let scenario = |load, routes, contenders: &[Contender], duration, connections| Scenario {
        load,
        routes,
        contenders: contenders.to_vec(),
        duration,
        connections,
    };
    if quick {
        return vec![Group {
            routes: 10,
            scenarios: vec![scenario(Load::SameUrl, 10, &[Direct, H, R], secs(2), 64)],
            churn: false,
            lifecycle: false,
        }];
    }
    let all = [Direct, H, R];
    let proxies = [H, R];
    let mut ten =
        vec![scenario(Load::SameUrl, 10, &all, secs(10), 64), scenario(Load::RandomPath, 10, &all, secs(10), 64)];
    if h2load {
        ten.push(scenario(Load::FixedRate, 10, &all, secs(6), 50));
    }
    ten.push(scenario(Load::ConnectionPerRequest, 10, &all, secs(4), 64));
    ten.push(scenario(Load::Bulk, 10, &all, secs(4), 8));
    let thousand = vec![
        scenario(Load::SameUrl, 1000, &proxies, secs(10), 64),
        scenario(Load::RandomPath, 1000, &proxies, secs(10), 64),
    ];
    let mut ten_thousand = vec![
        scenario(Load::SameUrl, 10_000, &proxies, secs(10), 64),
        scenario(Load::RandomPath, 10_000, &proxies, secs(10), 64),
    ];
    if h2load {
        ten_thousand.push(scenario(Load::FixedRate, 10_000, &proxies, secs(6), 50));
    }
    ten_thousand.push(scenario(Load::ConnectionPerRequest, 10_000, &proxies, secs(4), 64));
    vec![
        Group { routes: 10, scenarios: ten, churn: false, lifecycle: true },
        Group { routes: 1000, scenarios: thousand, churn: false, lifecycle: true },
        Group { routes: 10_000, scenarios: ten_thousand, churn: true, lifecycle: true },
    ]
}

/// Whether the router's answer for the target route sets a cookie (the sticky-session cookie).
fn router_sets_cookie(router: &Router, set: &RouteSet) -> anyhow::Result<bool> {
    let (status, headers) = process::http_head(router.http_addr(), &set.target().host, "/", Duration::from_secs(2))
        .context("probing the router")?;
    anyhow::ensure!(status == 200, "the router answered {status} for the target route");
    Ok(headers.iter().any(|line| line.starts_with("set-cookie:")))
}

/// The HAProxy options of every run: the same work as the router does.
fn haproxy_options(cookies: bool) -> haproxy::Options {
    haproxy::Options {
        // The sticky cookie when the router inserts one; else `disable_cookies` on every route.
        cookies,
        // No active health checks on either (the router's are set to a day, see `proxies::ROUTER_ENV`): with
        // OpenShift's `check inter 5000ms`, 10,000 routes x 4 pods would be 8,000 connects/s per proxy, on the
        // same nginx as the load.
        health_checks: false,
        // BENCH-METHOD: one worker thread.
        threads: 1,
        maxconn: haproxy_maxconn(),
        ..haproxy::Options::default()
    }
}

/// OpenShift's 50,000, or less when the open-files limit cannot hold it (HAProxy needs ~2 descriptors per connection
/// and refuses to start otherwise); far above the bench's few hundred connections either way.
fn haproxy_maxconn() -> u32 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    let hard = if ok { limit.rlim_max } else { 1024 };
    let fits = hard.saturating_sub(200) / 2;
    u32::try_from(fits.min(50_000)).unwrap_or(50_000).max(1000)
}

struct Bench {
    work: PathBuf,
    binary: PathBuf,
    backends: Backends,
    certificate: PathBuf,
    script: PathBuf,
    hz: f64,
    quick: bool,
    runs: u32,
    results: Vec<ScenarioResult>,
    lifecycle: Vec<Lifecycle>,
    churn: Vec<Churn>,
    setup_commands: Vec<String>,
    reruns: u32,
    idle_timeouts: u32,
    haproxy_sample: String,
    failed_runs: Vec<String>,
    cookies: Option<bool>,
    /// Spent on idle waits and reruns so far.
    extra_time: Duration,
    /// The proxies of the current group.
    proxy_pids: Vec<u32>,
}

/// Where a contender is reached, and the PID whose CPU is the proxy's.
struct Endpoint {
    addr: SocketAddr,
    host: Option<String>,
    proxy_pid: Option<u32>,
}

impl Bench {
    fn run_group(&mut self, group: &Group) -> anyhow::Result<()> {
        let set = RouteSet::http(group.routes, &self.backends.pods);
        let target_host = set.target().host.clone();
        let manifest_dir = self.work.join(format!("manifests-{}", group.routes));
        std::fs::create_dir_all(&manifest_dir).context("manifest dir")?;
        set.write_manifests(&manifest_dir.join("routes.yaml"))?;
        let manifest_bytes = std::fs::metadata(manifest_dir.join("routes.yaml")).map_or(0, |m| m.len());

        let log = self.work.join(format!("router-{}.log", group.routes));
        let (router, router_start) = Router::start(&self.binary, &manifest_dir, &set, &log)?;
        // Equal work: HAProxy inserts the sticky cookie exactly when the router does.
        let cookies = router_sets_cookie(&router, &set)?;
        self.cookies = Some(cookies);
        let layout = Haproxy::layout(&self.work.join(format!("haproxy-{}", group.routes)), &self.certificate)?;
        let (mut haproxy, haproxy_start) = Haproxy::start(&set, layout, haproxy_options(cookies))?;
        let config_bytes = haproxy_config_bytes(&haproxy.layout.dir);
        if self.haproxy_sample.is_empty() {
            self.haproxy_sample = report::config_excerpt(&haproxy.layout.dir);
        }
        println!(
            "bench:   started: HAProxy {:.2} s, router {:.2} s",
            haproxy_start.as_secs_f64(),
            router_start.as_secs_f64()
        );
        if self.setup_commands.len() < 3 {
            self.setup_commands.push(haproxy.command_line());
            self.setup_commands.push(router.command_line());
        }
        let rss_idle = (haproxy.current.rss_kib().unwrap_or(0), router.proc.rss_kib().unwrap_or(0));
        self.proxy_pids = vec![haproxy.current.pid(), router.proc.pid()];

        let mut results: Vec<ScenarioResult> = group
            .scenarios
            .iter()
            .map(|s| ScenarioResult { scenario: s.clone(), samples: BTreeMap::new(), commands: BTreeMap::new() })
            .collect();
        for rep in 0..self.runs {
            for result in &mut results {
                let scenario = result.scenario.clone();
                let mut order = scenario.contenders.clone();
                let shift = rep as usize % order.len().max(1);
                order.rotate_left(shift);
                for contender in order {
                    let endpoint = match contender {
                        Contender::Direct => Endpoint { addr: self.backends.first(), host: None, proxy_pid: None },
                        Contender::Haproxy => Endpoint {
                            addr: haproxy.http_addr(),
                            host: Some(target_host.clone()),
                            proxy_pid: Some(haproxy.current.pid()),
                        },
                        Contender::Router => Endpoint {
                            addr: router.http_addr(),
                            host: Some(target_host.clone()),
                            proxy_pid: Some(router.proc.pid()),
                        },
                    };
                    let (sample, command) = match self.measure(&scenario, &endpoint, rep) {
                        Ok(done) => done,
                        Err(error) => {
                            // One failed run does not end the bench: it is missing from the medians and listed.
                            println!(
                                "bench:   {} / {} run {} failed: {error:#}",
                                scenario.title(),
                                contender.label(),
                                rep + 1
                            );
                            self.failed_runs.push(format!(
                                "{} / {} run {}: {error:#}",
                                scenario.title(),
                                contender.label(),
                                rep + 1
                            ));
                            continue;
                        }
                    };
                    println!(
                        "bench:   {:<48} {:<8} run {}: {:>9.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  {}{}",
                        scenario.title(),
                        contender.label(),
                        rep + 1,
                        sample.requests_per_second,
                        sample.p50_ms,
                        sample.p99_ms,
                        sample.us_per_request.map_or(String::new(), |us| format!("{us:.1} us/req")),
                        if sample.noisy { "  (noisy)" } else { "" },
                    );
                    result.commands.entry(contender).or_insert(command);
                    result.samples.entry(contender).or_default().push(sample);
                }
            }
        }
        let rss_loaded = (haproxy.current.rss_kib().unwrap_or(0), router.proc.rss_kib().unwrap_or(0));
        if group.lifecycle {
            self.lifecycle.push(Lifecycle {
                contender: Contender::Haproxy,
                routes: group.routes,
                config_bytes,
                start: haproxy_start,
                rss_idle_kib: rss_idle.0,
                rss_loaded_kib: rss_loaded.0,
            });
            self.lifecycle.push(Lifecycle {
                contender: Contender::Router,
                routes: group.routes,
                config_bytes: manifest_bytes,
                start: router_start,
                rss_idle_kib: rss_idle.1,
                rss_loaded_kib: rss_loaded.1,
            });
        }
        self.results.extend(results);
        if group.churn {
            let churn = self.churn_haproxy(&set, &mut haproxy)?;
            self.churn.push(churn);
            let churn = self.churn_router(&set, &router, &manifest_dir)?;
            self.churn.push(churn);
        }
        Ok(())
    }

    /// Waits for idle CPUs (BENCH-METHOD 6) while the extra-time budget lasts; the wait counts against it.
    fn wait_for_idle(&mut self) {
        if self.quick || self.extra_time >= EXTRA_TIME_BUDGET {
            return;
        }
        let start = Instant::now();
        let limit = IDLE_WAIT.min(EXTRA_TIME_BUDGET - self.extra_time);
        if !wait_for_idle(limit, self.hz) {
            self.idle_timeouts += 1;
        }
        // The first 300 ms window is part of every run's plan; longer waits are extra.
        self.extra_time += start.elapsed().saturating_sub(Duration::from_millis(300));
    }

    /// One run: waits for idle CPUs, runs the load, reads the proxy's CPU, and reruns (within the budget) when
    /// other processes took noticeable CPU meanwhile.
    fn measure(&mut self, scenario: &Scenario, endpoint: &Endpoint, rep: u32) -> anyhow::Result<(Sample, String)> {
        let url_path = if scenario.load == Load::Bulk { LARGE_PATH } else { "/" };
        let url = format!("http://{}{url_path}", endpoint.addr);
        let mut attempt = 0;
        loop {
            self.wait_for_idle();
            let busy_before = CpuBusy::sample();
            let proxy_before = endpoint.proxy_pid.map(process::cpu_ticks).transpose()?;
            let proxies_before: u64 = self.proxy_pids.iter().filter_map(|pid| process::cpu_ticks(*pid).ok()).sum();
            let nginx_before = self.backends.proc.cpu_ticks()?;
            let children_before = reaped_children_ticks()?;
            let wall = Instant::now();

            let (mut sample, command, requests) = match scenario.load {
                Load::FixedRate => {
                    let h2load = H2load {
                        url: url.clone(),
                        host: endpoint.host.clone(),
                        clients: scenario.connections,
                        rate: FIXED_RATE,
                        duration: scenario.duration,
                        log: self.work.join("h2load.log"),
                    };
                    let out = h2load.run()?;
                    let sample = Sample {
                        rep,
                        requests_per_second: out.requests as f64 / out.seconds.max(1e-9),
                        p50_ms: out.p50_ms,
                        p99_ms: out.p99_ms,
                        p999_ms: Some(out.p999_ms),
                        errors: out.failed,
                        ..Sample::default()
                    };
                    // The log covers the measured duration; the CPU below also covers the warm-up second.
                    let requests = (out.requests as f64) * (1.0 + 1.0 / scenario.duration.as_secs_f64().max(1.0));
                    (sample, h2load.command_line(), requests)
                }
                load => {
                    let wrk = Wrk {
                        url: url.clone(),
                        host: endpoint.host.clone(),
                        connections: scenario.connections,
                        duration: scenario.duration,
                        script: (load == Load::RandomPath).then(|| self.script.clone()),
                        close: load == Load::ConnectionPerRequest,
                    };
                    let out = wrk.run()?;
                    let sample = Sample {
                        rep,
                        requests_per_second: out.requests_per_second,
                        p50_ms: out.p50_ms,
                        p99_ms: out.p99_ms,
                        errors: out.non_2xx_3xx + out.socket_errors,
                        bytes_per_second: out.bytes_per_second,
                        ..Sample::default()
                    };
                    (sample, wrk.command_line(), out.requests as f64)
                }
            };

            let seconds = wall.elapsed().as_secs_f64();
            let busy = CpuBusy::sample().since(&busy_before);
            let proxy_ticks = match (endpoint.proxy_pid, proxy_before) {
                (Some(pid), Some(before)) => Some(process::cpu_ticks(pid)?.saturating_sub(before)),
                _ => None,
            };
            let nginx_ticks = self.backends.proc.cpu_ticks()?.saturating_sub(nginx_before);
            let client_ticks = reaped_children_ticks()?.saturating_sub(children_before);

            if let Some(ticks) = proxy_ticks {
                let cpu_seconds = ticks as f64 / self.hz;
                sample.cpu_percent = Some(100.0 * cpu_seconds / seconds);
                if requests > 0.0 {
                    sample.us_per_request = Some(cpu_seconds * 1e6 / requests);
                }
            }
            // Every proxy of the group is ours (the idle one's timers are not another process's noise).
            let proxies_now: u64 = self.proxy_pids.iter().filter_map(|pid| process::cpu_ticks(*pid).ok()).sum();
            let ours = [nginx_ticks + client_ticks, proxies_now.saturating_sub(proxies_before)];
            let allowed = (NOISE_LIMIT * seconds * self.hz).max(5.0);
            let others: Vec<f64> =
                busy.iter().zip(ours).map(|(total, ours)| total.saturating_sub(ours) as f64).collect();
            let noisy = others.iter().any(|ticks| *ticks > allowed);
            if noisy && !self.quick && attempt < 2 && self.extra_time < EXTRA_TIME_BUDGET {
                attempt += 1;
                self.reruns += 1;
                self.extra_time += wall.elapsed();
                println!(
                    "bench:   other processes took CPU ({:.0}% / {:.0}% of CPU0 / CPU1): running again",
                    100.0 * others[0] / (seconds * self.hz),
                    100.0 * others.get(1).copied().unwrap_or(0.0) / (seconds * self.hz)
                );
                continue;
            }
            sample.noisy = noisy && !self.quick;
            return Ok((sample, command));
        }
    }

    /// HAProxy: each change rewrites the config and maps and reloads (new process, `-x` socket transfer, `-sf`).
    /// Old processes finish their connections meanwhile; the churn stops early if they pile up too far.
    fn churn_haproxy(&mut self, set: &RouteSet, haproxy: &mut Haproxy) -> anyhow::Result<Churn> {
        let mut grown = set.clone();
        let addr = haproxy.http_addr();
        let mut max_processes = 1;
        let mut churn = self.churn(Contender::Haproxy, set, addr, |_, route| {
            grown.routes.push(route.clone());
            haproxy.reload(&grown)?;
            let (processes, rss_kib) = haproxy.alive();
            max_processes = max_processes.max(processes);
            Ok((processes > CHURN_MAX_PROCESSES || rss_kib > CHURN_MAX_RSS_KIB).then(|| {
                format!("{processes} HAProxy processes alive with {:.1} GB RSS in total", rss_kib as f64 / 1048576.0)
            }))
        })?;
        churn.max_processes = max_processes;
        Ok(churn)
    }

    /// The router: each change is one more manifest file (written atomically) in the watched directory.
    fn churn_router(&mut self, set: &RouteSet, router: &Router, dir: &Path) -> anyhow::Result<Churn> {
        self.churn(Contender::Router, set, router.http_addr(), |index, route| {
            let file = dir.join(format!("churn-{index:03}.yaml"));
            write_atomically(&file, &manifests(std::slice::from_ref(route))).map(|()| None)
        })
    }

    /// Applies up to `CHURN_CHANGES` route additions under wrk load on the set's target; after each change, polls
    /// the new route until it answers 200 (at most 10 s), then goes on with the next. `change` may ask to stop
    /// early (with the reason); so does the time limit.
    fn churn(
        &mut self,
        contender: Contender,
        set: &RouteSet,
        addr: SocketAddr,
        mut change: impl FnMut(usize, &routes::BenchRoute) -> anyhow::Result<Option<String>>,
    ) -> anyhow::Result<Churn> {
        println!("bench:   route churn, {}: {CHURN_CHANGES} changes under load", contender.label());
        self.wait_for_idle();
        let wrk = Wrk {
            url: format!("http://{addr}/"),
            host: Some(set.target().host.clone()),
            connections: 64,
            duration: Duration::from_secs(600),
            script: None,
            close: false,
        };
        let started = Instant::now();
        let child = wrk.spawn()?;
        std::thread::sleep(Duration::from_millis(500));
        let mut latencies_ms = Vec::with_capacity(CHURN_CHANGES);
        let mut timeouts = 0;
        let mut failure = None;
        let mut stopped = None;
        let mut changes = 0;
        for index in 0..CHURN_CHANGES {
            if started.elapsed() > CHURN_LIMIT {
                stopped = Some(format!("time limit of {} s", CHURN_LIMIT.as_secs()));
                break;
            }
            let route = http_route(&format!("c{index:03}"), &self.backends.pods);
            let begin = Instant::now();
            let stop = match change(index, &route) {
                Ok(stop) => stop,
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            };
            changes += 1;
            match wait_until(Duration::from_secs(10), Duration::from_millis(2), || serves(addr, &route)) {
                Some(_) => latencies_ms.push(begin.elapsed().as_secs_f64() * 1e3),
                None => timeouts += 1,
            }
            if stop.is_some() {
                stopped = stop;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(500));
        let out = finish_background_wrk(child)?;
        if let Some(error) = failure {
            return Err(error.context(format!("route churn through {}", contender.label())));
        }
        if let Some(reason) = &stopped {
            println!("bench:   route churn, {}: stopped after {changes} changes: {reason}", contender.label());
        }
        Ok(Churn {
            contender,
            routes: set.routes.len(),
            changes,
            latencies_ms,
            timeouts,
            requests: out.requests,
            non_2xx: out.non_2xx_3xx,
            socket_errors: out.socket_errors,
            seconds: started.elapsed().as_secs_f64(),
            max_processes: 1,
            stopped,
            command: format!("{}  # stopped with SIGINT after the last change", wrk.command_line()),
        })
    }
}

fn haproxy_config_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "cfg" || x == "map"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
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
