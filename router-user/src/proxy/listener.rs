//! Accepting client connections and serving HTTP/1.1 on each, with keep-alive, upgrades, a request-head
//! timeout, and graceful shutdown (stop accepting, let in-flight requests finish, close idle connections).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, info_span, warn, Instrument};

use super::client_io::{ClientIo, ConnectionClock};
use super::forwarded::ConnectionInfo;
use super::handler::{ClientConnection, HttpProxy};

/// Client-side timers of the HTTP listener.
#[derive(Clone, Copy, Debug)]
pub struct ClientTimeouts {
    /// A request head must be complete within this (slowloris protection).
    pub http_request: Duration,
    /// An idle keep-alive connection is closed after this.
    pub keep_alive: Duration,
}

/// Serves connections accepted on `listener` until `shutdown` turns true, then waits up to `drain` for open
/// connections to finish their in-flight requests.
pub async fn serve_http(
    listener: TcpListener,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    mut shutdown: watch::Receiver<bool>,
    drain: Duration,
) {
    // Every connection task holds a sender; when all are dropped, `recv` returns None.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    loop {
        tokio::select! {
            _ = stop_requested(&mut shutdown) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, client)) => {
                    let task = serve_connection(stream, client, proxy.clone(), timeouts, shutdown.clone());
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

async fn serve_connection(
    stream: TcpStream,
    client: SocketAddr,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    mut shutdown: watch::Receiver<bool>,
) {
    let Ok(local) = stream.local_addr() else { return };
    let _ = stream.set_nodelay(true);
    let state = Arc::new(ClientConnection::new(ConnectionInfo { client, local, proto: "http" }));
    let clock = ConnectionClock::new();
    let io = ClientIo::new(stream, clock.clone(), timeouts.http_request, timeouts.keep_alive);
    let span = info_span!("conn", %client);
    async move {
        let service = service_fn(move |request| {
            let (proxy, state, clock) = (proxy.clone(), state.clone(), clock.clone());
            async move {
                clock.request_started();
                let response = proxy.handle(&state, request).await;
                // An upgraded connection becomes a tunnel with its own idle timer: no client timers from here.
                let upgraded = matches!(&response, Ok(r) if r.status() == http::StatusCode::SWITCHING_PROTOCOLS);
                if !upgraded {
                    clock.request_finished();
                }
                response
            }
        });
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .keep_alive(true)
            .serve_connection(TokioIo::new(io), service)
            .with_upgrades();
        tokio::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            _ = stop_requested(&mut shutdown) => {
                // Finish the request in flight, then close instead of waiting for the next one.
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(error) = result {
            debug!(%error, "connection ended with an error");
        }
    }
    .instrument(span)
    .await
}

/// Resolves once `shutdown` is (or becomes) true, or its sender is gone.
pub async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    // Drop the borrow at once: holding a watch::Ref across an await makes the future !Send.
    let _ = shutdown.wait_for(|stop| *stop).await.map(|_| ());
}
