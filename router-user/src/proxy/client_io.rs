//! Client connection timers, kept in the socket wrapper because hyper has no separate idle timer:
//! a request head must arrive within `http_request` (slowloris, ROUTER_SLOWLORIS_TIMEOUT, 10 s) of the
//! connection opening or of its first byte, and an idle keep-alive connection is closed after `keep_alive`
//! (ROUTER_SLOWLORIS_HTTP_KEEPALIVE, 300 s). While a request is being served, from its head until its
//! response body is finished or dropped, no client timer runs. On an HTTP/2 connection the bytes between
//! requests may be control frames (PING, WINDOW_UPDATE, SETTINGS), so they do not start the head timer:
//! an idle HTTP/2 connection follows the keep-alive timer until its next stream.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
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
    /// HTTP/2: bytes read between requests do not start the head timer.
    multiplexed: bool,
    /// For the access log: requests started, whether the client sent any byte, and the idle time before
    /// the current request's first byte.
    requests: AtomicU32,
    received: AtomicBool,
    idle_ms: AtomicU64,
}

/// When the current request's head began and how long the connection idled before it (access-log timers).
#[derive(Clone, Copy, Debug)]
pub struct HeadTiming {
    pub began: Instant,
    pub idle: Duration,
    /// When the connection was opened.
    pub opened: Instant,
    /// The connection's first request.
    pub first: bool,
}

impl ConnectionClock {
    /// The clock of a new connection; `multiplexed` for HTTP/2.
    pub fn new(multiplexed: bool) -> Arc<Self> {
        Arc::new(Self {
            phase: AtomicU8::new(AWAITING_HEAD),
            active: AtomicU32::new(0),
            since_ms: AtomicU64::new(0),
            opened: Instant::now(),
            multiplexed,
            requests: AtomicU32::new(0),
            received: AtomicBool::new(false),
            idle_ms: AtomicU64::new(0),
        })
    }

    /// The timing of the request whose head just arrived; call before [`ConnectionClock::request_started`].
    pub fn head_timing(&self) -> HeadTiming {
        let first = self.requests.load(Ordering::Acquire) == 0;
        let awaiting = self.phase.load(Ordering::Acquire) == AWAITING_HEAD;
        let (began, idle) = match !self.multiplexed && awaiting {
            true => (self.since(), Duration::from_millis(self.idle_ms.load(Ordering::Acquire))),
            false => (Instant::now(), Duration::ZERO),
        };
        HeadTiming { began, idle, opened: self.opened, first }
    }

    /// Whether any request was started on this connection, and whether the client sent any byte.
    pub fn requests_and_bytes(&self) -> (bool, bool) {
        (self.requests.load(Ordering::Acquire) > 0, self.received.load(Ordering::Acquire))
    }

    pub fn opened(&self) -> Instant {
        self.opened
    }

    /// A request head arrived: no client timer until the returned guard is dropped, which the response body
    /// that carries it does when it is finished or dropped (see [`InFlightBody`]).
    pub fn request_started(self: &Arc<Self>) -> RequestInFlight {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.requests.fetch_add(1, Ordering::AcqRel);
        self.phase.store(BUSY, Ordering::Release);
        RequestInFlight { clock: Some(self.clone()) }
    }

    /// The request's response is over: when no other request is in flight, the connection idles until the
    /// next.
    fn request_finished(&self) {
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.set(IDLE);
        }
    }

    /// A request is being served (its response body included).
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

/// One request being served. Dropping it ends the request for the client timers.
pub struct RequestInFlight {
    clock: Option<Arc<ConnectionClock>>,
}

impl RequestInFlight {
    /// The connection became a tunnel with its own idle timer: the client timers stay off for good.
    pub fn keep_timers_off(&mut self) {
        self.clock = None;
    }
}

impl Drop for RequestInFlight {
    fn drop(&mut self) {
        if let Some(clock) = self.clock.take() {
            clock.request_finished();
        }
    }
}

