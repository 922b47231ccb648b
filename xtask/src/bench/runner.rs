//! Running the scenarios of a group: start both proxies on the group's route set, then per repetition each
//! scenario with every contender back to back (order rotated), each run measured with the proxy's CPU and checked
//! for noise from other processes.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

use super::churn;
use super::h3load::H3load;
use super::haproxy;
use super::loadgen::CLIENT_CPU;
use super::measure::{Endpoint, Meter};
use super::plan::Group;
use super::process::{self, wait_until};
use super::proxies::{haproxy_options, Haproxy, Router, RouterRun, TlsProvider};
use super::results::{Lifecycle, Negotiated, Outcome, ScenarioResult};
use super::route_certificates;
use super::routes::{give_own_certificate, write_manifests, BenchRoute, RouteSet, Termination};
use super::scenario::{Contender, Load};
use super::stage::Stage;
use super::syslog::SyslogSink;
use super::tls::{https_get, negotiate};

/// How long the router may take after serving HTTP to answer a TLS handshake on its HTTPS port.
const TLS_READY_LIMIT: Duration = Duration::from_secs(3);

/// Whether the router's answer for the target route sets a cookie (the sticky-session cookie).
fn router_sets_cookie(router: &Router, target: &BenchRoute) -> anyhow::Result<bool> {
    let (status, headers) = process::http_head(router.http_addr(), &target.host, "/", Duration::from_secs(2))
        .context("probing the router")?;
    anyhow::ensure!(status == 200, "the router answered {status} for the target route");
    Ok(headers.iter().any(|line| line.starts_with("set-cookie:")))
}

/// The proxies of one group. The router may be missing in a TLS group (it did not start on the mixed set).
struct Proxies {
    haproxy: Haproxy,
    router: Option<Router>,
    /// Why the router cannot run the group's TLS scenarios.
    router_down: Option<String>,
    /// The same router with the aws-lc-rs crypto provider, in groups whose scenarios compare providers.
    router_aws_lc: Option<Router>,
    router_aws_lc_down: Option<String>,
}

