//! The WebSocket tunnel: the bytes of an upgraded HTTP exchange copied both ways through userspace (the
//! streams may be TLS or carry replayed bytes, so no kernel relay applies) until both sides close, or until
//! neither side has sent anything for the route's tunnel timeout (`timeout-tunnel`, default 1 h); once one side
//! has closed, for its FIN timeout (ROUTER_CLIENT_FIN_TIMEOUT / ROUTER_DEFAULT_SERVER_FIN_TIMEOUT).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tracing::debug;

use super::idle::{ClosedSide, FinTimeouts, IdleTracker};

/// Copies both ways until both sides close or nothing moves for `idle_limit` (once a side has closed: for
/// the other side's `fin` timeout).
pub async fn tunnel<C, P>(client: C, pod: P, idle_limit: Duration, fin: Option<FinTimeouts>)
where
    C: AsyncRead + AsyncWrite + Unpin,
    P: AsyncRead + AsyncWrite + Unpin,
{
    let idle = IdleTracker::new();
    let mut client = Touching { io: client, idle: &idle, side: ClosedSide::Client };
    let mut pod = Touching { io: pod, idle: &idle, side: ClosedSide::Pod };
    let copy = tokio::io::copy_bidirectional(&mut client, &mut pod);
    tokio::pin!(copy);
    loop {
        let limit = idle.limit(idle_limit, fin);
        tokio::select! {
            result = &mut copy => {
                if let Err(error) = result {
                    debug!(%error, "tunnel ended with an error");
                }
                return;
            }
            _ = tokio::time::sleep_until(idle.deadline(limit)) => {
                if idle.expired(limit) {
                    debug!(?limit, "tunnel idle for too long; closing it");
                    return;
                }
            }
            // The limit changes: wait again with the new one.
            () = idle.half_closed(), if fin.is_some() && !idle.is_half_closed() => {}
        }
    }
}

/// A side of the tunnel that records each read that brought bytes, and its end of stream.
struct Touching<'a, T> {
    io: T,
    idle: &'a IdleTracker,
    side: ClosedSide,
}

impl<T: AsyncRead + Unpin> AsyncRead for Touching<'_, T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.idle.touch();
        } else if matches!(result, Poll::Ready(Ok(()))) && buf.remaining() > 0 {
            self.idle.side_closed(self.side);
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Touching<'_, T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
