//! Compiling a `Snapshot` into a `RouteTable`: admission decides which routes are served; each admitted
//! route gets its endpoints (weighted by OpenShift's arithmetic), its policy and its balancer; each host's
//! paths are ordered for matching.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::Notify;

use super::endpoints::EndpointIndex;
use super::{Backend, Endpoint, HttpAction, PathRule, RoutePath, RouteTable};
use crate::admission::{admit, wildcard_domain, AdmissionSettings, Admitted};
use crate::balance::{endpoint_weights, service_weight, Balancer, EndpointHealth, InFlight};
use crate::metrics::BackendLabels;
use crate::model::{ObjectKey, Route, Snapshot};
use crate::policy::{md5_hex, RoutePolicy, RouterDefaults};
use crate::protection::{ConnectionSlots, RateLimiter};

#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    pub allow_loopback_endpoints: bool,
    pub admission: AdmissionSettings,
    pub defaults: RouterDefaults,
}

/// Builds the table for `snapshot`. Pure: no I/O, safe to run on a blocking thread.
pub fn build(snapshot: &Snapshot, options: &BuildOptions, generation: u64) -> RouteTable {
    let admission = admit(snapshot, &options.admission);
    let index = EndpointIndex::new(snapshot, options.allow_loopback_endpoints);
    let mut hosts: HashMap<String, Vec<PathRule>> = HashMap::new();
    let mut wildcards: HashMap<String, Vec<PathRule>> = HashMap::new();
    let mut warnings = Vec::new();

    for admitted in &admission.admitted {
        let (backend, route_warnings) = backend_for(admitted, &index, &options.defaults);
        warnings.extend(route_warnings.into_iter().map(|w| (admitted.key.clone(), w)));
        let rules = if admitted.wildcard {
            wildcards.entry(wildcard_domain(&admitted.host).to_string()).or_default()
        } else {
            hosts.entry(admitted.host.clone()).or_default()
        };
        // Two admitted routes can differ in raw path ("" and "/") yet match the same requests: the older
        // one, added first, keeps them.
        if !rules.iter().any(|rule| rule.path == backend.path) {
            rules.push(PathRule { path: backend.path.clone(), backend: Arc::new(backend) });
        }
    }
    for rules in hosts.values_mut().chain(wildcards.values_mut()) {
        rules.sort_by(|a, b| a.path.match_order(&b.path));
    }
    RouteTable { generation, hosts, wildcards, outcomes: admission.outcomes, warnings }
}

/// What :80 does with a route, from its TLS settings (admission already refused invalid combinations).
fn http_action(route: &Route) -> HttpAction {
    let Some(tls) = &route.spec.tls else { return HttpAction::Forward };
    match (tls.termination.as_str(), tls.insecure_edge_termination_policy.as_deref().unwrap_or("None")) {
        (_, "Redirect") => HttpAction::RedirectToHttps,
        ("edge", "Allow") => HttpAction::Forward,
        _ => HttpAction::NotOnHttp,
    }
}

fn backend_for(
    admitted: &Admitted<'_>,
    index: &EndpointIndex<'_>,
    defaults: &RouterDefaults,
) -> (Backend, Vec<String>) {
    let (key, route) = (admitted.key, admitted.route);
    let target_port = route.spec.port.as_ref().map(|p| &p.target_port);
    let services: Vec<(i32, Vec<_>)> = std::iter::once(&route.spec.to)
        .chain(route.spec.alternate_backends.iter().take(3))
        .map(|service| {
            let found = index.ready(&ObjectKey::new(&key.namespace, &service.name), target_port);
            (service_weight(service.weight), found)
        })
        .collect();
    let weighted_services = services.iter().filter(|(weight, _)| *weight > 0).count();
    let (policy, warnings) = RoutePolicy::build(key, route, weighted_services, defaults);

    let counts: Vec<(i32, usize)> = services.iter().map(|(weight, found)| (*weight, found.len())).collect();
    let weights = endpoint_weights(&counts);
    let freed = Arc::new(Notify::new());
    let mut seen = HashSet::new();
    let mut endpoints = Vec::new();
    for ((_, found), weight) in services.into_iter().zip(weights) {
        for endpoint in found.into_iter().filter(|e| seen.insert(e.addr)) {
            endpoints.push(Endpoint {
                addr: endpoint.addr,
                cookie: md5_hex(&endpoint.id),
                id: endpoint.id,
                weight,
                health: EndpointHealth::default(),
                in_flight: InFlight::default(),
                slots: policy.pod_max_connections.map(|max| ConnectionSlots::new(max, freed.clone())),
            });
        }
    }

    let prefix = if route.spec.tls.is_some() { "be_edge_http" } else { "be_http" };
    let backend = Backend {
        route: key.clone(),
        path: RoutePath::new(route.spec.path.as_deref()),
        labels: BackendLabels {
            backend: format!("{prefix}:{}:{}", key.namespace, key.name).into(),
            namespace: key.namespace.as_str().into(),
            route: key.name.as_str().into(),
        },
        action: http_action(route),
        balancer: Balancer::new(policy.balance, &endpoints),
        limiter: policy.rate_limits.is_active().then(|| RateLimiter::new(policy.rate_limits)),
        endpoints,
        policy,
    };
    (backend, warnings)
}
