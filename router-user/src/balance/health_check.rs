//! Active TCP health checks: for every route with more than one endpoint, each endpoint gets a TCP connect
//! at the route's check interval (`router.openshift.io/haproxy.health.check.interval`, default
//! `ROUTER_BACKEND_CHECK_INTERVAL`, 5 s). One task per published table; it ends when the table is replaced.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::join_all;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::table::{Backend, RouteTable};

/// How often the checker looks for due checks.
const TICK: Duration = Duration::from_millis(250);
/// At most this many connects at once, so 10k routes do not open 10k sockets in one tick.
const BATCH: usize = 256;
/// Upper bound of one check's connect.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

pub fn spawn_checks(table: Weak<RouteTable>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Some(live) = table.upgrade() else { return };
            let due = due_checks(&live);
            drop(live);
            for batch in due.chunks(BATCH) {
                join_all(batch.iter().map(|(backend, endpoint)| check(backend, *endpoint))).await;
            }
            tokio::time::sleep(TICK).await;
        }
    })
}

/// (backend, endpoint index) of every check that is due now.
fn due_checks(table: &RouteTable) -> Vec<(Arc<Backend>, usize)> {
    let mut due = Vec::new();
    for backend in table.backends() {
        if backend.endpoints.len() < 2 {
            continue;
        }
        for (index, endpoint) in backend.endpoints.iter().enumerate() {
            if endpoint.health.check_due(backend.policy.health_check_interval) {
                due.push((backend.clone(), index));
            }
        }
    }
    due
}

async fn check(backend: &Backend, endpoint: usize) {
    let endpoint = &backend.endpoints[endpoint];
    let timeout = backend.policy.health_check_interval.min(CHECK_TIMEOUT);
    let passed = matches!(tokio::time::timeout(timeout, TcpStream::connect(endpoint.addr)).await, Ok(Ok(_)));
    if !passed {
        tracing::debug!(endpoint = %endpoint.addr, route = %backend.route, "health check failed");
    }
    endpoint.health.record_check(passed);
}
