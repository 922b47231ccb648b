//! Settings: clap flags, each bound to the OpenShift router's environment variable where one exists.

mod access_log;
mod http;
mod http3;
mod limits;
mod listeners;
mod metrics;
mod routing;
mod stats_auth;
mod steer;
mod timeouts;
mod tls;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

pub use access_log::{AccessLogArgs, AccessLogError};
pub use http::HttpArgs;
pub use http3::Http3Args;
pub use limits::LimitArgs;
pub use listeners::ListenerArgs;
pub use metrics::MetricsArgs;
pub use routing::{RoutingArgs, RoutingError};
pub use stats_auth::{StatsAuthArgs, StatsAuthError};
pub use steer::SteerArgs;
pub use timeouts::TimeoutArgs;
pub use tls::{MutualTls, TlsArgs};

use crate::duration::parse_haproxy_duration;
use crate::policy::BalanceAlgorithm;
use crate::router_service::RouterServiceName;
use crate::source::{choose_source, SourceChoice, SourceChoiceError, SourceKind};
use crate::xdp::XdpMode;

#[derive(Parser, Clone, Debug)]
#[command(name = "router", version, about = "OpenShift-compatible ingress router with an XDP front")]
pub struct Settings {
    /// Manifest file or directory (the embedded default source), watched for changes.
    #[arg(long, env = "ROUTER_MANIFESTS")]
    pub manifests: Option<PathBuf>,

    /// Source of routes: `manifests` or `kube`. Unset: manifests when --manifests is given, else the Kubernetes
    /// API when --kubeconfig is given or the router runs in a pod.
    #[arg(long, env = "ROUTER_SOURCE", value_enum)]
    pub source: Option<SourceKind>,

    /// kubeconfig for the Kubernetes source (its current context); unset in a pod: the service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubernetes source: the longest a burst of changes is batched before the table is rebuilt.
    #[arg(long, env = "RELOAD_INTERVAL", default_value = "100ms", value_parser = parse_haproxy_duration)]
    pub reload_interval: Duration,

    /// Kubernetes source: read core Endpoints instead of EndpointSlices.
    #[arg(long, env = "ROUTER_WATCH_ENDPOINTS")]
    pub watch_endpoints: bool,

    /// This router's name in route status (`status.ingress[].routerName`).
    #[arg(long, env = "ROUTER_SERVICE_NAME", default_value = "default")]
    pub router_name: String,

    /// Host name published as `routerCanonicalHostname` in route status.
    #[arg(long, env = "ROUTER_CANONICAL_HOSTNAME")]
    pub router_canonical_hostname: Option<String>,

    /// Serve Gateway API objects: Gateways of this gatewayClassName and the HTTPRoutes and TLSRoutes attached to
    /// them (docs/gateway-api.md). Empty (the default): the Gateway API is not read.
    #[arg(long, env = "ROUTER_GATEWAY_CLASS", default_value = "")]
    pub gateway_class: String,

    /// Write route status (Kubernetes source only): `true` or `false`.
    #[arg(long, env = "ROUTER_UPDATE_STATUS", default_value_t = true, action = clap::ArgAction::Set)]
    pub update_status: bool,

    /// Address the HTTP and HTTPS listeners bind to.
    #[arg(long, env = "ROUTER_BIND_IP", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    pub listen_addr: IpAddr,

    /// HTTP listener port (0 picks a free port).
    #[arg(long, env = "ROUTER_SERVICE_HTTP_PORT", default_value_t = 80)]
    pub http_port: u16,

    /// HTTPS listener port (0 picks a free port).
    #[arg(long, env = "ROUTER_SERVICE_HTTPS_PORT", default_value_t = 443)]
    pub https_port: u16,

    /// Admin listener port (/healthz, /healthz/ready, /metrics).
    #[arg(long, env = "STATS_PORT", default_value_t = 1936)]
    pub stats_port: u16,

    /// Admin listener as host:port; overrides --listen-addr and --stats-port for the admin listener.
    #[arg(long, env = "ROUTER_LISTEN_ADDR")]
    pub stats_listen_addr: Option<SocketAddr>,

    /// Keep endpoints on loopback and link-local addresses (OpenShift drops them). Needed for demos and tests.
    #[arg(long, env = "ROUTER_ALLOW_LOOPBACK_ENDPOINTS")]
    pub allow_loopback_endpoints: bool,

