//! Active TCP health checks (HAProxy's `check`), which feed each endpoint's health
//! ([`EndpointHealth`](crate::balance::EndpointHealth)): for every route with more than one endpoint, each
//! endpoint gets a TCP connect at the route's check interval (`router.openshift.io/haproxy.health.check.interval`,
//! default `ROUTER_BACKEND_CHECK_INTERVAL`, 5 s). One task follows the published tables (`targets`: what a
//! new table changed). Checks wait in a queue ordered by due time, so the task wakes only when one is due,
//! whatever the number of routes (a scan of every endpoint on a fixed tick cost the request path at 10,000
//! routes).
//!
//! A connect to a pod's address answers for every route that sends to it, so the endpoints of one address are
//! checked together: one connect, its result recorded for each of them whose check is due. HAProxy connects
//! once per server of each backend; at 100,000 routes over four pods that is 400,000 connects per interval
//! (80,000 a second, more than a core), here four.

mod targets;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::balance::now_ms;
use crate::metrics::{Metrics, ProxyCounters};
use crate::table::{Backend, Endpoint, RouteTable};
use targets::{endpoint, Targets};

/// At most this many connects at once, so 10k pods do not open 10k sockets at the same moment.
const BATCH: usize = 256;
/// Upper bound of one check's connect.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest the checker sleeps with nothing due.
const IDLE: Duration = Duration::from_secs(3600);

/// The checker of the live table's endpoints: one task for as long as this handle lives, told of each table
/// as it is published, keeping what it knows of the shards a new table shares with the last one.
pub struct HealthChecks {
    tables: watch::Sender<Weak<RouteTable>>,
}

impl HealthChecks {
    /// Starts the task; failed checks are counted in `metrics` (`haproxy_server_check_failures_total`).
    pub fn start(metrics: Arc<Metrics>) -> HealthChecks {
        let (tables, follow) = watch::channel(Weak::new());
        tokio::spawn(run(follow, metrics));
        HealthChecks { tables }
    }

    /// Checks `table`'s endpoints from now on (it is the live table).
    pub fn follow(&self, table: &Arc<RouteTable>) {
        self.tables.send_replace(Arc::downgrade(table));
    }
}

async fn run(mut tables: watch::Receiver<Weak<RouteTable>>, metrics: Arc<Metrics>) {
    let mut targets = Targets::default();
    // Addresses by due time; `scheduled` keeps one entry per address.
    let mut queue: BinaryHeap<Reverse<(Instant, SocketAddr)>> = BinaryHeap::new();
    let mut scheduled: HashSet<SocketAddr> = HashSet::new();
    loop {
        let due = queue.peek().map_or(Instant::now() + IDLE, |Reverse((due, _))| *due);
        tokio::select! {
            changed = tables.changed() => {
                if changed.is_err() {
                    return;
                }
                let Some(table) = tables.borrow_and_update().upgrade() else { continue };
                let now = Instant::now();
                for addr in targets.follow(&table) {
                    if scheduled.insert(addr) {
                        queue.push(Reverse((now + next_check_in(&targets, &addr), addr)));
                    }
                }
            }
            () = tokio::time::sleep_until(due) => {
                let now = Instant::now();
                let mut batch = Vec::new();
                while let Some(Reverse((due, addr))) = queue.peek().copied() {
                    if due > now || batch.len() == BATCH {
                        break;
                    }
                    queue.pop();
                    scheduled.remove(&addr);
                    if targets.is_checked(&addr) {
                        batch.push(addr);
                    }
                }
                join_all(batch.iter().map(|addr| check(&targets, addr, &metrics))).await;
                let now = Instant::now();
                for addr in batch {
                    if targets.is_checked(&addr) && scheduled.insert(addr) {
                        queue.push(Reverse((now + next_check_in(&targets, &addr), addr)));
                    }
                }
            }
        }
    }
}

/// How long until the first endpoint of `addr` is due (one clock reading for all of them).
fn next_check_in(targets: &Targets, addr: &SocketAddr) -> Duration {
    let first = targets.members(addr).map(|member| endpoint(member).health.next_check_at()).min().unwrap_or(0);
    Duration::from_millis(first.saturating_sub(now_ms()))
}

