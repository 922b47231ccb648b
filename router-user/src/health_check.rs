//! Active TCP health checks (HAProxy's `check`), which feed each endpoint's health
//! ([`EndpointHealth`](crate::balance::EndpointHealth)): for every route with more than one endpoint, each
//! endpoint gets a TCP connect at the route's check interval (`router.openshift.io/haproxy.health.check.interval`,
//! default `ROUTER_BACKEND_CHECK_INTERVAL`, 5 s). One task per published table; it ends when the table is replaced.
//! Checks wait in a queue ordered by due time, so the task wakes only when one is due, whatever the number
//! of routes (a scan of every endpoint on a fixed tick cost the request path at 10,000 routes).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::metrics::{Metrics, ProxyCounters};
use crate::table::{Backend, Endpoint, RouteTable};

/// The longest the checker sleeps before it looks whether its table is still the live one.
const MAX_SLEEP: Duration = Duration::from_secs(1);
/// At most this many connects at once, so 10k routes do not open 10k sockets at the same moment.
const BATCH: usize = 256;
/// Upper bound of one check's connect.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Checks the endpoints of `table` until it is no longer live; failed checks are counted in `metrics`
/// (`haproxy_server_check_failures_total`).
pub fn spawn_checks(table: Weak<RouteTable>, metrics: Arc<Metrics>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let Some(live) = table.upgrade() else { return };
        let targets = checked_endpoints(&live);
        drop(live);
        let now = Instant::now();
        let mut queue: BinaryHeap<Reverse<(Instant, usize)>> = targets
            .iter()
            .enumerate()
            .map(|(i, (backend, endpoint))| Reverse((now + backend.endpoints[*endpoint].health.next_check_in(), i)))
            .collect();
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
            join_all(batch.iter().map(|&i| check(&targets[i].0, targets[i].1, &metrics))).await;
            let now = Instant::now();
            for index in batch {
                let (backend, endpoint) = &targets[index];
                queue.push(Reverse((now + backend.endpoints[*endpoint].health.next_check_in(), index)));
            }
        }
    })
}

/// (backend, endpoint index) of every endpoint that is checked: those of routes with two or more.
fn checked_endpoints(table: &RouteTable) -> Vec<(Arc<Backend>, usize)> {
    let mut targets = Vec::new();
    for backend in table.backends() {
        if backend.endpoints.len() >= 2 {
            targets.extend((0..backend.endpoints.len()).map(|index| (backend.clone(), index)));
        }
    }
    targets
}

async fn check(backend: &Backend, endpoint: usize, metrics: &Metrics) {
    let endpoint = &backend.endpoints[endpoint];
    // The state shared across rebuilds decides: a check another table's task just ran is not repeated.
    if !endpoint.health.check_due(backend.policy.health_check_interval) {
        return;
    }
    let timeout = backend.policy.health_check_interval.min(CHECK_TIMEOUT);
    let passed = matches!(tokio::time::timeout(timeout, TcpStream::connect(endpoint.addr)).await, Ok(Ok(_)));
    endpoint.health.record_check(passed);
    let Some(counters) = check_counters(backend, endpoint, passed, metrics) else { return };
    if !passed {
        tracing::debug!(endpoint = %endpoint.addr, route = %backend.route, "health check failed");
        counters.check_failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    // `haproxy_server_downtime_seconds_total` follows the checks' verdict (HAProxy's `downtime`).
    counters.observe_check_state(!endpoint.health.checked_down());
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

    /// A table of one route whose service has two pods: 127.0.0.1 on `up` (listening) and `down` (closed).
    fn table(up: u16, down: u16) -> RouteTable {
        let dir = tempfile::tempdir().unwrap();
        let yaml = format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: ns}}\nspec: {{ports: [{{name: http, port: 80}}]}}\n\
             ---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: web, namespace: ns}}\nsubsets: [{{addresses: [{{ip: \
             127.0.0.1}}], ports: [{{name: http, port: {up}}}]}}, {{addresses: [{{ip: 127.0.0.2}}], ports: [{{name: http, port: \
             {down}}}]}}]\n---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {{name: r, namespace: ns}}\n\
             spec: {{host: r.example.com, to: {{kind: Service, name: web}}}}\n"
        );
        std::fs::write(dir.path().join("all.yaml"), yaml).unwrap();
        let snapshot = ManifestSource::new(dir.path()).reload().snapshot;
        build(&snapshot, &BuildOptions { allow_loopback_endpoints: true, ..BuildOptions::default() }, 1)
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
        check(&backend, healthy, &metrics).await;
        assert!(metrics.haproxy.existing_server(name, &backend.endpoints[healthy].id).is_none(), "nothing to count");
        check(&backend, failing, &metrics).await;
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
}