    /// Time to establish a connection to a pod.
    #[arg(long, env = "ROUTER_DEFAULT_CONNECT_TIMEOUT", default_value = "5s", value_parser = parse_haproxy_duration)]
    pub connect_timeout: Duration,

    /// Time a pod may take to answer a request.
    #[arg(long, env = "ROUTER_DEFAULT_SERVER_TIMEOUT", default_value = "30s", value_parser = parse_haproxy_duration)]
    pub server_timeout: Duration,

    /// Time a client may take to send a complete request head (slowloris protection); past it, HTTP/1 clients
    /// get a 408 and the connection closes (HAProxy's `timeout http-request`).
    #[arg(long, env = "ROUTER_SLOWLORIS_TIMEOUT", default_value = "10s", value_parser = parse_haproxy_duration)]
    pub http_request_timeout: Duration,

    /// On SIGTERM, how long to keep serving with /healthz/ready failing before the listeners close.
    #[arg(long, env = "ROUTER_GRACEFUL_SHUTDOWN_DELAY", default_value = "0s", value_parser = parse_haproxy_duration)]
    pub graceful_shutdown_delay: Duration,

    /// Upper bound on waiting for in-flight requests after the listeners close.
    #[arg(long, env = "ROUTER_HARD_STOP_AFTER", default_value = "30s", value_parser = parse_haproxy_duration)]
    pub hard_stop_after: Duration,

    /// A unix socket path for upgrades without a gap: at start the router takes the listeners of the router
    /// offering them there (if any), serves on them, and that router drains and exits; then it offers its
    /// own listeners at the same path for the next one. Unset: no hand-over.
    #[arg(long, env = "ROUTER_HANDOVER_SOCKET")]
    pub handover_socket: Option<PathBuf>,

    /// Attach the XDP front to this interface.
    #[arg(long, env = "ROUTER_XDP_IFACE")]
    pub xdp_iface: Option<String>,

    /// XDP attach mode: driver with generic fallback (auto), driver only, or generic (skb) only; iproute2's and
    /// bpftool's words work too (`generic`, `xdpgeneric`, `native`, `drv`, `xdpdrv`).
    #[arg(long, env = "ROUTER_XDP_MODE", value_enum, default_value_t = XdpMode::Auto)]
    pub xdp_mode: XdpMode,

    /// Pod-facing interfaces (comma separated) to attach `steer_ingress` to at start. Not needed: steering asks
    /// the kernel's FIB which interface reaches each pod and attaches there before the pod's first steered flow;
    /// naming them only moves that attach to start-up. --xdp-iface itself is skipped.
    #[arg(long, env = "ROUTER_XDP_POD_INTERFACES", value_delimiter = ',')]
    pub xdp_pod_interfaces: Vec<String>,

    /// The eBPF programs' debug records (packets passed unparsed, fragments, steered packets dropped or handed
    /// to TC, nodePort drops) as tracing events of target `router::ebpf` (shown with RUST_LOG=router::ebpf=debug).
    /// Off: the verifier removes the records from the programs.
    #[arg(long, env = "ROUTER_XDP_DEBUG_LOG", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub xdp_debug_log: bool,

    /// Route admission, balancing, headers, cookies and client timeouts.
    #[command(flatten)]
    pub routing: RoutingArgs,

    /// Certificates, TLS versions and ciphers, HTTP/2, client certificates, PROXY protocol.
    #[command(flatten)]
    pub tls: TlsArgs,

    /// Request head limits, connections, threads, client and FIN timeouts.
    #[command(flatten)]
    pub limits: LimitArgs,

    /// XDP steering of passthrough connections.
    #[command(flatten)]
    pub steer: SteerArgs,

    /// Compression and header-name case (ROUTER_ENABLE_COMPRESSION, ROUTER_H1_CASE_ADJUST).
    #[command(flatten)]
    pub http: HttpArgs,

    /// Address families and bind timing of the client listeners (ROUTER_IP_V4_V6_MODE,
    /// ROUTER_BIND_PORTS_AFTER_SYNC).
    #[command(flatten)]
    pub listeners: ListenerArgs,

    /// HTTP/3 on the HTTPS port over UDP and its Alt-Svc advertisement (ROUTER_ENABLE_HTTP3).
    #[command(flatten)]
    pub http3: Http3Args,

