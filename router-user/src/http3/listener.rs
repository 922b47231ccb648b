//! The HTTP/3 accept loop of each QUIC endpoint, and its end: on shutdown (SIGTERM after the graceful delay,
//! or a hand-over) the endpoint refuses new handshakes at once, each open connection sends GOAWAY and
//! closes once its requests in flight are answered (see `connection`), and after at most the hard-stop
//! period the endpoint closes whatever is left (CONNECTION_CLOSE to every client) and every task it started
//! is ended.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{debug, info};

use super::codes::H3_NO_ERROR;
use super::connection::serve_connection;
use super::setup::Http3Endpoints;
use crate::https::HttpsContext;
use crate::listen::stop_requested;

/// After the endpoint is closed, how long to wait for its CONNECTION_CLOSE frames to leave.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Serves HTTP/3 on every endpoint until `shutdown`, then drains for up to `drain`.
pub async fn serve_http3(
    endpoints: Http3Endpoints,
    context: Arc<HttpsContext>,
    shutdown: watch::Receiver<bool>,
    drain: Duration,
) {
    let serving = endpoints
        .endpoints
        .into_iter()
        .map(|endpoint| serve_endpoint(endpoint, context.clone(), shutdown.clone(), drain));
    futures_util::future::join_all(serving).await;
}

async fn serve_endpoint(
    endpoint: quinn::Endpoint,
    context: Arc<HttpsContext>,
    mut shutdown: watch::Receiver<bool>,
    drain: Duration,
) {
    // Dropped at the end, which aborts any connection still running past the hard-stop period.
    let mut connections = JoinSet::new();
    let Ok(local) = endpoint.local_addr() else { return };
    loop {
        tokio::select! {
            incoming = endpoint.accept() => match incoming {
                Some(incoming) => {
                    connections.spawn(serve_connection(incoming, local, context.clone(), shutdown.clone()));
                }
                None => break,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stop_requested(&mut shutdown) => break,
        }
    }
    // No new handshakes: a client's Initial now gets a refusal and it stays on (or goes back to) TCP.
    endpoint.set_server_config(None);
    let drained = tokio::time::timeout(drain, async { while connections.join_next().await.is_some() {} });
    if drained.await.is_err() {
        info!(open = connections.len(), "hard stop: closing the HTTP/3 connections still open");
    }
    endpoint.close(H3_NO_ERROR, b"router stopped");
    connections.shutdown().await;
    if tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await.is_err() {
        debug!("HTTP/3 endpoint closed before every client acknowledged");
    }
}
