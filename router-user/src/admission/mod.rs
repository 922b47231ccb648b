//! Admission: which routes this router serves, computed over the whole state like the OpenShift router's
//! plugin chain (sharding -> host -> HostAdmitter -> UniqueHost -> extended validation), oldest route first.
//! Every route of this router's shard ends with an outcome: admitted, or rejected with OpenShift's reason.

mod claims;
mod dns1123;
mod host;
mod host_index;
mod selector;
#[cfg(test)]
mod single_label_tests;
#[cfg(test)]
mod tls_conflict_tests;
mod validation;

use std::sync::Arc;

use crate::model::{same_conditions, ObjectKey, RequestMatch, Route, Snapshot};

pub use dns1123::is_dns1123_subdomain;
pub use host::{effective_host, in_domain_list, serves_subdomain, wildcard_domain};
pub use selector::{LabelSelector, SelectorError};

/// Admission settings (`ROUTER_*` variables).
#[derive(Clone, Debug, Default)]
pub struct AdmissionSettings {
    pub allow_wildcard_routes: bool,
    pub disable_namespace_ownership_check: bool,
    pub allowed_domains: Vec<String>,
    pub denied_domains: Vec<String>,
    /// `ROUTER_DOMAIN`: hosts for routes that only set `spec.subdomain`.
    pub router_domain: Option<String>,
    /// `ROUTER_SUBDOMAIN`: `${name}`/`${namespace}` template for routes without a host.
    pub hostname_template: Option<String>,
    pub override_hostname: bool,
    pub override_domains: Vec<String>,
    /// `ROUTE_LABELS`: only routes whose labels match are this router's.
    pub route_selector: LabelSelector,
    /// `NAMESPACE_LABELS`: only routes in namespaces whose labels match are this router's.
    pub namespace_selector: LabelSelector,
}

/// Why a route is not served, in the OpenShift router's words (`status.ingress[].conditions[].reason`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rejection {
    pub reason: &'static str,
    pub message: String,
}

impl Rejection {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self { reason, message: message.into() }
    }
}

/// The outcome for one route of this router's shard.
#[derive(Clone, Debug)]
pub struct RouteOutcome {
    pub key: ObjectKey,
    pub host: String,
    pub path: String,
    /// `None` or `Subdomain`.
    pub wildcard_policy: &'static str,
    /// What a route made from an HTTPRoute match asks beyond host and path (for `/debug/routes`).
    pub request_match: Option<Arc<RequestMatch>>,
    pub result: Result<(), Rejection>,
}

/// A route that passed admission, with its effective host.
#[derive(Clone, Debug)]
pub struct Admitted<'a> {
    pub key: &'a ObjectKey,
    pub route: &'a Route,
    /// Lowercased host (from spec.host, spec.subdomain or the template).
    pub host: String,
    pub wildcard: bool,
}

impl Admitted<'_> {
    pub fn raw_path(&self) -> &str {
        self.route.spec.path.as_deref().unwrap_or("")
    }

    pub fn namespace(&self) -> &str {
        &self.key.namespace
    }

    /// Whether both routes ask the same of a request beyond host and path (see `RequestMatch`).
    pub fn same_conditions(&self, other: &Admitted<'_>) -> bool {
        same_conditions(self.route.spec.request_match.as_deref(), other.route.spec.request_match.as_deref())
    }
}

pub struct Admission<'a> {
    /// Admitted routes, oldest first.
    pub admitted: Vec<Admitted<'a>>,
    /// Every route of the shard, in the order they were considered.
    pub outcomes: Vec<RouteOutcome>,
}

/// Runs the whole chain over `snapshot`.
pub fn admit<'a>(snapshot: &'a Snapshot, settings: &AdmissionSettings) -> Admission<'a> {
    admit_routes(snapshot, oldest_first(snapshot), settings)
}