/// One connect to `addr` when any of its endpoints is due, recorded for each that is: a connect to a pod's
/// address answers for every route that sends to it.
async fn check(targets: &Targets, addr: &SocketAddr, metrics: &Metrics) {
    // The state shared across rebuilds decides: a check recorded through another table is not repeated.
    let now = now_ms();
    let due: Vec<_> = targets
        .members(addr)
        .filter(|(backend, index)| {
            backend.endpoints[*index].health.check_due(now, backend.policy.health_check_interval)
        })
        .collect();
    let Some(interval) = due.iter().map(|(backend, _)| backend.policy.health_check_interval).min() else {
        return;
    };
    let timeout = interval.min(CHECK_TIMEOUT);
    let passed = matches!(tokio::time::timeout(timeout, TcpStream::connect(addr)).await, Ok(Ok(_)));
    for member in due {
        let (backend, endpoint) = (&member.0, endpoint(member));
        endpoint.health.record_check(passed);
        let Some(counters) = check_counters(backend, endpoint, passed, metrics) else { continue };
        if !passed {
            tracing::debug!(endpoint = %endpoint.addr, route = %backend.route, "health check failed");
            counters.check_failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // `haproxy_server_downtime_seconds_total` follows the checks' verdict (HAProxy's `downtime`).
        counters.observe_check_state(!endpoint.health.checked_down());
    }
}

/// The server counters a check result goes to, created only for a failure: a passing check of a server that
/// has none yet (never failed, never served) has nothing to count, and creating them for every server of a big
/// table at its first check round cost about 130 MB at 100,000 routes of 4 pods. Counters a failure created
/// before a table rebuild are found by name, so the spell of downtime they hold is closed.
fn check_counters<'a>(
    backend: &Backend,
    endpoint: &'a Endpoint,
    passed: bool,
    metrics: &Metrics,
) -> Option<&'a Arc<ProxyCounters>> {
    let name = &backend.labels.backend;
    if let Some(counters) = endpoint.proxy.get() {
        return Some(counters);
    }
    if !passed {
        return Some(metrics.haproxy.server(name, &endpoint.id, &endpoint.proxy));
    }
    let existing = metrics.haproxy.existing_server(name, &endpoint.id)?;
    Some(endpoint.proxy.get_or_init(|| existing))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests panic where they fail
mod tests {
    use super::*;
    use crate::model::Snapshot;
    use crate::source::manifest::ManifestSource;
    use crate::table::{build, build_from, BuildOptions};

