//! Route churn under load: route additions while wrk runs on the set's target, the time from each change until the
//! new route answers, and the requests that failed meanwhile.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::loadgen::{finish_background_wrk, Wrk};
use super::measure::Meter;
use super::process::wait_until;
use super::proxies::{serves, Haproxy, Router};
use super::results::Churn;
use super::routes::{write_atomically, BenchRoute, Manifest as _, RouteSet};
use super::scenario::Contender;
use super::stage::Stage;

/// Longest the route churn of one contender may take (changes not done by then are reported as not done).
const CHURN_LIMIT: Duration = Duration::from_secs(240);
/// The HAProxy churn stops early when old processes pile up beyond these (bounded memory on the machine).
const CHURN_MAX_PROCESSES: usize = 30;
const CHURN_MAX_RSS_KIB: u64 = 6 * 1024 * 1024;

/// HAProxy: each change rewrites the config and maps and reloads (new process, `-x` socket transfer, `-sf`).
/// Old processes finish their connections meanwhile; the churn stops early if they pile up too far.
pub fn churn_haproxy(
    stage: &Stage,
    meter: &mut Meter,
    set: &RouteSet,
    haproxy: &mut Haproxy,
    planned: usize,
) -> anyhow::Result<Churn> {
    let mut grown = set.clone();
    let addr = haproxy.http_addr();
    let mut max_processes = 1;
    let mut churn = churn_under_load(stage, meter, Contender::Haproxy, set, addr, planned, |_, route| {
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
pub fn churn_router(
    stage: &Stage,
    meter: &mut Meter,
    set: &RouteSet,
    router: &Router,
    dir: &Path,
    planned: usize,
) -> anyhow::Result<Churn> {
    churn_under_load(stage, meter, Contender::Router, set, router.http_addr(), planned, |index, route| {
        let file = dir.join(format!("churn-{index:03}.yaml"));
        write_atomically(&file, &route.to_yaml()).map(|()| None)
    })
}

/// Applies up to `planned` route additions under wrk load on the set's target; after each change, polls
/// the new route until it answers 200 (at most 10 s), then goes on with the next. `change` may ask to stop
/// early (with the reason); so does the time limit.
fn churn_under_load(
    stage: &Stage,
    meter: &mut Meter,
    contender: Contender,
    set: &RouteSet,
    addr: SocketAddr,
    planned: usize,
    mut change: impl FnMut(usize, &BenchRoute) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<Churn> {
    println!("bench:   route churn, {}: {planned} changes under load", contender.label());
    meter.wait_for_idle();
    let target = set.target().context("route churn on an empty route set")?;
    let wrk = Wrk::new(format!("http://{addr}/"), Some(target.host.clone()), 64, Duration::from_secs(600));
    let started = Instant::now();
    let child = wrk.spawn()?;
    std::thread::sleep(Duration::from_millis(500));
    let mut latencies_ms = Vec::with_capacity(planned);
    let mut timeouts = 0;
    let mut failure = None;
    let mut stopped = None;
    let mut changes = 0;
    for index in 0..planned {
        if started.elapsed() > CHURN_LIMIT {
            stopped = Some(format!("time limit of {} s", CHURN_LIMIT.as_secs()));
            break;
        }
        let route = BenchRoute::http(&format!("c{index:03}"), &stage.backends.pods);
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
        planned,
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
