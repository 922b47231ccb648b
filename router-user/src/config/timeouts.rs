//! Client-side and half-close timeouts, OpenShift's names for HAProxy's `timeout client`, `timeout client-fin`
//! and `timeout server-fin` (the template's defaults: 30s, 1s, 1s).

use std::time::Duration;

use clap::Args;

use crate::duration::parse_haproxy_duration;
use crate::relay::FinTimeouts;

#[derive(Args, Clone, Debug)]
pub struct TimeoutArgs {
    /// A client that stops sending a request body, or stops reading a response, for this long is disconnected.
    #[arg(long, env = "ROUTER_DEFAULT_CLIENT_TIMEOUT", default_value = "30s", value_parser = parse_haproxy_duration)]
    pub client_timeout: Duration,

    /// Tunnels and passthrough connections: once the pod has closed its side, the client's side may stay
    /// silent this long.
    #[arg(long, env = "ROUTER_CLIENT_FIN_TIMEOUT", default_value = "1s", value_parser = parse_haproxy_duration)]
    pub client_fin_timeout: Duration,

    /// Tunnels and passthrough connections: once the client has closed its side, the pod's side may stay
    /// silent this long.
    #[arg(long, env = "ROUTER_DEFAULT_SERVER_FIN_TIMEOUT", default_value = "1s", value_parser = parse_haproxy_duration)]
    pub server_fin_timeout: Duration,
}

impl TimeoutArgs {
    pub fn fin_timeouts(&self) -> FinTimeouts {
        FinTimeouts { client: self.client_fin_timeout, server: self.server_fin_timeout }
    }
}
