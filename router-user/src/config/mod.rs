//! Settings: clap flags, each bound to the OpenShift router's environment variable where one exists.

mod duration;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

pub use duration::{parse_haproxy_duration, DurationError, MAX_TIMEOUT};

use crate::xdp::XdpMode;

#[derive(Parser, Clone, Debug)]
#[command(name = "router", version, about = "OpenShift-compatible ingress router with an XDP front")]
pub struct Settings {
    /// Manifest file or directory (the embedded default source), watched for changes.
    #[arg(long, env = "ROUTER_MANIFESTS")]
    pub manifests: PathBuf,

    /// Address the HTTP and HTTPS listeners bind to.
    #[arg(long, env = "ROUTER_BIND_IP", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    pub listen_addr: IpAddr,

    /// HTTP listener port (0 picks a free port).
    #[arg(long, env = "ROUTER_SERVICE_HTTP_PORT", default_value_t = 80)]
    pub http_port: u16,

    /// HTTPS listener port. Reserved: TLS termination is not served yet.
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

    /// Time a client may take to send a complete request head (slowloris protection).
    #[arg(long, env = "ROUTER_SLOWLORIS_TIMEOUT", default_value = "10s", value_parser = parse_haproxy_duration)]
    pub http_request_timeout: Duration,

    /// On SIGTERM, how long to keep serving with /healthz/ready failing before the listeners close.
    #[arg(long, env = "ROUTER_GRACEFUL_SHUTDOWN_DELAY", default_value = "0s", value_parser = parse_haproxy_duration)]
    pub graceful_shutdown_delay: Duration,

    /// Upper bound on waiting for in-flight requests after the listeners close.
    #[arg(long, env = "ROUTER_HARD_STOP_AFTER", default_value = "30s", value_parser = parse_haproxy_duration)]
    pub hard_stop_after: Duration,

    /// Attach the XDP front to this interface.
    #[arg(long, env = "ROUTER_XDP_IFACE")]
    pub xdp_iface: Option<String>,

    /// XDP attach mode: driver with generic fallback (auto), driver only, or generic (skb) only.
    #[arg(long, env = "ROUTER_XDP_MODE", value_enum, default_value_t = XdpMode::Auto)]
    pub xdp_mode: XdpMode,

    /// bpffs directory where the XDP maps are pinned.
    #[arg(long, env = "ROUTER_BPF_PIN_DIR", default_value = "/sys/fs/bpf/router")]
    pub bpf_pin_dir: PathBuf,
}

impl Settings {
    pub fn http_addr(&self) -> SocketAddr {
        SocketAddr::new(self.listen_addr, self.http_port)
    }

    pub fn stats_addr(&self) -> SocketAddr {
        self.stats_listen_addr.unwrap_or(SocketAddr::new(self.listen_addr, self.stats_port))
    }

    /// Settings for an in-process router on free loopback ports, as tests and tools start it.
    pub fn for_loopback(manifests: impl Into<PathBuf>) -> Self {
        let mut settings = Settings::parse_from(["router", "--manifests", "/dev/null"]);
        settings.manifests = manifests.into();
        settings.listen_addr = IpAddr::V4(Ipv4Addr::LOCALHOST);
        settings.http_port = 0;
        settings.https_port = 0;
        settings.stats_port = 0;
        settings.allow_loopback_endpoints = true;
        settings
    }
}
