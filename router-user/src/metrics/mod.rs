//! The router's Prometheus metrics, served on the admin listener: its own `router_<subsystem>_<name>_<unit>`
//! families (registered here), and OpenShift's families beside them so the ingress operator's alerts and
//! dashboards work unchanged: `haproxy_*` (`haproxy`, fed from the router's counters per frontend, backend and
//! server), `template_router_*` (`template_router`, fed by table publishes). The request-duration histograms,
//! TLS handshake counts (`tls_handshakes`) and the XDP front's counters (`xdp_counters`, read from the pinned
//! map at each scrape) are `router_*` series.
//!
//! Access-log drops: the access log's dropped-line counter is registered here with the others (it is a
//! `router_*` family); a counter registered in `Metrics::default` is published with no further change.

pub mod haproxy;
mod ocsp;
mod request_durations;
mod template_router;
mod tls_handshakes;
mod xdp_counters;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub use haproxy::{CountersSlot, Frontend, ProxyCounters, ProxyRegistry, Topology};
pub use ocsp::{OcspFailureLabels, OcspMetrics};
pub use request_durations::{DurationHistogram, RouteLabels};
pub use template_router::TemplateRouterMetrics;
pub use tls_handshakes::{failure_reason as tls_failure_reason, TlsHandshakeFailureLabels, TlsHandshakeLabels};
pub use xdp_counters::XdpRows;

/// Labels of a proxied request: the HAProxy-style backend name (`be_http:ns:name`, or `openshift_default` when
/// no route matched), the route's namespace and name, and the status code sent to the client.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub backend: Arc<str>,
    pub namespace: Arc<str>,
    pub route: Arc<str>,
    pub code: u16,
}

/// The route half of [`RequestLabels`], built once per compiled backend so a request only bumps refcounts.
#[derive(Clone, Debug)]
pub struct BackendLabels {
    pub backend: Arc<str>,
    pub namespace: Arc<str>,
    pub route: Arc<str>,
}

impl BackendLabels {
    /// Requests that matched no route are counted against HAProxy's default backend name.
    pub fn unrouted() -> Self {
        Self { backend: "openshift_default".into(), namespace: "".into(), route: "".into() }
    }

    pub fn with_code(&self, code: u16) -> RequestLabels {
        RequestLabels {
            backend: self.backend.clone(),
            namespace: self.namespace.clone(),
            route: self.route.clone(),
            code,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BackendOnlyLabels {
    pub backend: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamErrorLabels {
    pub backend: Arc<str>,
    /// `connect`, `timeout` or `response`.
    pub kind: &'static str,
}

/// The Kubernetes resource a watch is for (`routes`, `services`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    pub resource: &'static str,
}

/// The result of one route status write: `ok`, `conflict` or `error` (both retried), `gone` (route deleted).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusWriteLabels {
    pub result: &'static str,
}

/// A client connection closed unanswered by a route's protection.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusedLabels {
    pub backend: Arc<str>,
    /// `ip_allowlist`, `concurrent-tcp`, `rate-tcp` or `rate-http`.
    pub reason: &'static str,
}

/// Why a :443 connection ended before any route served it (`timeout`, `not_tls`, `malformed`, ... or
/// `handshake` for a failed TLS handshake, `no_endpoint` for a passthrough route without a pod).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TlsFailureLabels {
    pub reason: &'static str,
}

/// Bytes relayed for passthrough routes, by backend and direction (`in` from clients, `out` to them).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PassthroughLabels {
    pub backend: Arc<str>,
    pub direction: &'static str,
}

/// Why a passthrough connection was not steered to its pod by the XDP datapath (`no_syn`, `no_port`,
/// `map_full`, `no_answer`, ...: `relay::steer`'s reasons).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SteerFallbackLabels {
    pub reason: &'static str,
}

