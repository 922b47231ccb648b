//! The :443 listener: PROXY header (optional), ClientHello inspection, then passthrough to a pod or TLS
//! termination followed by the HTTP proxy.

mod dispatch;
mod inspect;
mod passthrough;
mod setup;
mod sockmap;
mod splice;
mod terminate;

pub use inspect::{read_client_hello, InspectError, Inspected};
pub use setup::{TlsSetup, TlsSetupError};
pub use sockmap::{Refused, Sockmap, SockmapError};
pub use splice::{relay, RelayStats};

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::proxy::{accept_loop, ClientTimeouts, HttpProxy};
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
    /// The kernel passthrough relay (`ROUTER_PASSTHROUGH_SOCKMAP`, when it loaded); `None`: userspace relay.
    pub passthrough_sockmap: Option<Arc<Sockmap>>,
}

/// Serves :443 until `shutdown`, then waits up to `drain` for open connections.
pub async fn serve_https(
    listener: TcpListener,
    context: Arc<HttpsContext>,
    shutdown: watch::Receiver<bool>,
    drain: Duration,
) {
    let stop = shutdown.clone();
    accept_loop(listener, stop, drain, move |stream, peer| {
        dispatch::serve_connection(stream, peer, context.clone(), shutdown.clone())
    })
    .await
}
