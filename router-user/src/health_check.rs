//! Active TCP health checks (HAProxy's `check`), which feed each endpoint's health
//! ([`EndpointHealth`](crate::balance::EndpointHealth)): for every route with more than one endpoint, each
//! endpoint gets a TCP connect at the route's check interval (`router.openshift.io/haproxy.health.check.interval`,
//! default `ROUTER_BACKEND_CHECK_INTERVAL`, 5 s). One task per published table; it ends when the table is replaced.
//! Checks wait in a queue ordered by due time, so the task wakes only when one is due, whatever the number
//! of routes (a scan of every endpoint on a fixed tick cost the request path at 10,000 routes).
//!
//! A connect to a pod's address answers for every route that sends to it, so the endpoints of one address are
//! checked together: one connect, its result recorded for each of them whose check is due. HAProxy connects
//! once per server of each backend; at 100,000 routes over four pods that is 400,000 connects per interval
//! (80,000 a second, more than a core), here four.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::balance::now_ms;
use crate::metrics::{Metrics, ProxyCounters};
use crate::table::{Backend, Endpoint, RouteTable};

/// The longest the checker sleeps before it looks whether its table is still the live one.
const MAX_SLEEP: Duration = Duration::from_secs(1);
/// At most this many connects at once, so 10k pods do not open 10k sockets at the same moment.
const BATCH: usize = 256;
/// Upper bound of one check's connect.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// One checked address and the endpoints (backend, endpoint index) that send to it.
struct Target {
    addr: SocketAddr,
    members: Vec<(Arc<Backend>, usize)>,
}

impl Target {
    fn endpoint(&self, member: usize) -> &Endpoint {
        let (backend, index) = &self.members[member];
        &backend.endpoints[*index]
    }

    /// How long until the first of its endpoints is due (one clock reading for all of them).
    fn next_check_in(&self) -> Duration {
        let first = (0..self.members.len()).map(|m| self.endpoint(m).health.next_check_at()).min().unwrap_or(0);
        Duration::from_millis(first.saturating_sub(now_ms()))
    }
}

/// Checks the endpoints of `table` until it is no longer live; failed checks are counted in `metrics`
/// (`haproxy_server_check_failures_total`).
pub fn spawn_checks(table: Weak<RouteTable>, metrics: Arc<Metrics>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let Some(live) = table.upgrade() else { return };
        let targets = checked_targets(&live);
        drop(live);
        let now = Instant::now();
        let mut queue: BinaryHeap<Reverse<(Instant, usize)>> =
            targets.iter().enumerate().map(|(i, target)| Reverse((now + target.next_check_in(), i))).collect();
        while let Some(Reverse((due, _))) = queue.peek().copied() {
            tokio::time::sleep_until(due.min(Instant::now() + MAX_SLEEP)).await;
            if table.strong_count() == 0 {
                return;
            }
            let now = Instant::now();
            let mut batch = Vec::new();
            while let Some(Reverse((due, index))) = queue.peek().copied() {
                if due > now || batch.len() == BATCH {
                    break;
                }
                queue.pop();
                batch.push(index);
            }
            join_all(batch.iter().map(|&i| check(&targets[i], &metrics))).await;
            let now = Instant::now();
            for index in batch {
                queue.push(Reverse((now + targets[index].next_check_in(), index)));
            }
        }
    })
}

/// Every checked endpoint (those of routes with two or more), grouped by address.
fn checked_targets(table: &RouteTable) -> Vec<Target> {
    let mut targets: Vec<Target> = Vec::new();
    let mut by_addr: HashMap<SocketAddr, usize> = HashMap::new();
    for backend in table.backends() {
        if backend.endpoints.len() < 2 {
            continue;
        }
        for (index, endpoint) in backend.endpoints.iter().enumerate() {
            let slot = *by_addr.entry(endpoint.addr).or_insert_with(|| {
                targets.push(Target { addr: endpoint.addr, members: Vec::new() });
                targets.len() - 1
            });
            targets[slot].members.push((backend.clone(), index));
        }
    }
    targets
}

