//! Compiling a `Snapshot` into a `RouteTable`: validate each route, give each host+path to the oldest route
//! that claims it, resolve its services to ready endpoints, and order each host's paths for matching.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

use super::endpoints::EndpointIndex;
use super::host::is_dns1123_subdomain;
use super::{Backend, Endpoint, HttpAction, PathRule, Rejection, RouteOutcome, RoutePath, RouteTable};
use crate::balance::{PassiveHealth, RoundRobin};
use crate::metrics::BackendLabels;
use crate::model::{ObjectKey, Route, Snapshot};

#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    pub allow_loopback_endpoints: bool,
}

/// Builds the table for `snapshot`. Pure: no I/O, safe to run on a blocking thread.
pub fn build(snapshot: &Snapshot, options: &BuildOptions, generation: u64) -> RouteTable {
    let index = EndpointIndex::new(snapshot, options.allow_loopback_endpoints);
    let mut hosts: HashMap<String, Vec<PathRule>> = HashMap::new();
    let mut outcomes = Vec::with_capacity(snapshot.routes.len());

    for (key, route) in routes_oldest_first(snapshot) {
        let host = route.spec.host.as_deref().unwrap_or("").trim().to_ascii_lowercase();
        let path = RoutePath::new(route.spec.path.as_deref());
        let result = admit(key, route, &host).and_then(|action| {
            let rules = hosts.entry(host.clone()).or_default();
            if let Some(owner) = rules.iter().find(|rule| rule.path == path) {
                return Err(Rejection {
                    reason: "HostAlreadyClaimed",
                    message: format!("route {} already exposes {host}{}", owner.backend.route, path.as_str()),
                });
            }
            let backend = backend_for(key, route, action, &index);
            rules.push(PathRule { path: path.clone(), backend: Arc::new(backend) });
            Ok(())
        });
        outcomes.push(RouteOutcome { key: key.clone(), host, path: path.as_str().to_string(), result });
    }

    hosts.retain(|_, rules| !rules.is_empty());
    for rules in hosts.values_mut() {
        rules.sort_by(|a, b| a.path.match_order(&b.path));
    }
    RouteTable { generation, hosts, outcomes }
}

/// Routes in admission order: oldest creationTimestamp first, then UID, then namespace/name (manifests often
/// carry neither timestamp nor UID; routes without a timestamp come after those with one).
fn routes_oldest_first(snapshot: &Snapshot) -> Vec<(&ObjectKey, &Route)> {
    let mut routes: Vec<_> = snapshot.routes.iter().collect();
    routes.sort_by(|(ka, a), (kb, b)| {
        let age = |r: &Route| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let uid = |r: &Route| r.metadata.uid.clone().unwrap_or_default();
        match (age(a), age(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| uid(a).cmp(&uid(b)))
        .then_with(|| ka.cmp(kb))
    });
    routes
}

/// Checks one route on its own and says what :80 does with it.
fn admit(key: &ObjectKey, route: &Route, host: &str) -> Result<HttpAction, Rejection> {
    let reject = |reason: &'static str, message: String| Err(Rejection { reason, message });
    if host.is_empty() {
        return reject("NoHostValue", format!("route {key} has no host value"));
    }
    if !is_dns1123_subdomain(host) {
        return reject("InvalidHost", format!("host {host:?} of route {key} is not a valid DNS subdomain"));
    }
    if route.spec.wildcard_policy.as_deref() == Some("Subdomain") {
        return reject("RouteNotAdmitted", format!("wildcard routes are not allowed (route {key})"));
    }
    let Some(tls) = &route.spec.tls else { return Ok(HttpAction::Forward) };
    match (tls.termination.as_str(), tls.insecure_edge_termination_policy.as_deref().unwrap_or("None")) {
        ("edge" | "reencrypt" | "passthrough", "Redirect") => Ok(HttpAction::RedirectToHttps),
        ("edge", "Allow") => Ok(HttpAction::Forward),
        ("edge" | "reencrypt" | "passthrough", "None" | "") => Ok(HttpAction::NotOnHttp),
        (termination, policy) => reject(
            "ExtendedValidationFailed",
            format!("route {key}: termination {termination:?} with insecureEdgeTerminationPolicy {policy:?}"),
        ),
    }
}

fn backend_for(key: &ObjectKey, route: &Route, action: HttpAction, index: &EndpointIndex<'_>) -> Backend {
    let prefix = if route.spec.tls.is_some() { "be_edge_http" } else { "be_http" };
    let target_port = route.spec.port.as_ref().map(|p| &p.target_port);
    let services = std::iter::once(&route.spec.to).chain(route.spec.alternate_backends.iter());
    let mut seen: HashMap<std::net::SocketAddr, ()> = HashMap::new();
    let mut endpoints = Vec::new();
    for service in services.filter(|s| s.weight.unwrap_or(1) > 0) {
        for found in index.ready(&ObjectKey::new(&key.namespace, &service.name), target_port) {
            if let Entry::Vacant(slot) = seen.entry(found.addr) {
                slot.insert(());
                endpoints.push(Endpoint { addr: found.addr, id: found.id, health: PassiveHealth::default() });
            }
        }
    }
    Backend {
        route: key.clone(),
        labels: BackendLabels {
            backend: format!("{prefix}:{}:{}", key.namespace, key.name).into(),
            namespace: key.namespace.as_str().into(),
            route: key.name.as_str().into(),
        },
        action,
        endpoints,
        balancer: RoundRobin::default(),
    }
}
