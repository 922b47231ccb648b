//! Compiling a `Snapshot` into a `RouteTable`: admission decides which routes are served; each admitted
//! route gets its endpoints (weighted by OpenShift's arithmetic), its policy and its balancer; each host's
//! paths are ordered for matching.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::Notify;

use super::endpoints::EndpointIndex;
use super::tls_material::{RouteTls, TlsBuild};
use super::{Backend, Endpoint, HostRules, HttpAction, RoutePath, RouteTable, Termination};
use crate::admission::{admit, wildcard_domain, AdmissionSettings, Admitted};
use crate::balance::{endpoint_weights, service_weight, Balancer, EndpointHealth, InFlight};
use crate::metrics::{BackendLabels, RequestCounters};
use crate::model::{ObjectKey, Route, Snapshot};
use crate::policy::{md5_hex, RoutePolicy, RouterDefaults};
use crate::protection::{ConnectionSlots, RateLimiter};
use crate::tls::CertStore;

#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    pub allow_loopback_endpoints: bool,
    pub admission: AdmissionSettings,
    pub defaults: RouterDefaults,
    pub tls: TlsBuild,
}

/// Builds the table for `snapshot`. No I/O, safe to run on a blocking thread; certificates and reencrypt
/// connection pools are memoised in `options.tls` across builds.
pub fn build(snapshot: &Snapshot, options: &BuildOptions, generation: u64) -> RouteTable {
    let mut admission = admit(snapshot, &options.admission);
    let index = EndpointIndex::new(snapshot, options.allow_loopback_endpoints);
    let (mut http, mut https, mut passthrough) = (HostRules::default(), HostRules::default(), HostRules::default());
    let mut certs = options.tls.default_certificate.clone().map(CertStore::new);
    let mut certified_hosts = HashSet::new();
    let mut warnings = Vec::new();

    for admitted in &admission.admitted {
        // The extended validation runs last in OpenShift's chain: a route refused here has already claimed
        // its host.
        let tls = match options.tls.route(admitted, snapshot) {
            Ok(tls) => tls,
            Err(rejection) => {
                if let Some(outcome) = admission.outcomes.iter_mut().find(|o| &o.key == admitted.key) {
                    outcome.result = Err(rejection);
                }
                continue;
            }
        };
        let (host, wildcard) = (admitted.host.as_str(), admitted.wildcard);
        let certificate = tls.certificate.clone();
        let (backend, route_warnings) = backend_for(admitted, &index, &options.defaults, tls);
        warnings.extend(route_warnings.into_iter().map(|w| (admitted.key.clone(), w)));
        let backend = Arc::new(backend);
        match backend.termination {
            Some(Termination::Passthrough) => passthrough.insert(host, wildcard, backend.clone()),
            Some(Termination::Edge | Termination::Reencrypt) => {
                https.insert(host, wildcard, backend.clone());
                // The oldest route of a host serves its certificate.
                if let (Some(store), Some(key)) = (certs.as_mut(), certificate) {
                    if certified_hosts.insert((host.to_string(), wildcard)) {
                        match wildcard {
                            true => store.insert_wildcard(wildcard_domain(host), key),
                            false => store.insert_exact(host, key),
                        }
                    }
                }
            }
            None => {}
        }
        http.insert(host, wildcard, backend);
    }
    options.tls.sweep();
    for rules in [&mut http, &mut https, &mut passthrough] {
        rules.sort();
    }
    RouteTable {
        generation,
        http,
        https,
        passthrough,
        certs: certs.map(Arc::new),
        outcomes: admission.outcomes,
        warnings,
    }
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
    tls: RouteTls,
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
                h2c: endpoint.h2c,
            });
        }
    }

    let prefix = match tls.termination {
        None => "be_http",
        Some(Termination::Edge) => "be_edge_http",
        Some(Termination::Reencrypt) => "be_secure",
        Some(Termination::Passthrough) => "be_tcp",
    };
    let backend = Backend {
        route: key.clone(),
        path: RoutePath::new(route.spec.path.as_deref()),
        labels: BackendLabels {
            backend: format!("{prefix}:{}:{}", key.namespace, key.name).into(),
            namespace: key.namespace.as_str().into(),
            route: key.name.as_str().into(),
        },
        requests: RequestCounters::default(),
        action: http_action(route),
        termination: tls.termination,
        reencrypt: tls.reencrypt,
        balancer: Balancer::new(policy.balance, &endpoints),
        limiter: policy.rate_limits.is_active().then(|| RateLimiter::new(policy.rate_limits)),
        endpoints,
        policy,
    };
    (backend, warnings)
}
