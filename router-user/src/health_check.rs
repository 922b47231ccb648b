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

use crate::metrics::Metrics;
use crate::table::{Backend, RouteTable};

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
    let counters = metrics.haproxy.server(&backend.labels.backend, &endpoint.id, &endpoint.proxy);
    if !passed {
        tracing::debug!(endpoint = %endpoint.addr, route = %backend.route, "health check failed");
        counters.check_failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    endpoint.health.record_check(passed);
    // `haproxy_server_downtime_seconds_total` follows the checks' verdict (HAProxy's `downtime`).
    counters.observe_check_state(!endpoint.health.checked_down());
}
