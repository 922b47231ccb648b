//! The accept loop shared by the :80 and :443 listeners (each connection in its own task, holding its place in
//! the connection limit; on shutdown, stop accepting and wait a bounded time for open connections), and the
//! shutdown signal every listener watches.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tracing::warn;

use super::limit::ConnectionLimit;

/// Accepts until `shutdown`, running `serve` for each connection in its own task, then waits up to `drain`
/// for those tasks. While `limit` connections are open, nothing is accepted: new ones wait in the backlog.
pub async fn accept_loop<F, Fut>(
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    drain: Duration,
    limit: Arc<ConnectionLimit>,
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    // Every connection task holds a sender; when all are dropped, `recv` returns None.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    // Waiting for a pending connection before taking a place in the limit (and accepting only then) keeps an
    // idle listener from holding a place the other listener's connections need.
    // `AsyncFd::new` is deprecated because an inner value could close its descriptor while registered; a
    // std TcpListener owned by the AsyncFd keeps it open until both are dropped together.
    #[allow(deprecated)]
    let listener = match listener.into_std().and_then(AsyncFd::new) {
        Ok(listener) => listener,
        Err(error) => {
            warn!(%error, "cannot watch the listener; not accepting");
            return;
        }
    };
    loop {
        let mut ready = tokio::select! {
            _ = stop_requested(&mut shutdown) => break,
            ready = listener.readable() => match ready {
                Ok(ready) => ready,
                Err(error) => {
                    warn!(%error, "listener failed");
                    break;
                }
            },
        };
        let mut permit = tokio::select! {
            _ = stop_requested(&mut shutdown) => break,
            permit = limit.admit() => match permit {
                Some(permit) => permit,
                None => break,
            },
        };
        match ready.try_io(|listener| listener.get_ref().accept()) {
            Ok(Ok((stream, client))) => {
                let stream = match stream.set_nonblocking(true).and_then(|()| TcpStream::from_std(stream)) {
                    Ok(stream) => stream,
                    Err(error) => {
                        warn!(%error, "cannot register an accepted connection");
                        continue;
                    }
                };
                permit.opened();
                let _ = stream.set_nodelay(true);
                let task = serve(stream, client);
                let alive = alive_tx.clone();
                tokio::spawn(async move {
                    task.await;
                    drop(permit);
                    drop(alive);
                });
            }
            Ok(Err(error)) => {
                // Typically EMFILE: back off briefly instead of spinning.
                warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // Nothing pending after all (the readiness was stale): wait again.
            Err(_would_block) => {}
        }
    }
    // Closed now, not after the drain: a connection must not wait in a queue nobody accepts from (after a
    // hand-over this closes only this process's copy; the next router accepts on the socket).
    drop(listener);
    drop(alive_tx);
    if tokio::time::timeout(drain, alive_rx.recv()).await.is_err() {
        warn!(?drain, "connections still open after the drain period; closing them");
    }
}

/// Resolves once `shutdown` is (or becomes) true, or its sender is gone.
pub async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    // Drop the borrow at once: holding a watch::Ref across an await makes the future !Send.
    let _ = shutdown.wait_for(|stop| *stop).await.map(|_| ());
}
