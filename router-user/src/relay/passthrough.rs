//! How a passthrough connection's bytes are carried once its pod is connected and the ClientHello sent on:
//! by the sockmap relay in the kernel when it is loaded and takes the connection, else by the splice(2)
//! relay. Before a pod is connected, a connection may be offered to the XDP datapath (`steer`), which
//! carries it without the router when the setup succeeds.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tracing::debug;

use super::idle::FinTimeouts;
use super::sockmap::SockmapRelay;
use super::splice::splice_relay_closing;
pub use super::steer::SteerOutcome;
use super::steer::{FlowHold, Steering};
use super::RelayStats;

/// The relays passthrough connections may use, chosen once at start.
pub struct PassthroughRelay {
    /// The sockmap relay, when asked for (`ROUTER_PASSTHROUGH_SOCKMAP`) and loaded.
    sockmap: Option<Arc<SockmapRelay>>,
    /// The XDP steering setup, when `--xdp-steer-passthrough` and the XDP front's maps allow.
    steering: Option<Arc<Steering>>,
    /// The splice(2) relay's idle limits once a side has closed (the sockmap relay keeps the tunnel timeout).
    fin: Option<FinTimeouts>,
}

impl PassthroughRelay {
    /// Loads the sockmap relay when `sockmap` and the kernel and privileges allow (logging the outcome);
    /// the splice(2) relay is always there.
    pub fn start(sockmap: bool) -> Self {
        PassthroughRelay { sockmap: SockmapRelay::start(sockmap), steering: None, fin: None }
    }

    /// Half-closed connections on the splice(2) relay close after `fin`'s timeouts.
    pub fn with_fin_timeouts(self, fin: FinTimeouts) -> Self {
        PassthroughRelay { fin: Some(fin), ..self }
    }

    /// Offers passthrough connections to `steering` first.
    pub fn with_steering(mut self, steering: Option<Arc<Steering>>) -> Self {
        self.steering = steering;
        self
    }

    /// Whether connections are offered to the XDP datapath (the pod must then be chosen first).
    pub fn steers(&self) -> bool {
        self.steering.is_some()
    }

    /// Offers `client` (whose bytes so far are `hello`) to the XDP datapath for `pod`; without
    /// steering, or when the setup falls back, the connection comes back unchanged. A steered flow keeps
    /// `hold` until it ends.
    pub async fn steer(
        &self,
        client: TcpStream,
        hello: &[u8],
        pod: std::net::SocketAddr,
        idle_timeout: Duration,
        hold: FlowHold,
    ) -> SteerOutcome {
        match &self.steering {
            Some(steering) => steering.steer(client, hello, pod, idle_timeout, hold).await,
            None => SteerOutcome::NotSteered(client),
        }
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
