//! The compiled route table: built off the request path from a whole `Snapshot`, immutable once built, and
//! published atomically (`TableHandle`), so requests never wait for a rebuild and never see half a table.
//! Lookups go through a host index (exact hosts, then one-label wildcard domains), never a scan of routes.

mod build;
mod changes;
mod client_auth_hosts;
mod client_tls;
#[cfg(test)]
mod client_tls_tests;
mod conditions;
#[cfg(test)]
mod conditions_tests;
#[cfg(test)]
mod conformance_tests;
mod endpoints;
mod host;
mod path;
mod plan;
mod rules;
#[cfg(test)]
mod shard_tests;
mod shards;
mod slice_index;
mod tls_material;
#[cfg(test)]
mod tls_tests;
mod views;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use crate::tls::CertStore;
use crate::tls::{ReencryptUpstream, RouteClientAuth};

use arc_swap::ArcSwap;

use crate::balance::{Balancer, Candidate, EndpointHealth, InFlight};
use crate::metrics::{BackendLabels, CountersSlot, RequestCounters};
use crate::model::ObjectKey;
use crate::policy::{CookieValue, RoutePolicy};
use crate::protection::{ConnectionSlots, RateLimiter};

pub use crate::admission::{Rejection, RouteOutcome};
pub use build::{build, build_from, BuildOptions};
pub use client_auth_hosts::ClientAuthHosts;
pub use client_tls::CLIENT_TLS_VALIDATION_FAILED;
pub use conditions::{Conditions, RequestFacts};
pub use endpoints::{is_routable, ServiceEndpoint};
pub use host::{lowercase, normalize_request_host};
pub use path::RoutePath;
pub use rules::HostRules;
pub use shards::Shard;
use shards::ShardBy;
use slice_index::SliceIndex;
pub use tls_material::{RouteTls, TlsBuild};
pub use views::Rules;
use views::RulesKind;

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

/// Where a TLS route's connections are terminated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// By the router; plain HTTP to the pod.
    Edge,
    /// By the router, then TLS again to the pod.
    Reencrypt,
    /// By the pod: the router relays TCP chosen by SNI.
    Passthrough,
}