    /// `routes` routes (`r0`, `r1`, ...) over one service with pods 127.0.0.1 on `up` (listening) and 127.0.0.2
    /// on `down` (closed), and 127.0.0.3 on `third` when given.
    fn snapshot(routes: std::ops::Range<usize>, up: u16, down: u16, third: Option<u16>) -> Snapshot {
        let dir = tempfile::tempdir().unwrap();
        let third = third.map_or(String::new(), |port| {
            format!(", {{addresses: [{{ip: 127.0.0.3}}], ports: [{{name: http, port: {port}}}]}}")
        });
        let mut yaml = format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: ns}}\nspec: {{ports: [{{name: http, port: 80}}]}}\n\
             ---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: web, namespace: ns}}\nsubsets: [{{addresses: [{{ip: \
             127.0.0.1}}], ports: [{{name: http, port: {up}}}]}}, {{addresses: [{{ip: 127.0.0.2}}], ports: [{{name: http, port: \
             {down}}}]}}{third}]\n"
        );
        for route in routes {
            yaml.push_str(&format!(
                "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: r{route}, namespace: ns}}\n\
                 spec: {{host: r{route}.example.com, to: {{kind: Service, name: web}}}}\n"
            ));
        }
        std::fs::write(dir.path().join("all.yaml"), yaml).unwrap();
        ManifestSource::new(dir.path()).reload().snapshot
    }

    fn options() -> BuildOptions {
        BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() }
    }

    fn table(up: u16, down: u16) -> Arc<RouteTable> {
        Arc::new(build(&snapshot(0..1, up, down, None), &options(), 1))
    }

    fn closed_port(ip: &str) -> u16 {
        let closed = std::net::TcpListener::bind((ip, 0)).unwrap();
        closed.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn a_passing_check_creates_no_counters_and_a_failing_one_does() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let up = listener.local_addr().unwrap().port();
        let down = closed_port("127.0.0.2");
        let metrics = Metrics::default();
        let first = table(up, down);
        let mut targets = Targets::default();
        targets.follow(&first);
        let backend = first.backends().next().unwrap().clone();
        assert_eq!(backend.endpoints.len(), 2, "{:?}", backend.endpoints);
        let by_port = |port: u16| backend.endpoints.iter().position(|e| e.addr.port() == port).unwrap();
        let (healthy, failing) = (by_port(up), by_port(down));
        let name = &backend.labels.backend;
        check(&targets, &backend.endpoints[healthy].addr, &metrics).await;
        assert!(metrics.haproxy.existing_server(name, &backend.endpoints[healthy].id).is_none(), "nothing to count");
        check(&targets, &backend.endpoints[failing].addr, &metrics).await;
        let counters = metrics.haproxy.existing_server(name, &backend.endpoints[failing].id).expect("a failure counts");
        assert_eq!(counters.check_failures.load(std::sync::atomic::Ordering::Relaxed), 1);

        // A rebuilt table's endpoint starts without counters; its next passing check finds the failure's.
        let rebuilt = table(up, down);
        let rebuilt_backend = rebuilt.backends().next().unwrap().clone();
        let again = rebuilt_backend.endpoints.iter().position(|e| e.addr.port() == down).unwrap();
        assert!(rebuilt_backend.endpoints[again].proxy.get().is_none());
        let found = check_counters(&rebuilt_backend, &rebuilt_backend.endpoints[again], true, &metrics).unwrap();
        assert!(Arc::ptr_eq(found, &counters), "the same server's counters, so its downtime spell can close");
    }

    #[tokio::test]
    async fn routes_sharing_a_pod_check_it_with_one_connect_recorded_for_each() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let up = listener.local_addr().unwrap().port();
        let table = Arc::new(build(&snapshot(0..3, up, closed_port("127.0.0.2"), None), &options(), 1));
        let mut targets = Targets::default();
        assert_eq!(targets.follow(&table).len(), 2, "one target per pod address, whatever the number of routes");
        let pod: SocketAddr = format!("127.0.0.1:{up}").parse().unwrap();
        assert_eq!(targets.members(&pod).count(), 3);
        assert_eq!(next_check_in(&targets, &pod), Duration::ZERO, "a new endpoint is due at once");

        check(&targets, &pod, &Metrics::default()).await;
        let accepted = std::iter::from_fn(|| listener.accept().ok()).count();
        assert_eq!(accepted, 1, "three routes' checks of one pod are one connect");
        for member in targets.members(&pod) {
            assert!(endpoint(member).health.next_check_in() > Duration::ZERO, "{} recorded it", member.0.route);
        }
        check(&targets, &pod, &Metrics::default()).await;
        assert_eq!(std::iter::from_fn(|| listener.accept().ok()).count(), 0, "not due again within the interval");
    }

    #[test]
    fn a_new_table_changes_the_targets_of_the_shards_it_rebuilt_only() {
        let (up, down, third) = (closed_port("127.0.0.1"), closed_port("127.0.0.2"), closed_port("127.0.0.3"));
        let before = snapshot(0..3, up, down, None);
        let first = Arc::new(build(&before, &options(), 1));
        let mut targets = Targets::default();
        targets.follow(&first);
        let pod: SocketAddr = format!("127.0.0.1:{up}").parse().unwrap();
        let new_pod: SocketAddr = format!("127.0.0.3:{third}").parse().unwrap();
        assert_eq!(targets.members(&pod).count(), 3);

        // r0 goes; the service gains a third pod: every remaining route's endpoints change.
        let after = snapshot(1..3, up, down, Some(third));
        let next = Arc::new(build_from(&after, &options(), 2, Some((&before, &first))));
        let arrived = targets.follow(&next);
        assert_eq!(arrived, [new_pod], "only the new address is scheduled");
        assert_eq!(targets.members(&pod).count(), 2);
        assert_eq!(targets.members(&new_pod).count(), 2);
        for member in targets.members(&pod) {
            let live = next.lookup(&format!("{}.example.com", member.0.route.name), "/").unwrap();
            assert!(Arc::ptr_eq(live, &member.0), "{} is checked through the live table's backend", member.0.route);
        }

        // Nothing changed: nothing arrives, nothing moves.
        let same = Arc::new(build_from(&after, &options(), 3, Some((&after, &next))));
        assert!(targets.follow(&same).is_empty());
        assert_eq!((targets.len(), targets.members(&pod).count()), (3, 2));
    }
}