pub struct Metrics {
    registry: Registry,
    /// Passthrough connections handed to the XDP datapath (`--xdp-steer-passthrough`).
    pub xdp_steered_connections: Counter,
    /// Passthrough connections the steering setup left on the userspace relay, by reason.
    pub xdp_steer_fallbacks: Family<SteerFallbackLabels, Counter>,
    /// Steered flows whose entries are in the datapath now.
    pub xdp_steered_flows: Gauge,
    pub tls_failures: Family<TlsFailureLabels, Counter>,
    pub passthrough_connections: Family<BackendOnlyLabels, Counter>,
    pub passthrough_bytes: Family<PassthroughLabels, Counter>,
    pub refused: Family<RefusedLabels, Counter>,
    pub route_warnings: Counter,
    pub http_requests: Family<RequestLabels, Counter>,
    pub upstream_errors: Family<UpstreamErrorLabels, Counter>,
    pub table_generation: Gauge,
    pub table_build_seconds: Histogram,
    pub routes_loaded: Gauge,
    pub routes_rejected: Gauge,
    pub manifest_errors: Counter,
    pub kube_watch_errors: Family<ResourceLabels, Counter>,
    pub kube_objects_skipped: Family<ResourceLabels, Counter>,
    pub route_status_writes: Family<StatusWriteLabels, Counter>,
    /// ROUTER_MAX_CONNECTIONS and ROUTER_THREADS at work (`listen::ConnectionLimit`, the runtime).
    pub client_connections: Gauge,
    pub max_connections: Gauge,
    pub connection_limit_waits: Counter,
    pub worker_threads: Gauge,
    pub access_log_dropped_lines: Counter,
    /// Time from a request's arrival to its response head, by route.
    pub request_durations: Family<RouteLabels, DurationHistogram>,
    pub tls_handshakes: Family<TlsHandshakeLabels, Counter>,
    pub tls_handshake_failures: Family<TlsHandshakeFailureLabels, Counter>,
    /// ROUTER_OCSP_STAPLING's fetches and staples.
    pub ocsp: OcspMetrics,
    /// The counters behind the `haproxy_*` families.
    pub haproxy: ProxyRegistry,
    pub template_router: TemplateRouterMetrics,
}

