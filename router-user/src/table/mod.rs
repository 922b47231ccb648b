//! The compiled route table: built off the request path from a whole `Snapshot`, immutable once built, and
//! published atomically (`TableHandle`), so requests never wait for a rebuild and never see half a table.

mod build;
#[cfg(test)]
mod conformance_tests;
mod endpoints;
mod host;
mod path;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::balance::{PassiveHealth, RoundRobin};
use crate::metrics::BackendLabels;
use crate::model::ObjectKey;

pub use build::{build, BuildOptions};
pub use endpoints::{is_routable, ServiceEndpoint, SERVICE_NAME_LABEL};
pub use host::{is_dns1123_subdomain, normalize_request_host};
pub use path::RoutePath;

/// The live table, swapped whole on every rebuild.
pub type TableHandle = Arc<ArcSwap<RouteTable>>;

/// What the :80 listener does with a request that matched a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpAction {
    /// Proxy to the route's endpoints.
    Forward,
    /// `insecureEdgeTerminationPolicy: Redirect`: 302 to the same URL on https.
    RedirectToHttps,
    /// A TLS route with `insecureEdgeTerminationPolicy: None`: it owns its host+path, but :80 answers 503.
    NotOnHttp,
}

#[derive(Debug)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// OpenShift server id, e.g. `pod:web-1:web:http:10.1.0.5:8080`.
    pub id: String,
    pub health: PassiveHealth,
}

/// One admitted route as the HTTP listener serves it.
#[derive(Debug)]
pub struct Backend {
    pub route: ObjectKey,
    /// Backend name `be_http:<ns>:<name>` (or `be_edge_http:`), namespace and route name, for metrics.
    pub labels: BackendLabels,
    pub action: HttpAction,
    pub endpoints: Vec<Endpoint>,
    balancer: RoundRobin,
}

impl Backend {
    /// The next endpoint in rotation that is up and not in `tried`; when every untried endpoint is marked
    /// down, one of those is still returned (a pod that came back should get traffic without waiting).
    pub fn pick(&self, tried: &[usize]) -> Option<usize> {
        let count = self.endpoints.len();
        let untried = |i: usize| !tried.contains(&i);
        self.balancer
            .pick(count, |i| untried(i) && self.endpoints[i].health.is_up())
            .or_else(|| self.balancer.pick(count, untried))
    }
}

/// Why a route is not served, in the OpenShift router's words (`status.ingress[].conditions[].reason`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rejection {
    pub reason: &'static str,
    pub message: String,
}

/// Every route of the snapshot with the outcome of compiling it.
#[derive(Clone, Debug)]
pub struct RouteOutcome {
    pub key: ObjectKey,
    pub host: String,
    pub path: String,
    pub result: Result<(), Rejection>,
}

#[derive(Debug, Default)]
pub struct RouteTable {
    pub generation: u64,
    /// Exact host -> path rules in match order (longest prefix first).
    hosts: HashMap<String, Vec<PathRule>>,
    pub outcomes: Vec<RouteOutcome>,
}

#[derive(Debug)]
struct PathRule {
    path: RoutePath,
    backend: Arc<Backend>,
}

impl RouteTable {
    /// The route serving `host` (already normalised) and `path` (no query string), if any.
    pub fn lookup(&self, host: &str, path: &str) -> Option<&Arc<Backend>> {
        let rules = self.hosts.get(host)?;
        rules.iter().find(|rule| rule.path.matches(path)).map(|rule| &rule.backend)
    }

    pub fn routes_admitted(&self) -> usize {
        self.outcomes.iter().filter(|o| o.result.is_ok()).count()
    }

    pub fn routes_rejected(&self) -> usize {
        self.outcomes.len() - self.routes_admitted()
    }
}
