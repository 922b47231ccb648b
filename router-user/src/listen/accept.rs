//! The accept loop shared by the :80 and :443 listeners (each connection in its own task; on shutdown, stop
//! accepting and wait a bounded time for open connections), and the shutdown signal every listener watches.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tracing::warn;

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

/// Resolves once `shutdown` is (or becomes) true, or its sender is gone.
pub async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    // Drop the borrow at once: holding a watch::Ref across an await makes the future !Send.
    let _ = shutdown.wait_for(|stop| *stop).await.map(|_| ());
}
