//! Settings of the `haproxy_*` metrics, with openshift/router's variable names.

use clap::Args;

#[derive(Args, Clone, Debug)]
pub struct MetricsArgs {
    /// With more servers (endpoints) than this, `haproxy_server_*` rows are left out and only frontends and
    /// backends are published (0: the default).
    #[arg(long, env = "ROUTER_METRICS_HAPROXY_SERVER_THRESHOLD", default_value_t = crate::metrics::haproxy::DEFAULT_SERVER_THRESHOLD)]
    pub metrics_server_threshold: u64,
}
