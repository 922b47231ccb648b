//! The byte tunnel of an upgraded exchange (WebSocket): both ways until both sides close, or until neither
//! side has sent anything for the route's tunnel timeout (`timeout-tunnel`, default 1 h).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tracing::debug;

use super::pod::PodUpgrade;
use super::prefixed::Prefixed;

/// The pod side of an upgraded exchange: from hyper's client, or the router's own HTTP/1.1 client.
pub enum PodSide {
    Hyper(OnUpgrade),
    Direct(PodUpgrade),
}

pub async fn tunnel(client: OnUpgrade, pod: PodSide, idle_limit: Duration) {
    let client = match client.await {
        Ok(client) => TokioIo::new(client),
        Err(error) => {
            debug!(%error, "client upgrade did not complete");
            return;
        }
    };
    match pod {
        PodSide::Hyper(pod) => match pod.await {
            Ok(pod) => relay(client, TokioIo::new(pod), idle_limit).await,
            Err(error) => debug!(%error, "pod upgrade did not complete"),
        },
        PodSide::Direct(upgrade) => match upgrade.take() {
            Some((stream, leftover)) => relay(client, Prefixed::new(leftover, stream), idle_limit).await,
            None => debug!("pod connection of the upgrade already taken"),
        },
    }
}

/// Copies both ways until both sides close or nothing moves for `idle_limit`.
async fn relay<C, P>(client: C, pod: P, idle_limit: Duration)
where
    C: AsyncRead + AsyncWrite + Unpin,
    P: AsyncRead + AsyncWrite + Unpin,
{
    let started = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let mut client = Activity { io: client, last: last.clone(), started };
    let mut pod = Activity { io: pod, last: last.clone(), started };
    let copy = tokio::io::copy_bidirectional(&mut client, &mut pod);
    tokio::pin!(copy);
    loop {
        let idle_since = started + Duration::from_millis(last.load(Ordering::Relaxed));
        tokio::select! {
            result = &mut copy => {
                if let Err(error) = result {
                    debug!(%error, "tunnel ended with an error");
                }
                return;
            }
            _ = tokio::time::sleep_until((idle_since + idle_limit).into()) => {
                let latest = started + Duration::from_millis(last.load(Ordering::Relaxed));
                if latest + idle_limit <= Instant::now() {
                    debug!(?idle_limit, "tunnel idle for too long; closing it");
                    return;
                }
            }
        }
    }
}

/// Records the time of the last byte read, in milliseconds since the tunnel started.
struct Activity<T> {
    io: T,
    last: Arc<AtomicU64>,
    started: Instant,
}

impl<T: AsyncRead + Unpin> AsyncRead for Activity<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.last.store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Activity<T> {
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
