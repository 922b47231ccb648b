//! The `haproxy_*` families as openshift/router's exporter publishes them (`pkg/router/metrics/haproxy`): gauges
//! throughout, labelled `frontend`; `backend` (mode), `namespace`, `route`; `server` (ip:port), `namespace`,
//! `route`, `pod`, `service`; `code` (1xx .. 5xx, other) on the response counts. The values come from the
//! router's own counters ([`ProxyRegistry`]) and the live table's backends and servers ([`Topology`]), read at
//! each scrape, so a route's rows appear and go with the route.
//!
//! Every family of the exporter's default selection is published. Bytes: a frontend counts what its client
//! sockets carried (`public_ssl` the raw TLS bytes of every :443 connection, `fe_sni`/`fe_no_sni` the decrypted
//! ones); an HTTP backend or server counts request heads (as HTTP/1.1 writes them) and bodies sent to its pods
//! (`bytes_in_total`) and response heads and bodies from them (`bytes_out_total`); a passthrough backend every
//! byte both ways. The queue is the requests waiting for a free `pod-concurrent-connections` slot, a backend's
//! own: the router never queues a request on one server, so a server's `current_queue` is always 0 (its queue
//! latency is that of the backend queue for the requests it then served). Connect latency and connection
//! reuse are known for pods spoken to over HTTP/1.1 (the router's own client), not over h2c or reencrypt.
//! The response latency is measured from the pick of a server to the response head.
//!
//! `haproxy_exporter_total_scrapes` and `haproxy_exporter_csv_parse_failures` are counters in openshift/router;
//! here they are gauges, as every `haproxy_*` family, so that the series keeps its name in the OpenMetrics
//! text (which would write a counter's samples with a `_total` suffix). There is no CSV to parse (always 0) and
//! no interval between scrapes (`haproxy_exporter_scrape_interval` 0: every scrape reads the live counters).

use std::collections::HashSet;
use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::counters::{ProxyCounters, RESPONSE_CLASSES};
use super::names::{backend_labels, server_labels};
use super::registry::{Frontend, ProxyRegistry};

/// The backends and servers of the live table, as the exporter needs them.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub backends: Vec<BackendView>,
}

#[derive(Clone, Debug)]
pub struct BackendView {
    /// `be_http:<ns>:<route>` and the like.
    pub name: Arc<str>,
    /// A passthrough (`be_tcp`) backend has no HTTP columns.
    pub http: bool,
    pub servers: Vec<ServerView>,
}

#[derive(Clone, Debug)]
pub struct ServerView {
    /// The OpenShift server id, `pod:<pod>:<service>:<port>:<ip>:<port>`.
    pub id: String,
    pub up: bool,
    /// Requests (or passthrough connections) on it now.
    pub in_flight: u64,
}