    /// Access log: syslog destination, level, facility, format, captures, unique id.
    #[command(flatten)]
    pub access_log: AccessLogArgs,

    /// Basic auth on /metrics and /debug/* (STATS_USERNAME, STATS_PASSWORD and their _FILE forms).
    #[command(flatten)]
    pub stats_auth: StatsAuthArgs,

    /// The `haproxy_*` metrics (ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD).
    #[command(flatten)]
    pub metrics: MetricsArgs,

    /// bpffs directory where the XDP maps are pinned.
    #[arg(long, env = "ROUTER_BPF_PIN_DIR", default_value = "/sys/fs/bpf/router")]
    pub bpf_pin_dir: PathBuf,

    /// The router's own Service, NAMESPACE/NAME: its http/https nodePorts go to this node's router endpoints through
    /// the XDP front, and its healthCheckNodePort is answered here.
    #[arg(long, env = "ROUTER_OWN_SERVICE")]
    pub router_service: Option<RouterServiceName>,

    /// This node's name (the EndpointSlice `nodeName` of local endpoints); unset: the host name.
    #[arg(long, env = "NODE_NAME")]
    pub node_name: Option<String>,

    /// Addresses that count as this node's for nodePort traffic (comma separated); unset: every address on
    /// --xdp-iface, re-read every second.
    #[arg(long, env = "ROUTER_XDP_NODE_ADDRESSES", value_delimiter = ',')]
    pub xdp_node_addresses: Vec<IpAddr>,

    /// Entries in each XDP conntrack map (LRU: the least recently used flows are evicted when full).
    #[arg(long, env = "ROUTER_XDP_CONNTRACK_SIZE", default_value_t = crate::xdp::DEFAULT_CONNTRACK_SIZE)]
    pub xdp_conntrack_size: u32,

    /// XDP conntrack: a nodePort flow idle this long is forgotten.
    #[arg(long, env = "ROUTER_XDP_CONNTRACK_IDLE_TIMEOUT", default_value = "1h", value_parser = parse_haproxy_duration)]
    pub xdp_conntrack_idle_timeout: Duration,

    /// XDP conntrack: ... or this long after either side sent a FIN or RST.
    #[arg(long, env = "ROUTER_XDP_CONNTRACK_CLOSING_TIMEOUT", default_value = "60s", value_parser = parse_haproxy_duration)]
    pub xdp_conntrack_closing_timeout: Duration,
}

impl Settings {
    pub fn http_addr(&self) -> SocketAddr {
        SocketAddr::new(self.listen_addr, self.http_port)
    }

    pub fn https_addr(&self) -> SocketAddr {
        SocketAddr::new(self.listen_addr, self.https_port)
    }

    /// `ROUTER_TCP_BALANCE_SCHEME` as an algorithm.
    pub fn tcp_balance(&self) -> Result<BalanceAlgorithm, RoutingError> {
        BalanceAlgorithm::parse(&self.tls.tcp_balance_scheme).ok_or_else(|| RoutingError::Value {
            variable: "ROUTER_TCP_BALANCE_SCHEME",
            value: self.tls.tcp_balance_scheme.clone(),
            why: "expected source, roundrobin, leastconn or random".into(),
        })
    }

    pub fn stats_addr(&self) -> SocketAddr {
        self.stats_listen_addr.unwrap_or(SocketAddr::new(self.listen_addr, self.stats_port))
    }

    /// The source to read, from `--source`, `--manifests`, `--kubeconfig` and whether this runs in a pod.
    pub fn source_choice(&self) -> Result<SourceChoice, SourceChoiceError> {
        let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
        choose_source(self.source, self.manifests.as_ref(), self.kubeconfig.as_ref(), in_cluster)
    }

    /// Settings for an in-process router on free loopback ports, as tests and tools start it.
    pub fn for_loopback(manifests: impl Into<PathBuf>) -> Self {
        let mut settings = Settings::parse_from(["router", "--manifests", "/dev/null"]);
        settings.manifests = Some(manifests.into());
        settings.source = Some(SourceKind::Manifests);
        settings.listen_addr = IpAddr::V4(Ipv4Addr::LOCALHOST);
        settings.http_port = 0;
        settings.https_port = 0;
        settings.stats_port = 0;
        settings.allow_loopback_endpoints = true;
        settings
    }
}
