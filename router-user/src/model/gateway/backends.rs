//! A rule's `backendRefs` as a route's `to` and `alternateBackends`: Services of the route's namespace only
//! (ReferenceGrants are not read), at most four (OpenShift's limit: `to` plus three alternates), weights
//! scaled into OpenShift's 0..256 when any is larger, and the Service port resolved to the endpoint port
//! name or number as for Ingresses.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::super::gateway_api::BackendRef;
use super::super::gateway_api::Problem;
use crate::model::{ObjectKey, RoutePort, RouteTargetReference, Snapshot};

/// Backends of one route: `to`, the alternates, and the endpoint port they all use.
pub struct Backends {
    pub to: RouteTargetReference,
    pub alternates: Vec<RouteTargetReference>,
    pub port: Option<RoutePort>,
}

/// Most backends a route can have.
const MOST_BACKENDS: usize = 4;
/// OpenShift's largest weight.
const MOST_WEIGHT: i64 = 256;

/// The backends, and references that did not resolve (a missing Service stays a backend, so its share of the
/// traffic fails as the Gateway API asks; a reference to another kind or namespace is left out). `Err` when
/// the rule cannot be served at all.
pub fn backends(
    namespace: &str,
    refs: &[BackendRef],
    snapshot: &Snapshot,
) -> (Result<Backends, Problem>, Vec<Problem>) {
    let mut unresolved = Vec::new();
    let mut kept: Vec<(&BackendRef, Option<IntOrString>)> = Vec::new();
    for backend in refs {
        let core = backend.group.as_deref().is_none_or(|g| g.is_empty() || g == "core");
        if !core || backend.kind.as_deref().is_some_and(|k| k != "Service") {
            let kind = backend.kind.as_deref().unwrap_or("Service");
            unresolved
                .push(Problem::new("InvalidKind", format!("backend {} of kind {kind}: only Services", backend.name)));
            continue;
        }
        if backend.namespace.as_deref().is_some_and(|ns| ns != namespace) {
            let message = format!("backend {} in another namespace: ReferenceGrants are not read", backend.name);
            unresolved.push(Problem::new("RefNotPermitted", message));
            continue;
        }
        let port = match snapshot.services.get(&ObjectKey::new(namespace, &backend.name)) {
            None => {
                unresolved
                    .push(Problem::new("BackendNotFound", format!("Service {namespace}/{} not found", backend.name)));
                None
            }
            Some(service) => {
                let port = backend.port.and_then(|n| service.ports.iter().find(|p| p.port == n));
                match (backend.port, port) {
                    (Some(number), None) => {
                        let message = format!("Service {namespace}/{} has no port {number}", backend.name);
                        unresolved.push(Problem::new("BackendNotFound", message));
                        None
                    }
                    (_, Some(port)) => Some(port.route_target_port()),
                    (None, None) => None,
                }
            }
        };
        kept.push((backend, port));
    }
    (choose(kept), unresolved)
}

fn choose(kept: Vec<(&BackendRef, Option<IntOrString>)>) -> Result<Backends, Problem> {
    if kept.is_empty() {
        return Err(Problem::new("UnsupportedValue", "a rule without usable backendRefs is not served"));
    }
    if kept.len() > MOST_BACKENDS {
        return Err(Problem::new("UnsupportedValue", format!("more than {MOST_BACKENDS} backendRefs in one rule")));
    }
    if kept.iter().any(|(backend, _)| !backend.filters.is_empty()) {
        return Err(Problem::new("UnsupportedValue", "filters on a backendRef are not served"));
    }
    let ports: Vec<&IntOrString> = kept.iter().filter_map(|(_, port)| port.as_ref()).collect();
    if ports.windows(2).any(|pair| pair[0] != pair[1]) {
        return Err(Problem::new("UnsupportedValue", "the backends of one rule must resolve to one endpoint port"));
    }
    let port = ports.first().map(|&target_port| RoutePort { target_port: target_port.clone() });
    let weights: Vec<i64> = kept.iter().map(|(backend, _)| i64::from(backend.weight.unwrap_or(1).max(0))).collect();
    let largest = weights.iter().copied().max().unwrap_or(0);
    let mut targets = kept.iter().zip(weights).map(|((backend, _), weight)| {
        let scaled = if largest > MOST_WEIGHT && weight > 0 { (weight * MOST_WEIGHT / largest).max(1) } else { weight };
        let weight = i32::try_from(scaled).unwrap_or(i32::MAX);
        RouteTargetReference { kind: "Service".into(), name: backend.name.clone(), weight: Some(weight) }
    });
    let to = targets.next().expect("at least one backend");
    Ok(Backends { to, alternates: targets.collect(), port })
}
