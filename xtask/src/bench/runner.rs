//! Running the scenarios of a group: start both proxies on the group's route set, then per repetition each
//! scenario with every contender back to back (order rotated), each run measured with the proxy's CPU and checked
//! for noise from other processes.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use super::backend::Backends;
use super::haproxy;
use super::measure::Endpoint;
use super::pki::Pki;
use super::plan::Group;
use super::process::{self, wait_until};
use super::proxies::{Haproxy, Router};
use super::report;
use super::routes::RouteSet;
use super::scenario::{Churn, Contender, Lifecycle, Load, ScenarioResult};
use super::tls::{https_get, negotiate};

/// A run is repeated when processes other than the contenders took more than this share of a CPU.
pub const NOISE_LIMIT: f64 = 0.05;
/// Time a whole bench may spend beyond its planned runs (waiting for idle CPUs, rerunning noisy runs): the
/// planned runs take about 18 minutes (HTTP about 12 with the route churn, TLS about 4.4, XDP about 1.6), so a
/// full bench stays under 20.
pub const EXTRA_TIME_BUDGET: Duration = Duration::from_secs(120);
/// Longest wait for idle CPUs before one run.
pub const IDLE_WAIT: Duration = Duration::from_secs(10);

/// How long the router may take after serving HTTP to answer a TLS handshake on its HTTPS port.
const TLS_READY_LIMIT: Duration = Duration::from_secs(3);

/// Whether the router's answer for the target route sets a cookie (the sticky-session cookie).
fn router_sets_cookie(router: &Router, set: &RouteSet) -> anyhow::Result<bool> {
    let (status, headers) = process::http_head(router.http_addr(), &set.target().host, "/", Duration::from_secs(2))
        .context("probing the router")?;
    anyhow::ensure!(status == 200, "the router answered {status} for the target route");
    Ok(headers.iter().any(|line| line.starts_with("set-cookie:")))
}

