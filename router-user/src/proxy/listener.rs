//! Accepting client connections on :80 (and, through `accept_loop`, on :443): an optional PROXY protocol
//! header first, then HTTP/1.1 with keep-alive, upgrades, client timers and graceful shutdown (stop
//! accepting, let in-flight requests finish, close idle connections).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, info_span, warn, Instrument};

use super::connection::{serve_client, HttpVersion};
use super::forwarded::ConnectionInfo;
use super::handler::{ClientConnection, HttpProxy};
use super::prefixed::Prefixed;
use super::proxy_protocol::read_proxy_header;

/// Client-side settings of the HTTP and HTTPS listeners.
#[derive(Clone, Copy, Debug)]
pub struct ClientTimeouts {
    /// A request head must be complete within this (slowloris protection); also the limit for a PROXY header.
    pub http_request: Duration,
    /// An idle keep-alive connection is closed after this.
    pub keep_alive: Duration,
    /// `ROUTER_USE_PROXY_PROTOCOL`: every connection starts with a PROXY v1/v2 header naming the client.
    pub proxy_protocol: bool,
}

/// Serves connections accepted on `listener` until `shutdown` turns true, then waits up to `drain` for open
/// connections to finish their in-flight requests.
pub async fn serve_http(
    listener: TcpListener,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    shutdown: watch::Receiver<bool>,
    drain: Duration,
) {
    let stop = shutdown.clone();
    accept_loop(listener, stop, drain, move |stream, client| {
        serve_plain(stream, client, proxy.clone(), timeouts, shutdown.clone())
    })
    .await
}

/// Accepts until `shutdown`, running `serve` for each connection in its own task, then waits up to `drain`
/// for those tasks.
pub async fn accept_loop<F, Fut>(listener: TcpListener, mut shutdown: watch::Receiver<bool>, drain: Duration, serve: F)
where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    // Every connection task holds a sender; when all are dropped, `recv` returns None.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    loop {
        tokio::select! {
            _ = stop_requested(&mut shutdown) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, client)) => {
                    let _ = stream.set_nodelay(true);
                    let task = serve(stream, client);
                    let alive = alive_tx.clone();
                    tokio::spawn(async move {
                        task.await;
                        drop(alive);
                    });
                }
                Err(error) => {
                    // Typically EMFILE: back off briefly instead of spinning.
                    warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    drop(alive_tx);
    if tokio::time::timeout(drain, alive_rx.recv()).await.is_err() {
        warn!(?drain, "connections still open after the drain period; closing them");
    }
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

async fn serve_plain(
    mut stream: TcpStream,
    peer: SocketAddr,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    shutdown: watch::Receiver<bool>,
) {
    let Ok(local) = stream.local_addr() else { return };
    let Some((client, leftover)) = client_of(&mut stream, peer, &timeouts).await else { return };
    let state = ClientConnection::new(ConnectionInfo { client, local, proto: "http" });
    let io = Prefixed::new(leftover, stream);
    let span = info_span!("conn", %client);
    serve_client(io, state, proxy, timeouts, shutdown, HttpVersion::Http1).instrument(span).await
}

/// Resolves once `shutdown` is (or becomes) true, or its sender is gone.
pub async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    // Drop the borrow at once: holding a watch::Ref across an await makes the future !Send.
    let _ = shutdown.wait_for(|stop| *stop).await.map(|_| ());
}