/// One connect to `target`'s address when any of its endpoints is due, recorded for each that is.
async fn check(target: &Target, metrics: &Metrics) {
    // The state shared across rebuilds decides: a check another table's task just ran is not repeated.
    let now = now_ms();
    let due: Vec<usize> = (0..target.members.len())
        .filter(|&m| target.endpoint(m).health.check_due(now, target.members[m].0.policy.health_check_interval))
        .collect();
    let Some(interval) = due.iter().map(|&m| target.members[m].0.policy.health_check_interval).min() else {
        return;
    };
    let timeout = interval.min(CHECK_TIMEOUT);
    let passed = matches!(tokio::time::timeout(timeout, TcpStream::connect(target.addr)).await, Ok(Ok(_)));
    for member in due {
        let (backend, endpoint) = (&target.members[member].0, target.endpoint(member));
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
    use crate::source::manifest::ManifestSource;
    use crate::table::{build, BuildOptions};

    /// A table of `routes` routes (`r0`, `r1`, ...) over one service with two pods: 127.0.0.1 on `up`
    /// (listening) and 127.0.0.2 on `down` (closed).
    fn table_of(routes: usize, up: u16, down: u16) -> RouteTable {
        let dir = tempfile::tempdir().unwrap();
        let mut yaml = format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: ns}}\nspec: {{ports: [{{name: http, port: 80}}]}}\n\
             ---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: web, namespace: ns}}\nsubsets: [{{addresses: [{{ip: \
             127.0.0.1}}], ports: [{{name: http, port: {up}}}]}}, {{addresses: [{{ip: 127.0.0.2}}], ports: [{{name: http, port: \
             {down}}}]}}]\n"
        );
        for route in 0..routes {
            yaml.push_str(&format!(
                "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: r{route}, namespace: ns}}\n\
                 spec: {{host: r{route}.example.com, to: {{kind: Service, name: web}}}}\n"
            ));
        }
        std::fs::write(dir.path().join("all.yaml"), yaml).unwrap();
        let snapshot = ManifestSource::new(dir.path()).reload().snapshot;
        build(&snapshot, &BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() }, 1)
    }

    fn table(up: u16, down: u16) -> RouteTable {
        table_of(1, up, down)
    }

    /// The target of `table`'s only backend's endpoint `index` (that endpoint alone).
    fn alone(backend: &Arc<Backend>, index: usize) -> Target {
        Target { addr: backend.endpoints[index].addr, members: vec![(backend.clone(), index)] }
    }

    #[tokio::test]
    async fn a_passing_check_creates_no_counters_and_a_failing_one_does() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let up = listener.local_addr().unwrap().port();
        let closed = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        let down = closed.local_addr().unwrap().port();
        drop(closed);
        let metrics = Metrics::default();
        let first = table(up, down);
        let backend = first.backends().next().unwrap().clone();
        assert_eq!(backend.endpoints.len(), 2, "{:?}", backend.endpoints);
        let by_port = |port: u16| backend.endpoints.iter().position(|e| e.addr.port() == port).unwrap();
        let (healthy, failing) = (by_port(up), by_port(down));
        let name = &backend.labels.backend;
        check(&alone(&backend, healthy), &metrics).await;
        assert!(metrics.haproxy.existing_server(name, &backend.endpoints[healthy].id).is_none(), "nothing to count");
        check(&alone(&backend, failing), &metrics).await;
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
        let closed = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        let down = closed.local_addr().unwrap().port();
        drop(closed);
        let table = table_of(3, up, down);
        let targets = checked_targets(&table);
        assert_eq!(targets.len(), 2, "one target per pod address, whatever the number of routes");
        let pod = targets.iter().find(|t| t.addr.port() == up).unwrap();
        assert_eq!(pod.members.len(), 3);
        assert_eq!(pod.next_check_in(), Duration::ZERO, "a new endpoint is due at once");

        check(pod, &Metrics::default()).await;
        let accepted = std::iter::from_fn(|| listener.accept().ok()).count();
        assert_eq!(accepted, 1, "three routes' checks of one pod are one connect");
        for member in 0..pod.members.len() {
            assert!(pod.endpoint(member).health.next_check_in() > Duration::ZERO, "route {member} recorded it");
        }
        check(pod, &Metrics::default()).await;
        assert_eq!(std::iter::from_fn(|| listener.accept().ok()).count(), 0, "not due again within the interval");
    }
}
