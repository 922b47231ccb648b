//! The sockmap relay, passthrough bytes carried in the kernel: once a passthrough connection is bound to a
//! pod and the ClientHello forwarded, both sockets go into a SOCKHASH whose `sk_skb` verdict program
//! (`sockmap_verdict` in `router-ebpf/src/sockmap.rs`) moves every received skb to the peer socket's egress,
//! so the bytes never come up to userspace. Userspace only watches for FIN, errors and the idle timeout,
//! carries half-closes and resets across, and removes the entries at the end. Anything that stops the
//! sockmap relay from starting hands both connections back for the splice(2) relay
//! ([`super::splice::splice_relay`]).
//!
//! How a connection is handed to the program, so that no byte is lost or reordered (client C, pod P):
//! 1. `SOCKMAP_PEERS` gets C -> P and P -> C; `SOCKMAP_TARGETS` (no program) gets both sockets, so either may
//!    be redirected to from now on.
//! 2. Per socket S (C, then P), with peer T: the bytes already queued on S are read and written to T by
//!    userspace; then S goes into `SOCKMAP_SOCKS` (the verdict program starts on S); then a data-ready kick
//!    (`SO_RCVLOWAT`) runs the program over whatever arrived between the read and the insert. The program
//!    reads S's queue in order, so those bytes follow the ones userspace wrote.
//! 3. FIN from S: wait until every byte S received went through the program (`sys::bytes_consumed` vs
//!    `bytes_received`) and reached T's send queue (T's `sys::bytes_written` vs the counters), then
//!    shutdown(T, SHUT_WR). The redirect queues bytes on T asynchronously, so a FIN sent at once could
//!    overtake them.
//! 4. An error or reset on either socket resets both (SO_LINGER 0), as the splice(2) relay does.
//!
//! Byte counts come from the program's per-socket counters plus the bytes userspace moved in step 2.

mod connection;
mod maps;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod throughput;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tracing::{info, warn};

use maps::RedirectMaps;
pub use maps::SockmapError;

use super::RelayStats;

/// The loaded sockmap relay, shared by every passthrough connection.
pub struct SockmapRelay {
    maps: RedirectMaps,
}

/// Why the sockmap relay did not take a connection, with both connections handed back for the splice(2)
/// relay. Bytes that were queued on either socket may already have been forwarded; the relay goes on from
/// there.
#[derive(Debug)]
pub struct Refused {
    pub client: TcpStream,
    pub pod: TcpStream,
    pub reason: io::Error,
}

impl SockmapRelay {
    /// Loads and attaches the sockmap relay when `enabled` and the kernel and privileges allow; logs one
    /// line either way. `None`: passthrough connections use the splice(2) relay.
    pub fn start(enabled: bool) -> Option<Arc<SockmapRelay>> {
        if !enabled {
            info!("passthrough sockmap relay off (ROUTER_PASSTHROUGH_SOCKMAP=false); using the splice(2) relay");
            return None;
        }
        match SockmapRelay::load() {
            Ok(sockmap) => {
                info!("passthrough sockmap relay loaded; passthrough bytes are relayed in the kernel");
                Some(Arc::new(sockmap))
            }
            Err(error) => {
                warn!(%error, "passthrough sockmap relay unavailable (needs root or CAP_BPF and CAP_NET_ADMIN, kernel >= 5.13); using the splice(2) relay");
                None
            }
        }
    }

    /// Loads and attaches the program and its maps.
    pub fn load() -> Result<SockmapRelay, SockmapError> {
        Ok(SockmapRelay { maps: RedirectMaps::load()? })
    }

    /// Relays `client` <-> `pod` in the kernel until both directions have ended, with the splice(2) relay's
    /// semantics: a FIN is passed on after the bytes before it; a reset or error resets both and returns the
    /// error; no byte either way for `idle_timeout` closes both with [`io::ErrorKind::TimedOut`]. Call it
    /// right after the ClientHello was written to `pod`.
    ///
    /// `Err(Refused)`: the sockmap relay could not start (a socket already half-closed, maps full, ...);
    /// both connections are intact and the splice(2) relay takes over. The map entries are removed on every
    /// exit.
    pub async fn relay_in_kernel(
        &self,
        client: TcpStream,
        pod: TcpStream,
        idle_timeout: Duration,
    ) -> Result<io::Result<RelayStats>, Refused> {
        connection::run(&self.maps, client, pod, idle_timeout).await
    }

    /// Entries in (`SOCKMAP_SOCKS`, `SOCKMAP_TARGETS`, `SOCKMAP_PEERS`): sockets being relayed.
    pub fn entries(&self) -> (usize, usize, usize) {
        self.maps.entries()
    }
}
