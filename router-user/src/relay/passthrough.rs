//! How a passthrough connection's bytes are carried once its pod is connected and the ClientHello sent on:
//! by the sockmap relay in the kernel when it is loaded and takes the connection, else by the splice(2)
//! relay.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tracing::debug;

use super::idle::FinTimeouts;
use super::sockmap::SockmapRelay;
use super::splice::splice_relay_closing;
use super::RelayStats;

/// The relays passthrough connections may use, chosen once at start.
pub struct PassthroughRelay {
    /// The sockmap relay, when asked for (`ROUTER_PASSTHROUGH_SOCKMAP`) and loaded.
    sockmap: Option<Arc<SockmapRelay>>,
    /// The splice(2) relay's idle limits once a side has closed (the sockmap relay keeps the tunnel timeout).
    fin: Option<FinTimeouts>,
}

impl PassthroughRelay {
    /// Loads the sockmap relay when `sockmap` and the kernel and privileges allow (logging the outcome);
    /// the splice(2) relay is always there.
    pub fn start(sockmap: bool) -> Self {
        PassthroughRelay { sockmap: SockmapRelay::start(sockmap), fin: None }
    }

    /// Half-closed connections on the splice(2) relay close after `fin`'s timeouts.
    pub fn with_fin_timeouts(self, fin: FinTimeouts) -> Self {
        PassthroughRelay { fin: Some(fin), ..self }
    }

    /// Relays `client` <-> `pod` until both directions have ended, an error (both reset), or `idle_timeout`
    /// with no byte either way ([`io::ErrorKind::TimedOut`]); on the splice(2) relay, once a side has closed,
    /// its FIN timeout instead.
    pub async fn carry(&self, client: TcpStream, pod: TcpStream, idle_timeout: Duration) -> io::Result<RelayStats> {
        let Some(sockmap) = &self.sockmap else {
            return splice_relay_closing(client, pod, idle_timeout, self.fin).await;
        };
        match sockmap.relay_in_kernel(client, pod, idle_timeout).await {
            Ok(relayed) => relayed,
            Err(refused) => {
                debug!(reason = %refused.reason, "sockmap relay refused the connection; using the splice(2) relay");
                splice_relay_closing(refused.client, refused.pod, idle_timeout, self.fin).await
            }
        }
    }
}