impl Termination {
    pub fn parse(value: &str) -> Option<Termination> {
        match value {
            "edge" => Some(Termination::Edge),
            "reencrypt" => Some(Termination::Reencrypt),
            "passthrough" => Some(Termination::Passthrough),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub struct Endpoint {
    pub addr: SocketAddr,
    /// OpenShift server id, e.g. `pod:web-1:web:http:10.1.0.5:8080`.
    pub id: Arc<str>,
    /// Sticky-cookie value naming this endpoint (hex MD5 of the id).
    pub cookie: CookieValue,
    /// Balancing weight; 0 takes no new clients but keeps sticky ones.
    pub weight: u32,
    pub health: EndpointHealth,
    pub in_flight: InFlight,
    /// `pod-concurrent-connections`: the cap on requests in flight, when set.
    pub slots: Option<ConnectionSlots>,
    /// The endpoint port's appProtocol is `h2c` (or `kubernetes.io/h2c`): HTTP/2 without TLS to the pod.
    pub h2c: bool,
    /// Its `haproxy_server_*` counters, resolved on first use.
    pub proxy: CountersSlot,
}

impl Candidate for Endpoint {
    fn weight(&self) -> u32 {
        self.weight
    }

    fn active(&self) -> u32 {
        self.in_flight.get()
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// One admitted route as the HTTP listener serves it.
#[derive(Debug)]
pub struct Backend {
    pub route: ObjectKey,
    /// The route's path, as its requests are matched.
    pub path: RoutePath,
    /// What a request must meet besides host and path (routes made from HTTPRoute matches only).
    pub conditions: Option<Box<Conditions>>,
    /// Backend name `be_http:<ns>:<name>` (or `be_edge_http:`), namespace and route name, for metrics.
    pub labels: BackendLabels,
    /// This backend's request counters (the metric with its labels resolved once).
    pub requests: RequestCounters,
    pub action: HttpAction,
    /// `spec.tls.termination`; `None` for plain HTTP routes.
    pub termination: Option<Termination>,
    /// Reencrypt routes: how the router speaks TLS to the pods.
    pub reencrypt: Option<Arc<ReencryptUpstream>>,
    /// Edge and reencrypt routes annotated `router.openshift.io/client-tls-ca`: their requests must come on a
    /// connection whose handshake made this same check.
    pub client_auth: Option<Arc<RouteClientAuth>>,
    pub endpoints: Vec<Endpoint>,
    pub policy: RoutePolicy,
    /// Per-client limits, when the route asks for them.
    pub limiter: Option<RateLimiter>,
    balancer: Balancer,
}

impl Backend {
    /// The next endpoint for `client` that is up, has weight and is not in `tried`; when every such endpoint
    /// is marked down, one of those is still returned (a pod that came back should not wait for a check).
    pub fn pick(&self, client: IpAddr, tried: &[usize]) -> Option<usize> {
        let untried = |i: usize| !tried.contains(&i);
        self.balancer
            .pick(&self.endpoints, client, &|i| {
                untried(i) && self.endpoints[i].health.is_up() && has_slot(&self.endpoints[i])
            })
            .or_else(|| self.balancer.pick(&self.endpoints, client, &|i| untried(i) && has_slot(&self.endpoints[i])))
    }

    /// The endpoint a sticky cookie names, if it still exists and is up (weight 0 included).
    pub fn by_cookie(&self, value: &str) -> Option<usize> {
        self.endpoints.iter().position(|e| e.cookie.as_str() == value && e.health.is_up())
    }

    /// Takes over the health of `old`'s endpoints (the same route's previous backend) with the same server id.
    fn inherit_health(&self, old: &Backend) {
        for endpoint in &self.endpoints {
            if let Some(old_endpoint) = old.endpoints.iter().find(|e| e.id == endpoint.id) {
                endpoint.health.inherit(&old_endpoint.health);
            }
        }
    }

    /// True when some endpoint with weight could take a request.
    pub fn has_weighted_endpoints(&self) -> bool {
        self.endpoints.iter().any(|e| e.weight > 0)
    }
}

fn has_slot(endpoint: &Endpoint) -> bool {
    endpoint.slots.as_ref().is_none_or(ConnectionSlots::available)
}

#[derive(Debug, Default)]
pub struct RouteTable {
    pub generation: u64,
    /// What a host's shard is chosen by (from the admission settings it was built with).
    shard_by: ShardBy,
    /// `SHARDS` shards (none in the empty table before the first build), each shared with the tables before and
    /// after it that did not rebuild it.
    shards: Vec<Arc<Shard>>,
    /// Certificates served on :443 (route certificates and the default), when TLS is configured.
    pub certs: Option<Arc<CertStore>>,
    /// The snapshot's EndpointSlices by service, for the next build to update.
    slices: SliceIndex,
}

impl RouteTable {
    /// Every admitted route, for :80.
    pub fn http(&self) -> Rules<'_> {
        Rules { table: self, kind: RulesKind::Http }
    }

    /// Edge and reencrypt routes, for requests on terminated :443 connections.
    pub fn https(&self) -> Rules<'_> {
        Rules { table: self, kind: RulesKind::Https }
    }

    /// Passthrough routes by SNI (no paths).
    pub fn passthrough(&self) -> Rules<'_> {
        Rules { table: self, kind: RulesKind::Passthrough }
    }

    /// The client certificate check of a :443 handshake for `sni` (lowercase, no trailing dot), if its host
    /// asks for certificates: the exact host's routes', else (a host without routes of its own) the wildcard's.
    pub fn client_auth(&self, sni: Option<&str>) -> Option<&Arc<RouteClientAuth>> {
        let name = sni?;
        match self.shard_of_host(name)?.client_auth.find_exact(name) {
            Some(auth) => auth,
            None => {
                let domain = name.split_once('.').map(|(_, domain)| domain)?;
                self.shards.get(shards::of_domain(domain))?.client_auth.find_wildcard(domain)
            }
        }
    }

    /// Every route of this router's shard, admitted or rejected with its reason.
    pub fn outcomes(&self) -> impl Iterator<Item = &RouteOutcome> {
        self.shards.iter().flat_map(|shard| shard.outcomes.iter())
    }

    /// Annotation values that could not be used, per route.
    pub fn warnings(&self) -> impl Iterator<Item = &(ObjectKey, String)> {
        self.shards.iter().flat_map(|shard| shard.warnings.iter())
    }

    /// The table's shards, for followers that keep state per shard (the health checks): a shard the previous
    /// table shares (`Arc::ptr_eq`) holds the same routes, backends and endpoints.
    pub fn shards(&self) -> &[Arc<Shard>] {
        &self.shards
    }

    fn shard_of_host(&self, host: &str) -> Option<&Shard> {
        self.shards.get(self.shard_by.of_host(host)).map(|shard| &**shard)
    }

    /// The route serving a :80 `GET` for `host` (already normalised) and `path` (no query string), without
    /// headers or query.
    pub fn lookup(&self, host: &str, path: &str) -> Option<&Arc<Backend>> {
        self.http().lookup(host, path)
    }

    /// Every admitted backend (for health checks and diagnostics).
    pub fn backends(&self) -> impl Iterator<Item = &Arc<Backend>> {
        self.http().backends()
    }

    /// Takes over the health of endpoints that were already in `previous` (same route, same server id), so
    /// a rebuild neither forgets a dead pod nor restarts its checks. A backend taken over from `previous` (the
    /// same `Arc`, see `build_from`) already has its state. `build_from` does this itself for what it compiles;
    /// this is for a table built without the live one as its previous.
    pub fn inherit_health(&self, previous: &RouteTable) {
        let before: HashMap<&ObjectKey, &Arc<Backend>> = previous.backends().map(|b| (&b.route, b)).collect();
        for backend in self.backends() {
            let Some(old) = before.get(&backend.route) else { continue };
            if !Arc::ptr_eq(old, backend) {
                backend.inherit_health(old);
            }
        }
    }

    pub fn routes_admitted(&self) -> usize {
        self.outcomes().filter(|o| o.result.is_ok()).count()
    }

    pub fn routes_rejected(&self) -> usize {
        self.outcomes().filter(|o| o.result.is_err()).count()
    }
}
