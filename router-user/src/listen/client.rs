//! What the :80 and :443 listeners know of a client before serving it: the client-side timer settings, and
//! the address its requests are attributed to (the peer, or the source a required PROXY header names).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;
use tracing::debug;

use super::proxy_protocol::read_proxy_header;

/// Client-side settings of the HTTP and HTTPS listeners.
#[derive(Clone, Copy, Debug)]
pub struct ClientTimeouts {
    /// A request head must be complete within this (slowloris protection); also the limit for a PROXY header.
    pub http_request: Duration,
    /// An idle keep-alive connection is closed after this.
    pub keep_alive: Duration,
    /// While a request is served, a client that sends no awaited body byte or reads nothing for this long is
    /// disconnected (ROUTER_DEFAULT_CLIENT_TIMEOUT).
    pub client: Duration,
    /// `ROUTER_USE_PROXY_PROTOCOL`: every connection starts with a PROXY v1/v2 header naming the client.
    pub proxy_protocol: bool,
}

/// The client address a connection's requests are attributed to, and the bytes already read past a PROXY
/// header. `None`: the connection must be closed (no valid header when one is required).
pub async fn client_of(
    stream: &mut TcpStream,
    peer: SocketAddr,
    timeouts: &ClientTimeouts,
) -> Option<(SocketAddr, Vec<u8>)> {
    if !timeouts.proxy_protocol {
        return Some((peer, Vec::new()));
    }
    match read_proxy_header(stream, timeouts.http_request).await {
        // LOCAL (health checks from the balancer itself) and UNKNOWN carry no client: the peer stands.
        Ok(header) => Some((header.source.unwrap_or(peer), header.leftover)),
        Err(error) => {
            debug!(%peer, %error, "connection without a valid PROXY header closed");
            None
        }
    }
}
