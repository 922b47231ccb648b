//! The live table's backends and servers as the `haproxy_*` exporter needs them: every route's backend once
//! (an edge route is in both the :80 and :443 rules), passthrough backends, and HAProxy's `openshift_default`
//! backend, which answers requests that match no route.

use std::collections::HashSet;

use crate::metrics::haproxy::{BackendView, ServerView, Topology};
use crate::table::{Backend, RouteTable, Termination};

pub fn topology(table: &RouteTable) -> Topology {
    let mut seen = HashSet::new();
    let mut backends = Vec::new();
    let all = table.http().backends().chain(table.https().backends()).chain(table.passthrough().backends());
    for backend in all {
        if seen.insert(backend.labels.backend.clone()) {
            backends.push(view(backend));
        }
    }
    backends.push(BackendView { name: "openshift_default".into(), http: true, servers: Vec::new() });
    Topology { backends }
}

fn view(backend: &Backend) -> BackendView {
    let servers = backend
        .endpoints
        .iter()
        .map(|endpoint| ServerView {
            id: endpoint.id.to_string(),
            up: endpoint.health.is_up(),
            in_flight: u64::from(endpoint.in_flight.get()),
        })
        .collect();
    let http = backend.termination != Some(Termination::Passthrough);
    BackendView { name: backend.labels.backend.clone(), http, servers }
}
