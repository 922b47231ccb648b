//! How a passthrough connection's bytes are carried once its pod is connected and the ClientHello sent on:
//! by the sockmap relay in the kernel when it is loaded and takes the connection, else by the splice(2)
//! relay.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tracing::debug;

use super::sockmap::SockmapRelay;
use super::splice::splice_relay;
use super::RelayStats;

/// The relays passthrough connections may use, chosen once at start.
pub struct PassthroughRelay {
    /// The sockmap relay, when asked for (`ROUTER_PASSTHROUGH_SOCKMAP`) and loaded.
    sockmap: Option<Arc<SockmapRelay>>,
}

impl PassthroughRelay {
    /// Loads the sockmap relay when `sockmap` and the kernel and privileges allow (logging the outcome);
    /// the splice(2) relay is always there.
    pub fn start(sockmap: bool) -> Self {
        PassthroughRelay { sockmap: SockmapRelay::start(sockmap) }
    }

    /// Relays `client` <-> `pod` until both directions have ended, an error (both reset), or `idle_timeout`
    /// with no byte either way ([`io::ErrorKind::TimedOut`]).
    pub async fn carry(&self, client: TcpStream, pod: TcpStream, idle_timeout: Duration) -> io::Result<RelayStats> {
        let Some(sockmap) = &self.sockmap else { return splice_relay(client, pod, idle_timeout).await };
        match sockmap.relay_in_kernel(client, pod, idle_timeout).await {
            Ok(relayed) => relayed,
            Err(refused) => {
                debug!(reason = %refused.reason, "sockmap relay refused the connection; using the splice(2) relay");
                splice_relay(refused.client, refused.pod, idle_timeout).await
            }
        }
    }
}
