//! The :443 listener: PROXY header (optional), ClientHello inspection, then passthrough to a pod (carried by
//! a `relay`) or TLS termination followed by the HTTP proxy.

mod dispatch;
mod forbidden;
mod inspect;
mod passthrough;
mod setup;
mod stapling;
mod terminate;

pub use inspect::{read_client_hello, InspectError, Inspected};
pub use setup::{TlsSetup, TlsSetupError};
pub use stapling::start_stapling;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::listen::{accept_loop, ClientTimeouts, ConnectionLimit};
use crate::metrics::Metrics;
use crate::proxy::HttpProxy;
use crate::relay::PassthroughRelay;
use crate::table::TableHandle;
use crate::tls::ServerConfigs;

/// Everything a :443 connection needs, shared by all of them.
pub struct HttpsContext {
    pub table: TableHandle,
    pub proxy: Arc<HttpProxy>,
    pub configs: ServerConfigs,
    pub metrics: Arc<Metrics>,
    pub timeouts: ClientTimeouts,
    /// `ROUTER_INSPECT_DELAY`: the longest wait for a complete ClientHello.
    pub inspect_delay: Duration,
    pub connect_timeout: Duration,
    /// `ROUTER_MUTUAL_TLS_AUTH` is not none: requests carry the X-SSL-Client-* headers.
    pub client_cert_headers: bool,
    /// How passthrough bytes are carried: the sockmap relay (`ROUTER_PASSTHROUGH_SOCKMAP`, when it loaded)
    /// or the splice(2) relay.
    pub passthrough_relay: PassthroughRelay,
}

/// Serves :443 (while `limit` has room) until `shutdown`, then waits up to `drain` for open connections.
pub async fn serve_https(
    listener: TcpListener,
    context: Arc<HttpsContext>,
    shutdown: watch::Receiver<bool>,
    drain: Duration,
    limit: Arc<ConnectionLimit>,
) {
    let stop = shutdown.clone();
    accept_loop(listener, stop, drain, limit, move |stream, peer| {
        dispatch::serve_connection(stream, peer, context.clone(), shutdown.clone())
    })
    .await
}