/// Runs `group`: its scenario results, start times and memory, and route churn go into `outcome`.
pub fn run_group(stage: &Stage, meter: &mut Meter, group: &Group, outcome: &mut Outcome) -> anyhow::Result<()> {
    let name = match group.tls {
        None if group.access_log => format!("log-{}", group.routes),
        None if group.threads > 1 => group.name(),
        None => group.routes.to_string(),
        Some(_) => group.name(),
    };
    let mut set = match group.tls {
        None => RouteSet::http(group.routes, &stage.backends.pods),
        Some(tls) => RouteSet::mixed(
            group.routes / 4,
            &stage.backends.pods,
            &stage.backends.tls_pods,
            &stage.pki.route_tls(tls.key, false),
            &stage.pki.route_tls(tls.key, true),
        ),
    };
    let http3 = group.scenarios.iter().any(|scenario| scenario.load == Load::EdgeHttp3);
    if group.tls.is_some_and(|tls| tls.own_certificates) {
        println!("bench:   a certificate for each edge and reencrypt route");
        route_certificates::give_each_its_own(&mut set, &stage.pki)?;
    }
    if group.scenarios.iter().any(|scenario| scenario.load == Load::EdgeHttp2) {
        // The router (as OpenShift's) offers h2 only on a certificate exactly one route uses; HAProxy gets it too.
        give_own_certificate(&mut set, Termination::Edge, stage.pki.own_route_tls());
    }
    let manifest_dir = stage.work.join(format!("manifests-{name}"));
    std::fs::create_dir_all(&manifest_dir).context("manifest dir")?;
    write_manifests(&set, &manifest_dir.join("routes.yaml"))?;
    let manifest_bytes = std::fs::metadata(manifest_dir.join("routes.yaml")).map_or(0, |m| m.len());

    let log = stage.work.join(format!("router-{name}.log"));
    let resumption = group.tls.is_none_or(|tls| tls.resumption);
    // The access-log group: both proxies log to one local listener (only one of them is loaded at a time).
    let syslog = if group.access_log { Some(SyslogSink::start()?) } else { None };
    let syslog_addr = syslog.as_ref().map(|sink| sink.addr);
    let run = RouterRun {
        tls_resumption: resumption,
        passthrough_sockmap: false,
        threads: group.threads,
        access_log: syslog_addr,
        tls_provider: TlsProvider::Ring,
        http3,
    };
    let (router, router_start, mut router_down) =
        match Router::start(&stage.binary, &manifest_dir, &set, &log, &stage.certificate, run) {
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
        Some(router) => router_sets_cookie(router, set.target().context("an empty route set")?)?,
        None => outcome.cookies.unwrap_or(false),
    };
    outcome.cookies = Some(cookies);
    let options = haproxy::Options {
        tls_resumption: resumption,
        syslog: syslog_addr,
        threads: group.threads,
        ..haproxy_options(cookies)
    };
    let layout = Haproxy::layout(&stage.work.join(format!("haproxy-{name}")), &stage.certificate)?;
    let (haproxy, haproxy_start) = Haproxy::start(&set, layout, options)?;
    let config_bytes = haproxy_config_bytes(&haproxy.layout.dir);
    if outcome.haproxy_sample.is_empty() {
        outcome.haproxy_sample = haproxy::config_excerpt(&haproxy.layout.dir);
    }
    println!(
        "bench:   started: HAProxy {:.2} s, router {}",
        haproxy_start.as_secs_f64(),
        if router.is_some() { format!("{:.2} s", router_start.as_secs_f64()) } else { "not started".into() }
    );
    if outcome.setup_commands.len() < 3 {
        outcome.setup_commands.push(haproxy.command_line());
        if let Some(router) = &router {
            outcome.setup_commands.push(router.command_line());
        }
    }
    if let (Some(_), Some(router), None) = (group.tls, &router, &router_down) {
        router_down = router_tls_down(stage, router, &set);
        if let Some(reason) = &router_down {
            println!("bench:   router: not available for TLS ({reason})");
        }
    }
    let (router_aws_lc, router_aws_lc_down) = match compares_providers(group) {
        true => start_aws_lc(stage, &manifest_dir, &set, &name, run),
        false => (None, None),
    };
    let mut proxies = Proxies { haproxy, router, router_down, router_aws_lc, router_aws_lc_down };
    let rss = |proxies: &Proxies| {
        (
            proxies.haproxy.current.rss_kib().unwrap_or(0),
            proxies.router.as_ref().map_or(0, |r| r.proc.rss_kib().unwrap_or(0)),
        )
    };
    let rss_idle = rss(&proxies);
    meter.proxy_pids = std::iter::once(proxies.haproxy.current.pid())
        .chain(proxies.router.as_ref().map(|r| r.proc.pid()))
        .chain(proxies.router_aws_lc.as_ref().map(|r| r.proc.pid()))
        .collect();

    let mut results: Vec<ScenarioResult> = group.scenarios.iter().map(ScenarioResult::new).collect();
    for result in &mut results {
        check_availability(stage, result, &set, &proxies, group);
    }
    run_scenarios(stage, meter, group, &set, &proxies, &mut results, &mut outcome.failed_runs);
    if let Some(sink) = &syslog {
        println!("bench:   access log: the syslog listener received {} lines", sink.received());
    }
    let rss_loaded = rss(&proxies);
    if group.lifecycle {
        let mixed = group.tls.is_some();
        outcome.lifecycle.push(Lifecycle {
            contender: Contender::Haproxy,
            routes: group.routes,
            mixed,
            config_bytes,
            start: haproxy_start,
            rss_idle_kib: rss_idle.0,
            rss_loaded_kib: rss_loaded.0,
        });
        if proxies.router.is_some() {
            outcome.lifecycle.push(Lifecycle {
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
    outcome.results.extend(results);
    if group.churn_changes > 0 {
        // The router's churn first: HAProxy's leaves reloaded processes behind (gigabytes at 100,000 routes, on
        // the proxy CPU) whose exit would land in the router's churn.
        let router = proxies.router.as_ref().context("route churn without a router")?;
        let router_churn = churn::churn_router(stage, meter, &set, router, &manifest_dir, group.churn_changes)?;
        let churn = churn::churn_haproxy(stage, meter, &set, &mut proxies.haproxy, group.churn_changes)?;
        outcome.churn.push(churn);
        outcome.churn.push(router_churn);
    }
    Ok(())
}

/// Some scenario of `group` runs the router with aws-lc-rs beside the default one.
fn compares_providers(group: &Group) -> bool {
    group.scenarios.iter().any(|s| s.contenders.contains(&Contender::RouterAwsLc))
}

/// A second router on the same manifests with ROUTER_TLS_PROVIDER=aws-lc-rs; or why it cannot serve TLS.
fn start_aws_lc(
    stage: &Stage,
    manifests: &Path,
    set: &RouteSet,
    name: &str,
    run: RouterRun,
) -> (Option<Router>, Option<String>) {
    let log = stage.work.join(format!("router-aws-lc-rs-{name}.log"));
    let run = RouterRun { tls_provider: TlsProvider::AwsLcRs, ..run };
    match Router::start(&stage.binary, manifests, set, &log, &stage.certificate, run) {
        Ok((router, start)) => {
            println!("bench:   started: router aws-lc-rs {:.2} s", start.as_secs_f64());
            let down = router_tls_down(stage, &router, set);
            if let Some(reason) = &down {
                println!("bench:   router aws-lc-rs: not available for TLS ({reason})");
            }
            (Some(router), down)
        }
        Err(error) => {
            println!("bench:   the router with aws-lc-rs did not start: {error:#}");
            (None, Some(format!("the router with aws-lc-rs did not start: {error:#}")))
        }
    }
}

/// Every repetition of the group's scenarios, each with its contenders back to back (order rotated per
/// repetition): samples and commands go into `results`, runs that failed into `failed_runs`.
fn run_scenarios(
    stage: &Stage,
    meter: &mut Meter,
    group: &Group,
    set: &RouteSet,
    proxies: &Proxies,
    results: &mut [ScenarioResult],
    failed_runs: &mut Vec<String>,
) {
    for rep in 0..stage.runs {
        for result in results.iter_mut() {
            let scenario = result.scenario.clone();
            let mut order = scenario.contenders.clone();
            let shift = rep as usize % order.len().max(1);
            order.rotate_left(shift);
            for contender in order {
                if result.unavailable.contains_key(&contender) {
                    continue;
                }
                let Some(endpoint) = endpoint(stage, contender, scenario.load, set, proxies, group) else {
                    continue;
                };
                let measured = match group.access_log {
                    // The syslog listener is a thread of this process on the client CPU: its CPU is the run's own.
                    true => {
                        let ours = vec![(std::process::id(), CLIENT_CPU as usize)];
                        meter.measure_load(stage, &scenario, &endpoint, rep, ours, true)
                    }
                    false => meter.measure(stage, &scenario, &endpoint, rep),
                };
                let (sample, command) = match measured {
                    Ok(done) => done,
                    Err(error) => {
                        // One failed run does not end the bench: it is missing from the medians and listed.
                        println!(
                            "bench:   {} / {} run {} failed: {error:#}",
                            scenario.title(),
                            contender.label(),
                            rep + 1
                        );
                        failed_runs.push(format!(
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
}

/// Where `contender` serves `load`'s target route; none when it has no such endpoint (no router).
fn endpoint(
    stage: &Stage,
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
            addr: stage.backends.first_tls(group.tls.is_some_and(|tls| !tls.resumption)),
            host,
            proxy_pid: None,
        },
        Contender::Direct => Endpoint { addr: stage.backends.first(), host: None, proxy_pid: None },
        Contender::Haproxy => {
            let haproxy = &proxies.haproxy;
            let addr = if tls { haproxy.https_addr() } else { haproxy.http_addr() };
            Endpoint { addr, host, proxy_pid: Some(haproxy.current.pid()) }
        }
        Contender::Router | Contender::RouterAwsLc => {
            let router = match contender {
                Contender::RouterAwsLc => proxies.router_aws_lc.as_ref()?,
                _ => proxies.router.as_ref()?,
            };
            let addr = if tls { router.https_addr() } else { router.http_addr() };
            Endpoint { addr, host, proxy_pid: Some(router.proc.pid()) }
        }
    })
}

/// Why the router does not answer a TLS handshake for the edge route on its HTTPS port (none: it does).
fn router_tls_down(stage: &Stage, router: &Router, set: &RouteSet) -> Option<String> {
    let host = set.target_of(Termination::Edge)?.host.clone();
    let addr = router.https_addr();
    let mut last = String::new();
    let answered = wait_until(TLS_READY_LIMIT, Duration::from_millis(200), || {
        match https_get(addr, &host, false, &stage.pki.ca, &stage.client_config) {
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
fn check_availability(stage: &Stage, result: &mut ScenarioResult, set: &RouteSet, proxies: &Proxies, group: &Group) {
    let load = result.scenario.load;
    if !load.is_tls() {
        return;
    }
    for &contender in &result.scenario.contenders {
        let reason = match (contender, &proxies.router_down) {
            (Contender::Router, Some(reason)) => Err(reason.clone()),
            (Contender::RouterAwsLc, _) if proxies.router_aws_lc_down.is_some() => {
                Err(proxies.router_aws_lc_down.clone().unwrap_or_default())
            }
            _ => match endpoint(stage, contender, load, set, proxies, group) {
                None => Err("not started".to_string()),
                Some(endpoint) if load == Load::EdgeHttp3 => probe_http3(stage, &endpoint),
                Some(endpoint) => probe(stage, &endpoint, load == Load::EdgeHttp2),
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

fn probe(stage: &Stage, endpoint: &Endpoint, http2: bool) -> Result<Negotiated, String> {
    let host = endpoint.host.as_deref().unwrap_or_default();
    let (status, version) = https_get(endpoint.addr, host, http2, &stage.pki.ca, &stage.client_config)
        .map_err(|error| format!("GET https://{host}/ at {}: {error:#}", endpoint.addr))?;
    if status != 200 {
        return Err(format!("GET https://{host}/ at {} answered {status}", endpoint.addr));
    }
    if http2 && version != "2" {
        return Err(format!("GET https://{host}/ at {} used HTTP/{version}, not HTTP/2", endpoint.addr));
    }
    negotiate(endpoint.addr, host, &stage.work, &stage.client_config).map_err(|error| format!("{error:#}"))
}

/// One HTTP/3 request for the route must succeed (h3load, one connection, one request).
fn probe_http3(stage: &Stage, endpoint: &Endpoint) -> Result<Negotiated, String> {
    let host = endpoint.host.as_deref().unwrap_or_default();
    let probe = H3load {
        binary: stage.h3load.clone(),
        url: format!("https://{host}/"),
        connect_to: endpoint.addr,
        ca: stage.pki.ca.clone(),
        clients: 1,
        streams: 1,
        duration: Duration::from_secs(5),
        log: stage.work.join("h3load-probe.log"),
        requests: Some(1),
    };
    match probe.run() {
        // quinn reports no cipher or group; the client offers TLS 1.3 with the bench's one cipher suite only.
        Ok(out) if out.failed == 0 => Ok(Negotiated {
            protocol: "TLSv1.3 (QUIC, ALPN h3)".into(),
            cipher: format!("{} (the only one offered)", super::tls::CIPHERSUITE),
            group: "not reported".into(),
            resumed: false,
        }),
        Ok(out) => Err(format!("HTTP/3 GET https://{host}/ at {} failed ({} failed)", endpoint.addr, out.failed)),
        Err(error) => Err(format!("HTTP/3 GET https://{host}/ at {}: {error:#}", endpoint.addr)),
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
