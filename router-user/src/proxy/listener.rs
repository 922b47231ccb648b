//! The :80 listener: each accepted connection, after its PROXY header when one is required, served as
//! plain HTTP/1.1 (keep-alive, upgrades, client timers, graceful shutdown) by `connection`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tracing::{info_span, Instrument};

use super::connection::{serve_client, HttpVersion};
use super::forwarded::ConnectionInfo;
use super::handler::{ClientConnection, HttpProxy};
use crate::listen::{accept_loop, client_of, ClientTimeouts, ConnectionLimit, Prefixed};
use crate::metrics::Frontend;

/// Serves connections accepted on `listener` (while `limit` has room) until `shutdown` turns true, then waits
/// up to `drain` for open connections to finish their in-flight requests.
pub async fn serve_http(
    listener: TcpListener,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    shutdown: watch::Receiver<bool>,
    drain: Duration,
    limit: Arc<ConnectionLimit>,
) {
    let stop = shutdown.clone();
    accept_loop(listener, stop, drain, limit, move |stream, client| {
        serve_plain(stream, client, proxy.clone(), timeouts, shutdown.clone())
    })
    .await
}

async fn serve_plain(
    mut stream: TcpStream,
    peer: SocketAddr,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    shutdown: watch::Receiver<bool>,
) {
    let _session = proxy.metrics().haproxy.frontend(Frontend::Public).open_session();
    let Ok(local) = stream.local_addr() else { return };
    let Some((client, leftover)) = client_of(&mut stream, peer, &timeouts).await else { return };
    let state = ClientConnection::new(ConnectionInfo { client, local, proto: "http" });
    let io = Prefixed::new(leftover, stream);
    let span = info_span!("conn", %client);
    serve_client(io, state, proxy, timeouts, shutdown, HttpVersion::Http1).instrument(span).await
}