/// The HAProxy options of every run: the same work as the router does.
pub fn haproxy_options(cookies: bool) -> haproxy::Options {
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

pub struct Bench {
    pub work: PathBuf,
    pub binary: PathBuf,
    pub backends: Backends,
    /// The default certificate of both proxies (PEM: certificate and key).
    pub certificate: PathBuf,
    pub pki: Pki,
    /// `OPENSSL_CONF` of every TLS client.
    pub client_config: PathBuf,
    /// wrk scripts that connect to an address whatever the URL's host is (TLS runs: the URL's host is the SNI).
    pub connect_scripts: BTreeMap<IpAddr, PathBuf>,
    pub script: PathBuf,
    pub hz: f64,
    pub quick: bool,
    pub runs: u32,
    pub results: Vec<ScenarioResult>,
    pub lifecycle: Vec<Lifecycle>,
    pub churn: Vec<Churn>,
    pub setup_commands: Vec<String>,
    pub reruns: u32,
    pub idle_timeouts: u32,
    pub haproxy_sample: String,
    pub failed_runs: Vec<String>,
    pub cookies: Option<bool>,
    /// Spent on idle waits and reruns so far.
    pub extra_time: Duration,
    /// The proxies of the current group.
    pub proxy_pids: Vec<u32>,
}

/// The proxies of one group. The router may be missing in a TLS group (it did not start on the mixed set).
struct Proxies {
    haproxy: Haproxy,
    router: Option<Router>,
    /// Why the router cannot run the group's TLS scenarios.
    router_down: Option<String>,
}

impl Bench {
    pub fn run_group(&mut self, group: &Group) -> anyhow::Result<()> {
        let name = match group.tls {
            None => group.routes.to_string(),
            Some(tls) if tls.resumption => format!("tls-{}", group.routes),
            Some(_) => format!("tls-full-{}", group.routes),
        };
        let set = match group.tls {
            None => RouteSet::http(group.routes, &self.backends.pods),
            Some(_) => RouteSet::mixed(
                group.routes / 4,
                &self.backends.pods,
                &self.backends.tls_pods,
                &self.pki.route_tls(false),
                &self.pki.route_tls(true),
            ),
        };
        let manifest_dir = self.work.join(format!("manifests-{name}"));
        std::fs::create_dir_all(&manifest_dir).context("manifest dir")?;
        set.write_manifests(&manifest_dir.join("routes.yaml"))?;
        let manifest_bytes = std::fs::metadata(manifest_dir.join("routes.yaml")).map_or(0, |m| m.len());

        let log = self.work.join(format!("router-{name}.log"));
        let resumption = group.tls.is_none_or(|tls| tls.resumption);
        let (router, router_start, mut router_down) =
            match Router::start(&self.binary, &manifest_dir, &set, &log, &self.certificate, resumption, false) {
                Ok((router, start)) => (Some(router), start, None),
                // The HTTP groups need the router; a TLS group goes on without it.
                Err(error) if group.tls.is_some() => {
                    println!("bench:   the router did not start on the mixed route set: {error:#}");
                    (None, Duration::ZERO, Some(format!("the router did not start on the mixed route set: {error:#}")))
                }
                Err(error) => return Err(error),
            };
        // Equal work: HAProxy inserts the sticky cookie exactly when the router does.
        let cookies = match &router {
            Some(router) => router_sets_cookie(router, &set)?,
            None => self.cookies.unwrap_or(false),
        };
        self.cookies = Some(cookies);
        let options = haproxy::Options { tls_resumption: resumption, ..haproxy_options(cookies) };
        let layout = Haproxy::layout(&self.work.join(format!("haproxy-{name}")), &self.certificate)?;
        let (haproxy, haproxy_start) = Haproxy::start(&set, layout, options)?;
        let config_bytes = haproxy_config_bytes(&haproxy.layout.dir);
        if self.haproxy_sample.is_empty() {
            self.haproxy_sample = report::config_excerpt(&haproxy.layout.dir);
        }
        println!(
            "bench:   started: HAProxy {:.2} s, router {}",
            haproxy_start.as_secs_f64(),
            if router.is_some() { format!("{:.2} s", router_start.as_secs_f64()) } else { "not started".into() }
        );
        if self.setup_commands.len() < 3 {
            self.setup_commands.push(haproxy.command_line());
            if let Some(router) = &router {
                self.setup_commands.push(router.command_line());
            }
        }
        if let (Some(_), Some(router), None) = (group.tls, &router, &router_down) {
            router_down = self.router_tls_down(router, &set);
            if let Some(reason) = &router_down {
                println!("bench:   router: not available for TLS ({reason})");
            }
        }
        let mut proxies = Proxies { haproxy, router, router_down };
        let rss = |proxies: &Proxies| {
            (
                proxies.haproxy.current.rss_kib().unwrap_or(0),
                proxies.router.as_ref().map_or(0, |r| r.proc.rss_kib().unwrap_or(0)),
            )
        };
        let rss_idle = rss(&proxies);
        self.proxy_pids = std::iter::once(proxies.haproxy.current.pid())
            .chain(proxies.router.as_ref().map(|r| r.proc.pid()))
            .collect();

        let mut results: Vec<ScenarioResult> = group.scenarios.iter().map(ScenarioResult::new).collect();
        for result in &mut results {
            self.check_availability(result, &set, &proxies, group);
        }
        for rep in 0..self.runs {
            for result in &mut results {
                let scenario = result.scenario.clone();
                let mut order = scenario.contenders.clone();
                let shift = rep as usize % order.len().max(1);
                order.rotate_left(shift);
                for contender in order {
                    if result.unavailable.contains_key(&contender) {
                        continue;
                    }
                    let Some(endpoint) = self.endpoint(contender, scenario.load, &set, &proxies, group) else {
                        continue;
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
        let rss_loaded = rss(&proxies);
        if group.lifecycle {
            let mixed = group.tls.is_some();
            self.lifecycle.push(Lifecycle {
                contender: Contender::Haproxy,
                routes: group.routes,
                mixed,
                config_bytes,
                start: haproxy_start,
                rss_idle_kib: rss_idle.0,
                rss_loaded_kib: rss_loaded.0,
            });
            if proxies.router.is_some() {
                self.lifecycle.push(Lifecycle {
                    contender: Contender::Router,
                    routes: group.routes,
                    mixed,
                    config_bytes: manifest_bytes,
                    start: router_start,
                    rss_idle_kib: rss_idle.1,
                    rss_loaded_kib: rss_loaded.1,
                });
            }
        }
        self.results.extend(results);
        if group.churn {
            let churn = self.churn_haproxy(&set, &mut proxies.haproxy)?;
            self.churn.push(churn);
            let router = proxies.router.as_ref().context("route churn without a router")?;
            let churn = self.churn_router(&set, router, &manifest_dir)?;
            self.churn.push(churn);
        }
        Ok(())
    }

    /// Where `contender` serves `load`'s target route; none when it has no such endpoint (no router).
    fn endpoint(
        &self,
        contender: Contender,
        load: Load,
        set: &RouteSet,
        proxies: &Proxies,
        group: &Group,
    ) -> Option<Endpoint> {
        let host = set.target_of(load.termination()).map(|route| route.host.clone());
        let tls = load.is_tls();
        Some(match contender {
            // Straight to a pod: over HTTP without a Host to route by; over TLS with the route's name as SNI.
            Contender::Direct if tls => Endpoint {
                addr: self.backends.first_tls(group.tls.is_some_and(|tls| !tls.resumption)),
                host,
                proxy_pid: None,
            },
            Contender::Direct => Endpoint { addr: self.backends.first(), host: None, proxy_pid: None },
            Contender::Haproxy => {
                let haproxy = &proxies.haproxy;
                let addr = if tls { haproxy.https_addr() } else { haproxy.http_addr() };
                Endpoint { addr, host, proxy_pid: Some(haproxy.current.pid()) }
            }
            Contender::Router => {
                let router = proxies.router.as_ref()?;
                let addr = if tls { router.https_addr() } else { router.http_addr() };
                Endpoint { addr, host, proxy_pid: Some(router.proc.pid()) }
            }
        })
    }

    /// Why the router does not answer a TLS handshake for the edge route on its HTTPS port (none: it does).
    fn router_tls_down(&self, router: &Router, set: &RouteSet) -> Option<String> {
        let host = set.target_of(super::routes::Termination::Edge)?.host.clone();
        let addr = router.https_addr();
        let mut last = String::new();
        let answered = wait_until(TLS_READY_LIMIT, Duration::from_millis(200), || {
            match https_get(addr, &host, false, &self.pki.ca, &self.client_config) {
                Ok(_) => true,
                Err(error) => {
                    last = format!("{error:#}");
                    false
                }
            }
        });
        answered.is_none().then(|| format!("no TLS handshake on {addr} (--https-port): {last}"))
    }

    /// TLS scenarios: each contender must serve the target route over TLS (status 200; HTTP/2 where the load
    /// uses it) before its runs; records what the client negotiates there, or why the contender is left out.
    fn check_availability(&self, result: &mut ScenarioResult, set: &RouteSet, proxies: &Proxies, group: &Group) {
        let load = result.scenario.load;
        if !load.is_tls() {
            return;
        }
        for &contender in &result.scenario.contenders {
            let reason = match (contender, &proxies.router_down) {
                (Contender::Router, Some(reason)) => Err(reason.clone()),
                _ => match self.endpoint(contender, load, set, proxies, group) {
                    None => Err("not started".to_string()),
                    Some(endpoint) => self.probe(&endpoint, load == Load::EdgeHttp2),
                },
            };
            match reason {
                Ok(negotiated) => {
                    result.negotiated.insert(contender, negotiated);
                }
                Err(reason) => {
                    println!("bench:   {} / {}: not available ({reason})", result.scenario.title(), contender.label());
                    result.unavailable.insert(contender, reason);
                }
            }
        }
    }

    fn probe(&self, endpoint: &Endpoint, http2: bool) -> Result<super::tls::Negotiated, String> {
        let host = endpoint.host.as_deref().unwrap_or_default();
        let (status, version) = https_get(endpoint.addr, host, http2, &self.pki.ca, &self.client_config)
            .map_err(|error| format!("GET https://{host}/ at {}: {error:#}", endpoint.addr))?;
        if status != 200 {
            return Err(format!("GET https://{host}/ at {} answered {status}", endpoint.addr));
        }
        if http2 && version != "2" {
            return Err(format!("GET https://{host}/ at {} used HTTP/{version}, not HTTP/2", endpoint.addr));
        }
        negotiate(endpoint.addr, host, &self.work, &self.client_config).map_err(|error| format!("{error:#}"))
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