impl Topology {
    /// Every backend name and (backend, server id) pair, for forgetting the counters of the others.
    pub fn names(&self) -> (HashSet<&str>, HashSet<(&str, &str)>) {
        let backends = self.backends.iter().map(|b| &*b.name).collect();
        let servers = self.backends.iter().flat_map(|b| b.servers.iter().map(|s| (&*b.name, s.id.as_str()))).collect();
        (backends, servers)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FrontendLabels {
    frontend: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FrontendCodeLabels {
    frontend: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    backend: String,
    namespace: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendCodeLabels {
    backend: String,
    namespace: String,
    route: String,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
    namespace: String,
    route: String,
    pod: String,
    service: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerCodeLabels {
    server: String,
    namespace: String,
    route: String,
    pod: String,
    service: String,
    code: &'static str,
}

type Gauges<L> = Family<L, Gauge>;

/// One family per column, registered under `haproxy_<kind>_<name>`.
struct Columns<L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static> {
    current_queue: Gauges<L>,
    queue_latency: Gauges<L>,
    connect_latency: Gauges<L>,
    connections_reused: Gauges<L>,
    downtime: Gauges<L>,
    current_sessions: Gauges<L>,
    max_sessions: Gauges<L>,
    connections_total: Gauges<L>,
    bytes_in_total: Gauges<L>,
    bytes_out_total: Gauges<L>,
    connection_errors_total: Gauges<L>,
    response_errors_total: Gauges<L>,
    up: Gauges<L>,
    check_failures_total: Gauges<L>,
    current_session_rate: Gauges<L>,
    max_session_rate: Gauges<L>,
    response_latency: Gauges<L>,
}

impl<L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static> Columns<L> {
    fn new() -> Self {
        Columns {
            current_queue: Family::default(),
            queue_latency: Family::default(),
            connect_latency: Family::default(),
            connections_reused: Family::default(),
            downtime: Family::default(),
            current_sessions: Family::default(),
            max_sessions: Family::default(),
            connections_total: Family::default(),
            bytes_in_total: Family::default(),
            bytes_out_total: Family::default(),
            connection_errors_total: Family::default(),
            response_errors_total: Family::default(),
            up: Family::default(),
            check_failures_total: Family::default(),
            current_session_rate: Family::default(),
            max_session_rate: Family::default(),
            response_latency: Family::default(),
        }
    }

    /// Registers the columns `kind` publishes (openshift/router's default selection for it).
    fn register(&self, registry: &mut Registry, kind: &str) {
        let mut add = |name: &str, help: &str, family: &Gauges<L>| {
            registry.register(format!("haproxy_{kind}_{name}"), help, family.clone());
        };
        add("current_sessions", "Current number of active sessions", &self.current_sessions);
        add("max_sessions", "Maximum observed number of active sessions", &self.max_sessions);
        add("connections_total", "Total number of connections", &self.connections_total);
        add("bytes_in_total", "Current total of incoming bytes", &self.bytes_in_total);
        add("bytes_out_total", "Current total of outgoing bytes", &self.bytes_out_total);
        add(
            "current_session_rate",
            "Current number of sessions per second over last elapsed second",
            &self.current_session_rate,
        );
        add("max_session_rate", "Maximum observed number of sessions per second", &self.max_session_rate);
        if kind == "frontend" {
            return;
        }
        let queue_help = match kind {
            "server" => "Current number of queued requests assigned to this server",
            _ => "Current number of queued requests not assigned to any server",
        };
        add("current_queue", queue_help, &self.current_queue);
        add(
            "http_average_queue_latency_milliseconds",
            "Average latency to be dequeued of the last 1024 requests in milliseconds",
            &self.queue_latency,
        );
        add(
            "http_average_connect_latency_milliseconds",
            "Average connect latency of the last 1024 requests in milliseconds",
            &self.connect_latency,
        );
        add("connections_reused_total", "Total number of connections reused", &self.connections_reused);
        add("connection_errors_total", "Total of connection errors", &self.connection_errors_total);
        add("response_errors_total", "Total of response errors", &self.response_errors_total);
        let up_help = format!("Current health status of the {kind} (1 = UP, 0 = DOWN)");
        add("up", &up_help, &self.up);
        add(
            "http_average_response_latency_milliseconds",
            "Average response latency of the last 1024 requests in milliseconds",
            &self.response_latency,
        );
        if kind == "server" {
            add("check_failures_total", "Total number of failed health checks", &self.check_failures_total);
            add("downtime_seconds_total", "Total downtime in seconds", &self.downtime);
        }
    }

    /// The session and byte columns (every kind) of one row.
    fn set_sessions(&self, labels: &L, counters: &ProxyCounters, current: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        set(&self.bytes_in_total, labels, counters.bytes_in.load(Relaxed));
        set(&self.bytes_out_total, labels, counters.bytes_out.load(Relaxed));
        set(&self.current_sessions, labels, current);
        set(&self.max_sessions, labels, counters.max_sessions().max(current));
        set(&self.connections_total, labels, counters.sessions_total());
        set(&self.current_session_rate, labels, counters.session_rate());
        set(&self.max_session_rate, labels, counters.max_session_rate());
    }

    /// The columns of a backend or server row; `queued` is its current queue.
    fn set_proxy(&self, labels: &L, counters: &ProxyCounters, up: bool, http: bool, queued: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        set(&self.current_queue, labels, queued);
        set(&self.connections_reused, labels, counters.connections_reused.load(Relaxed));
        set(&self.downtime, labels, counters.downtime_seconds());
        set(&self.connection_errors_total, labels, counters.connection_errors.load(Relaxed));
        set(&self.response_errors_total, labels, counters.response_errors.load(Relaxed));
        set(&self.up, labels, u64::from(up));
        set(&self.check_failures_total, labels, counters.check_failures.load(Relaxed));
        if http {
            set(&self.response_latency, labels, counters.average_response_ms());
            set(&self.queue_latency, labels, counters.average_queue_ms());
            set(&self.connect_latency, labels, counters.average_connect_ms());
        }
    }
}

fn set<L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static>(
    family: &Gauges<L>,
    labels: &L,
    value: u64,
) {
    family.get_or_create(labels).set(i64::try_from(value).unwrap_or(i64::MAX));
}

/// A registry holding this scrape's `haproxy_*` rows. Counters of backends and servers that left `topology`
/// are forgotten on the way.
pub fn scrape(proxies: &ProxyRegistry, topology: &Topology) -> Registry {
    let (backend_names, server_names) = topology.names();
    proxies.retain(&backend_names, &server_names);
    let mut registry = Registry::default();

    let up = Gauge::<i64>::default();
    up.set(1);
    registry.register("haproxy_up", "Was the last scrape of haproxy successful", up);
    let mut exporter_gauge = |name: &str, help: &str, value: u64| {
        let gauge = Gauge::<i64>::default();
        gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
        registry.register(name, help, gauge);
    };
    exporter_gauge("haproxy_exporter_total_scrapes", "Current total HAProxy scrapes", proxies.count_scrape());
    exporter_gauge(
        "haproxy_exporter_scrape_interval",
        "The time in seconds before another scrape is allowed, proportional to size of data",
        0,
    );
    exporter_gauge("haproxy_exporter_csv_parse_failures", "Number of errors while parsing CSV", 0);
    if let Some(limit) = proxies.max_connections() {
        let gauge = Gauge::<i64>::default();
        gauge.set(i64::try_from(limit).unwrap_or(i64::MAX));
        registry.register(
            "haproxy_max_connections",
            "Maximum number of concurrent connections configured for the HAProxy process",
            gauge,
        );
    }
    let servers = topology.backends.iter().map(|b| b.servers.len() as u64).sum::<u64>();
    let server_threshold = proxies.server_threshold();
    let threshold = Family::<ThresholdLabels, Gauge>::default();
    set(&threshold, &ThresholdLabels { r#type: "current" }, servers);
    set(&threshold, &ThresholdLabels { r#type: "limit" }, server_threshold);
    registry.register(
        "haproxy_exporter_server_threshold",
        "Number of servers tracked and the current threshold value",
        threshold,
    );

    let frontends = Columns::<FrontendLabels>::new();
    let frontend_responses = Gauges::<FrontendCodeLabels>::default();
    for frontend in Frontend::ALL {
        let counters = proxies.frontend(frontend);
        let labels = FrontendLabels { frontend: frontend.name() };
        frontends.set_sessions(&labels, counters, counters.current_sessions());
        if frontend != Frontend::PublicSsl {
            for (code, count) in RESPONSE_CLASSES.iter().zip(counters.responses()) {
                set(&frontend_responses, &FrontendCodeLabels { frontend: frontend.name(), code }, count);
            }
        }
    }
    frontends.register(&mut registry, "frontend");
    registry.register("haproxy_frontend_http_responses_total", "Total of HTTP responses", frontend_responses);

    let backends = Columns::<BackendLabels>::new();
    let backend_responses = Gauges::<BackendCodeLabels>::default();
    let server_columns = Columns::<ServerLabels>::new();
    let server_responses = Gauges::<ServerCodeLabels>::default();
    let zero = ProxyCounters::default();
    for backend in &topology.backends {
        let (mode, namespace, route) = backend_labels(&backend.name);
        let labels = BackendLabels { backend: mode, namespace: namespace.clone(), route: route.clone() };
        let counters = proxies.existing_backend(&backend.name);
        let counters = counters.as_deref().unwrap_or(&zero);
        let up = backend.servers.iter().any(|s| s.up);
        let in_flight = backend.servers.iter().map(|s| s.in_flight).sum();
        backends.set_sessions(&labels, counters, in_flight);
        backends.set_proxy(&labels, counters, up, backend.http, counters.current_queue());
        if backend.http {
            for (code, count) in RESPONSE_CLASSES.iter().zip(counters.responses()) {
                let labels = BackendCodeLabels {
                    backend: labels.backend.clone(),
                    namespace: namespace.clone(),
                    route: route.clone(),
                    code,
                };
                set(&backend_responses, &labels, count);
            }
        }
        if servers > server_threshold {
            continue;
        }
        for server in &backend.servers {
            let (address, pod, service) = server_labels(&server.id);
            let labels =
                ServerLabels { server: address, namespace: namespace.clone(), route: route.clone(), pod, service };
            let counters = proxies.existing_server(&backend.name, &server.id);
            let counters = counters.as_deref().unwrap_or(&zero);
            server_columns.set_sessions(&labels, counters, server.in_flight);
            // The router's queue is the backend's: no request ever waits for one server.
            server_columns.set_proxy(&labels, counters, server.up, backend.http, 0);
            if backend.http {
                for (code, count) in RESPONSE_CLASSES.iter().zip(counters.responses()) {
                    let labels = ServerCodeLabels {
                        server: labels.server.clone(),
                        namespace: labels.namespace.clone(),
                        route: labels.route.clone(),
                        pod: labels.pod.clone(),
                        service: labels.service.clone(),
                        code,
                    };
                    set(&server_responses, &labels, count);
                }
            }
        }
    }
    backends.register(&mut registry, "backend");
    registry.register("haproxy_backend_http_responses_total", "Total of HTTP responses", backend_responses);
    if servers <= server_threshold {
        server_columns.register(&mut registry, "server");
        registry.register("haproxy_server_http_responses_total", "Total of HTTP responses", server_responses);
    }
    registry
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThresholdLabels {
    r#type: &'static str,
}