/// What a scrape reads besides the registered families: the live table's backends and servers, and the XDP
/// front's counters when one is attached.
#[derive(Debug, Default)]
pub struct ScrapeInputs {
    pub topology: Topology,
    pub xdp: Option<XdpRows>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let http_requests = Family::<RequestLabels, Counter>::default();
        let upstream_errors = Family::<UpstreamErrorLabels, Counter>::default();
        let table_generation = Gauge::default();
        // 100 us .. ~6.5 s: a rebuild at 10k routes must stay well inside this.
        let table_build_seconds = Histogram::new(exponential_buckets(0.0001, 4.0, 9));
        let routes_loaded = Gauge::default();
        let routes_rejected = Gauge::default();
        let manifest_errors = Counter::default();
        let refused = Family::<RefusedLabels, Counter>::default();
        let route_warnings = Counter::default();
        registry.register(
            "router_connections_refused",
            "Client connections closed by a route's allowlist or rate limits",
            refused.clone(),
        );
        registry.register(
            "router_route_warnings",
            "Annotation or header-action values that could not be used (each counted once)",
            route_warnings.clone(),
        );
        registry.register(
            "router_http_requests",
            "HTTP requests answered, by backend, route and status code",
            http_requests.clone(),
        );
        registry.register(
            "router_upstream_errors",
            "Failed attempts to reach a pod, by backend and kind",
            upstream_errors.clone(),
        );
        registry.register("router_table_generation", "Generation of the live route table", table_generation.clone());
        registry.register(
            "router_table_build_seconds",
            "Time to compile a route table from a snapshot",
            table_build_seconds.clone(),
        );
        registry.register("router_routes_loaded", "Routes admitted in the live table", routes_loaded.clone());
        registry.register("router_routes_rejected", "Routes rejected in the live table", routes_rejected.clone());
        registry.register(
            "router_manifest_errors",
            "Manifest files that failed to parse (each failed load counts once)",
            manifest_errors.clone(),
        );
        let kube_watch_errors = Family::<ResourceLabels, Counter>::default();
        registry.register(
            "router_kube_watch_errors",
            "Failed list/watch calls to the Kubernetes API, by resource (each is retried with backoff)",
            kube_watch_errors.clone(),
        );
        let kube_objects_skipped = Family::<ResourceLabels, Counter>::default();
        registry.register(
            "router_kube_objects_skipped",
            "Objects the Kubernetes source leaves out (undecodable, or EndpointSlices whose addressType gives no \
             backends), by resource; each counted once until it is used again",
            kube_objects_skipped.clone(),
        );
        let route_status_writes = Family::<StatusWriteLabels, Counter>::default();
        registry.register(
            "router_route_status_writes",
            "Writes of this router's entry in route status, by result",
            route_status_writes.clone(),
        );
        let ocsp = OcspMetrics::default();
        ocsp.register(&mut registry);
        let tls_failures = Family::<TlsFailureLabels, Counter>::default();
        registry.register(
            "router_tls_connection_failures",
            "Connections on the HTTPS listener closed before a route served them, by reason",
            tls_failures.clone(),
        );
        let passthrough_connections = Family::<BackendOnlyLabels, Counter>::default();
        registry.register(
            "router_passthrough_connections",
            "Passthrough connections relayed to a pod, by backend",
            passthrough_connections.clone(),
        );
        let passthrough_bytes = Family::<PassthroughLabels, Counter>::default();
        registry.register(
            "router_passthrough_bytes",
            "Bytes relayed for passthrough routes, by backend and direction",
            passthrough_bytes.clone(),
        );
        let xdp_steered_connections = Counter::default();
        registry.register(
            "router_xdp_steered_connections",
            "Passthrough connections steered to their pod by the XDP datapath",
            xdp_steered_connections.clone(),
        );
        let xdp_steer_fallbacks = Family::<SteerFallbackLabels, Counter>::default();
        registry.register(
            "router_xdp_steer_fallbacks",
            "Passthrough connections left on the userspace relay by the XDP steering setup, by reason",
            xdp_steer_fallbacks.clone(),
        );
        let xdp_steered_flows = Gauge::default();
        registry.register(
            "router_xdp_steered_flows",
            "Steered passthrough flows with entries in the XDP datapath",
            xdp_steered_flows.clone(),
        );
        let access_log_dropped_lines = Counter::default();
        registry.register(
            "router_access_log_dropped_lines",
            "Access-log lines dropped because the queue was full (slow destination) or the send failed",
            access_log_dropped_lines.clone(),
        );
        let request_durations = Family::<RouteLabels, DurationHistogram>::default();
        registry.register(
            "router_http_request_duration_seconds",
            "Time from a request's arrival to its response head (the router's answer or the pod's), by route",
            request_durations.clone(),
        );
        let tls_handshakes = Family::<TlsHandshakeLabels, Counter>::default();
        registry.register(
            "router_tls_handshakes",
            "TLS handshakes completed on the HTTPS listener, by protocol version and ALPN",
            tls_handshakes.clone(),
        );
        let tls_handshake_failures = Family::<TlsHandshakeFailureLabels, Counter>::default();
        registry.register(
            "router_tls_handshake_failures",
            "TLS handshakes that failed on the HTTPS listener, by reason",
            tls_handshake_failures.clone(),
        );
        let template_router = TemplateRouterMetrics::register(&mut registry);
        let client_connections = Gauge::default();
        registry.register(
            "router_client_connections",
            "Client connections open on the HTTP and HTTPS listeners",
            client_connections.clone(),
        );
        let max_connections = Gauge::default();
        registry.register(
            "router_max_connections",
            "ROUTER_MAX_CONNECTIONS: client connections open at once before new ones wait in the listen backlog",
            max_connections.clone(),
        );
        let connection_limit_waits = Counter::default();
        registry.register(
            "router_connection_limit_waits",
            "Times the accept loops stopped accepting because ROUTER_MAX_CONNECTIONS connections were open",
            connection_limit_waits.clone(),
        );
        let worker_threads = Gauge::default();
        registry.register(
            "router_worker_threads",
            "ROUTER_THREADS: worker threads serving connections",
            worker_threads.clone(),
        );
        Self {
            registry,
            xdp_steered_connections,
            xdp_steer_fallbacks,
            xdp_steered_flows,
            request_durations,
            tls_handshakes,
            tls_handshake_failures,
            ocsp,
            haproxy: ProxyRegistry::default(),
            template_router,
            client_connections,
            max_connections,
            connection_limit_waits,
            worker_threads,
            tls_failures,
            passthrough_connections,
            passthrough_bytes,
            refused,
            route_warnings,
            http_requests,
            upstream_errors,
            table_generation,
            table_build_seconds,
            routes_loaded,
            routes_rejected,
            manifest_errors,
            kube_watch_errors,
            kube_objects_skipped,
            route_status_writes,
            access_log_dropped_lines,
        }
    }
}