/// Runs the whole chain over `routes` (oldest first) of `snapshot`: a set that shares no host (nor, with
/// wildcard routes allowed, any wildcard domain) with the snapshot's other routes is admitted as it would be
/// among them.
pub fn admit_routes<'a>(
    snapshot: &'a Snapshot,
    routes: Vec<(&'a ObjectKey, &'a Route)>,
    settings: &AdmissionSettings,
) -> Admission<'a> {
    let mut outcomes = Vec::new();
    let rejected = |candidate: &Admitted<'_>, rejection: Rejection, outcomes: &mut Vec<RouteOutcome>| {
        outcomes.push(outcome(candidate, Err(rejection)));
    };

    let mut candidates = Vec::new();
    for (key, route) in routes {
        if !in_shard(snapshot, key, route, settings) {
            continue;
        }
        let host = effective_host(route, settings);
        let wildcard = route.spec.wildcard_policy.as_deref() == Some("Subdomain");
        let candidate = Admitted { key, route, host, wildcard };
        match admission_check(&candidate, settings) {
            Ok(()) => candidates.push(candidate),
            Err(rejection) => rejected(&candidate, rejection, &mut outcomes),
        }
    }

    let candidates = if settings.allow_wildcard_routes {
        let (kept, refused) = claims::resolve(candidates, settings.disable_namespace_ownership_check);
        for (candidate, rejection) in refused {
            rejected(&candidate, rejection, &mut outcomes);
        }
        kept
    } else {
        candidates
    };

    let mut valid_hosts = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        match validation::host(&candidate) {
            Ok(()) => valid_hosts.push(candidate),
            Err(rejection) => rejected(&candidate, rejection, &mut outcomes),
        }
    }

    let (active, displaced) = host_index::resolve(valid_hosts, !settings.disable_namespace_ownership_check);
    for (candidate, rejection) in displaced {
        rejected(&candidate, rejection, &mut outcomes);
    }

    let mut admitted = Vec::with_capacity(active.len());
    for candidate in active {
        match validation::spec(&candidate) {
            Ok(()) => {
                outcomes.push(outcome(&candidate, Ok(())));
                admitted.push(candidate);
            }
            Err(rejection) => rejected(&candidate, rejection, &mut outcomes),
        }
    }
    Admission { admitted, outcomes }
}

fn outcome(candidate: &Admitted<'_>, result: Result<(), Rejection>) -> RouteOutcome {
    RouteOutcome {
        key: candidate.key.clone(),
        host: candidate.host.clone(),
        path: candidate.raw_path().to_string(),
        wildcard_policy: if candidate.wildcard { "Subdomain" } else { "None" },
        request_match: candidate.route.spec.request_match.clone(),
        result,
    }
}

/// Routes in the OpenShift router's order: creationTimestamp (absent = oldest), then UID, then
/// namespace/name so that manifests without either still order deterministically. The snapshot lists them by
/// namespace/name already, and the sort is stable: ties keep that order without comparing keys.
pub fn oldest_first(snapshot: &Snapshot) -> Vec<(&ObjectKey, &Route)> {
    sort_oldest_first(snapshot.routes.iter().map(|(key, route)| (key, &**route)).collect())
}

/// `routes` (in namespace/name order) in the OpenShift router's order, as `oldest_first`.
pub fn sort_oldest_first<'a>(mut routes: Vec<(&'a ObjectKey, &'a Route)>) -> Vec<(&'a ObjectKey, &'a Route)> {
    fn age(route: &Route) -> Option<&k8s_openapi::jiff::Timestamp> {
        route.metadata.creation_timestamp.as_ref().map(|t| &t.0)
    }
    fn uid(route: &Route) -> &str {
        route.metadata.uid.as_deref().unwrap_or_default()
    }
    routes.sort_by(|(_, a), (_, b)| age(a).cmp(&age(b)).then_with(|| uid(a).cmp(uid(b))));
    routes
}

fn in_shard(snapshot: &Snapshot, key: &ObjectKey, route: &Route, settings: &AdmissionSettings) -> bool {
    if !settings.route_selector.matches(route.metadata.labels.as_ref()) {
        return false;
    }
    if settings.namespace_selector.is_empty() {
        return true;
    }
    let namespace = snapshot.namespaces.get(&key.namespace);
    namespace.is_some_and(|ns| settings.namespace_selector.matches(ns.metadata.labels.as_ref()))
}

/// The OpenShift router's admission function: denied/allowed domains, then the wildcard policy.
fn admission_check(candidate: &Admitted<'_>, settings: &AdmissionSettings) -> Result<(), Rejection> {
    let host = candidate.host.as_str();
    if !host.is_empty() {
        if in_domain_list(host, &settings.denied_domains) {
            return Err(Rejection::new("RouteNotAdmitted", "host in list of denied domains"));
        }
        if !settings.allowed_domains.is_empty() && !in_domain_list(host, &settings.allowed_domains) {
            return Err(Rejection::new("RouteNotAdmitted", "host not in the allowed list of domains"));
        }
    }
    match candidate.route.spec.wildcard_policy.as_deref() {
        None | Some("") | Some("None") => Ok(()),
        Some("Subdomain") if settings.allow_wildcard_routes => Ok(()),
        Some("Subdomain") => Err(Rejection::new("RouteNotAdmitted", "wildcard routes are not allowed")),
        Some(other) => Err(Rejection::new("RouteNotAdmitted", format!("unknown wildcard policy {other}"))),
    }
}
