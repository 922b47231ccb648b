//! Client connection timers, kept in the socket wrapper because hyper has no separate idle timer:
//! a request head must arrive within `http_request` (slowloris, ROUTER_SLOWLORIS_TIMEOUT, 10 s) of the
//! connection opening or of its first byte, and an idle keep-alive connection is closed after `keep_alive`
//! (ROUTER_SLOWLORIS_HTTP_KEEPALIVE, 300 s). While a request is being served no client timer runs.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

const AWAITING_HEAD: u8 = 0;
const BUSY: u8 = 1;
const IDLE: u8 = 2;

/// Shared between the socket wrapper and the request handler of one connection.
#[derive(Debug)]
pub struct ConnectionClock {
    phase: AtomicU8,
    /// Requests being served (HTTP/2 serves several at once).
    active: AtomicU32,
    /// Milliseconds since `opened` when the current phase began.
    since_ms: AtomicU64,
    opened: Instant,
}

impl ConnectionClock {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            phase: AtomicU8::new(AWAITING_HEAD),
            active: AtomicU32::new(0),
            since_ms: AtomicU64::new(0),
            opened: Instant::now(),
        })
    }

    /// A request head arrived: no client timer while it is served.
    pub fn request_started(&self) {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.phase.store(BUSY, Ordering::Release);
    }

    /// The response head went out: when no other request is in flight, the connection idles until the next.
    pub fn request_finished(&self) {
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.set(IDLE);
        }
    }

    /// A request is being served.
    pub fn busy(&self) -> bool {
        self.active.load(Ordering::Acquire) > 0
    }

    fn set(&self, phase: u8) {
        self.since_ms.store(self.opened.elapsed().as_millis() as u64, Ordering::Release);
        self.phase.store(phase, Ordering::Release);
    }

    fn since(&self) -> Instant {
        self.opened + Duration::from_millis(self.since_ms.load(Ordering::Acquire))
    }
}

pub struct ClientIo<S> {
    io: S,
    clock: Arc<ConnectionClock>,
    http_request: Duration,
    keep_alive: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<S> ClientIo<S> {
    pub fn new(io: S, clock: Arc<ConnectionClock>, http_request: Duration, keep_alive: Duration) -> Self {
        let timer = Box::pin(tokio::time::sleep_until(clock.opened + http_request));
        Self { io, clock, http_request, keep_alive, timer }
    }

    fn deadline(&self) -> Option<Instant> {
        match self.clock.phase.load(Ordering::Acquire) {
            AWAITING_HEAD => Some(self.clock.since() + self.http_request),
            IDLE => Some(self.clock.since() + self.keep_alive),
            _ => None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ClientIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before && self.clock.phase.load(Ordering::Acquire) == IDLE {
                    // The first byte of the next request: its head has `http_request` to complete.
                    self.clock.set(AWAITING_HEAD);
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let Some(deadline) = self.deadline() else { return Poll::Pending };
                if self.timer.deadline() != deadline {
                    self.timer.as_mut().reset(deadline);
                }
                match self.timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "client timeout"))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ClientIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