/// A backend's request counter for the commonest status code, resolved once instead of on every request.
#[derive(Debug, Default)]
pub struct RequestCounters {
    ok: OnceLock<Counter>,
    /// The backend's `haproxy_backend_*` counters.
    pub proxy: CountersSlot,
    duration: OnceLock<DurationHistogram>,
}

impl Metrics {
    /// Counts one answered request; `cache` (the backend's) spares the label lookup for 200s.
    pub fn count_request(&self, labels: &BackendLabels, cache: Option<&RequestCounters>, code: u16) {
        match cache {
            Some(cache) if code == 200 => {
                cache.ok.get_or_init(|| self.http_requests.get_or_create(&labels.with_code(200)).clone()).inc();
            }
            _ => {
                self.http_requests.get_or_create(&labels.with_code(code)).inc();
            }
        }
    }

    /// Counts one answered request on `frontend`: its backend's response and duration (`backend` is `None` when
    /// no route matched: HAProxy's `openshift_default`).
    pub fn count_response(
        &self,
        frontend: Frontend,
        backend: Option<(&BackendLabels, &RequestCounters)>,
        code: u16,
        elapsed: Duration,
    ) {
        self.haproxy.frontend(frontend).count_response(code);
        match backend {
            Some((labels, counters)) => {
                self.count_request(labels, Some(counters), code);
                self.haproxy.backend(&labels.backend, &counters.proxy).count_response(code);
                counters
                    .duration
                    .get_or_init(|| self.request_durations.get_or_create(&RouteLabels::of(labels)).clone())
                    .observe(elapsed);
            }
            None => {
                let unrouted = BackendLabels::unrouted();
                self.count_request(&unrouted, None, code);
                self.haproxy.backend_named(&unrouted.backend).count_response(code);
                self.request_durations.get_or_create(&RouteLabels::of(&unrouted)).observe(elapsed);
            }
        }
    }

    /// The backend counters behind the `haproxy_backend_*` rows of `labels`' backend.
    pub fn backend_proxy<'a>(&self, labels: &BackendLabels, counters: &'a RequestCounters) -> &'a Arc<ProxyCounters> {
        self.haproxy.backend(&labels.backend, &counters.proxy)
    }

    /// Every family in the OpenMetrics text format (which Prometheus scrapes as-is), without a table or XDP.
    pub fn render(&self) -> String {
        self.render_with(&ScrapeInputs::default())
    }

    /// Every family, the `haproxy_*` rows for `inputs.topology` and the XDP counters when given.
    pub fn render_with(&self, inputs: &ScrapeInputs) -> String {
        let mut out = String::with_capacity(16384);
        // Writing into a String cannot fail.
        let _ = encode_registry(&mut out, &self.registry);
        self.template_router.encode(&mut out);
        let _ = encode_registry(&mut out, &haproxy::scrape(&self.haproxy, &inputs.topology));
        if let Some(rows) = &inputs.xdp {
            let _ = encode_registry(&mut out, &xdp_counters::scrape(rows));
        }
        let _ = encode_eof(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_request_counters_with_labels() {
        let metrics = Metrics::default();
        let labels =
            RequestLabels { backend: "be_http:ns:web".into(), namespace: "ns".into(), route: "web".into(), code: 200 };
        metrics.http_requests.get_or_create(&labels).inc();
        metrics.table_generation.set(3);
        let text = metrics.render();
        assert!(
            text.contains(
                r#"router_http_requests_total{backend="be_http:ns:web",namespace="ns",route="web",code="200"} 1"#
            ),
            "{text}"
        );
        assert!(text.contains("router_table_generation 3"), "{text}");
    }
}