/// A response body that keeps its request in flight until the body is finished or dropped: an HTTP/2 stream
/// (or a long HTTP/1.1 download) is still being served after its response head went out.
pub struct InFlightBody<B> {
    body: B,
    _request: RequestInFlight,
}

impl<B> InFlightBody<B> {
    pub fn new(body: B, request: RequestInFlight) -> Self {
        Self { body, _request: request }
    }
}

impl<B: Body + Unpin> Body for InFlightBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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
                let read = buf.filled().len() > before;
                if read {
                    self.clock.received.store(true, Ordering::Relaxed);
                }
                if read && !self.clock.multiplexed && self.clock.phase.load(Ordering::Acquire) == IDLE {
                    // The first byte of the next request: its head has `http_request` to complete.
                    let idle = self.clock.since().elapsed().as_millis() as u64;
                    self.clock.idle_ms.store(idle, Ordering::Release);
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const HEAD: Duration = Duration::from_millis(100);
    const KEEP_ALIVE: Duration = Duration::from_millis(300);
    /// Longer than both timers.
    const QUIET: Duration = Duration::from_millis(400);

    #[tokio::test]
    async fn an_http2_connection_keeps_no_timer_while_a_response_streams_and_pings_do_not_start_the_head_timer() {
        let (near, mut far) = tokio::io::duplex(1024);
        let clock = ConnectionClock::new(true);
        let mut io = ClientIo::new(near, clock.clone(), HEAD, KEEP_ALIVE);
        let mut byte = [0u8; 1];

        let stream = clock.request_started();
        // A WINDOW_UPDATE while the response body streams, then silence: no timer fires.
        far.write_all(b"w").await.expect("write");
        assert_eq!(io.read(&mut byte).await.expect("read"), 1);
        assert!(tokio::time::timeout(QUIET, io.read(&mut byte)).await.is_err(), "no client timer while serving");
        assert!(clock.busy());

        // The body is done: idle. A PING is not a request head, so only the keep-alive timer runs.
        drop(stream);
        assert!(!clock.busy());
        far.write_all(b"p").await.expect("write");
        assert_eq!(io.read(&mut byte).await.expect("read"), 1);
        let waited = tokio::time::timeout(Duration::from_secs(2), io.read(&mut byte)).await.expect("a timer fires");
        assert_eq!(waited.expect_err("idle timeout").kind(), io::ErrorKind::TimedOut);
        assert_eq!(clock.phase.load(Ordering::Acquire), IDLE, "the keep-alive timer, not the head timer");
    }

    #[tokio::test]
    async fn on_http1_the_first_byte_after_idle_starts_the_head_timer() {
        let (near, mut far) = tokio::io::duplex(1024);
        let clock = ConnectionClock::new(false);
        let mut io = ClientIo::new(near, clock.clone(), HEAD, KEEP_ALIVE);
        drop(clock.request_started());
        far.write_all(b"G").await.expect("write");
        let mut byte = [0u8; 1];
        assert_eq!(io.read(&mut byte).await.expect("read"), 1);
        assert_eq!(clock.phase.load(Ordering::Acquire), AWAITING_HEAD);
        let waited = tokio::time::timeout(Duration::from_secs(2), io.read(&mut byte)).await.expect("a timer fires");
        assert_eq!(waited.expect_err("head timeout").kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn a_request_that_became_a_tunnel_keeps_the_timers_off() {
        let (near, _far) = tokio::io::duplex(1024);
        let clock = ConnectionClock::new(false);
        let mut io = ClientIo::new(near, clock.clone(), HEAD, KEEP_ALIVE);
        let mut upgraded = clock.request_started();
        upgraded.keep_timers_off();
        drop(upgraded);
        let mut byte = [0u8; 1];
        assert!(tokio::time::timeout(QUIET, io.read(&mut byte)).await.is_err(), "no client timer on a tunnel");
    }
}
