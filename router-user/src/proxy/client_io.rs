//! Client connection timers, kept in the socket wrapper so that both servers (the own HTTP/1.1 loop and
//! hyper's HTTP/2) keep them alike:
//! a request head must arrive within `http_request` (slowloris, ROUTER_SLOWLORIS_TIMEOUT, 10 s) of the
//! connection opening or of its first byte, and an idle keep-alive connection is closed after `keep_alive`
//! (ROUTER_SLOWLORIS_HTTP_KEEPALIVE, 300 s). While a request is being served, from its head until its
//! response body is finished or dropped, no client timer runs. On an HTTP/2 connection the bytes between
//! requests may be control frames (PING, WINDOW_UPDATE, SETTINGS), so they do not start the head timer:
//! an idle HTTP/2 connection follows the keep-alive timer until its next stream.
//!
//! While a request is served, the client timeout (ROUTER_DEFAULT_CLIENT_TIMEOUT, HAProxy's `timeout client`,
//! 30 s) runs whenever the client is expected to act: while a request body waits for the client's next bytes
//! ([`BodyWait`], HTTP/1 only: an HTTP/2 connection carries other streams meanwhile), and while a write waits
//! for the client to read (any phase, until the connection becomes a tunnel). When it passes,
//! the connection fails with [`io::ErrorKind::TimedOut`]; a request body cut that way never reaches the pod whole.
//!
//! When the head timer passes on HTTP/1, the client first gets HAProxy's 408 (`request_timeout`), unless
//! ROUTER_HTTP_IGNORE_PROBES is set and it never sent a byte; the keep-alive timer closes silently.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::request_timeout::TimeoutReply;

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
    /// Request bodies waiting for the client's bytes.
    body_waits: AtomicU32,
    /// Milliseconds since `opened` when the first of those began to wait.
    body_wait_since_ms: AtomicU64,
    /// The socket wrapper's task, woken when a body starts waiting so that it arms the client timeout.
    reader: Mutex<Option<Waker>>,
    /// The connection became a tunnel: no client timer at all.
    tunnelled: AtomicBool,
    /// For the access log: requests started, whether the client sent any byte, and the idle time before
    /// the current request's first byte.
    requests: AtomicU32,
    received: AtomicBool,
    idle_ms: AtomicU64,
    /// The head timer passed (the access log learns it here, whichever server saw the failed read).
    head_timed_out: AtomicBool,
}

/// A request head the connection was waiting for when it ended (see [`ConnectionClock::unfinished_head`]).
#[derive(Clone, Copy, Debug)]
pub struct UnfinishedHead {
    /// When it began: the connection's opening for the first, the first byte of a later one.
    pub began: Instant,
    /// The client sent some of it.
    pub received: bool,
    /// ROUTER_SLOWLORIS_TIMEOUT passed while waiting for it.
    pub timed_out: bool,
    /// It was the connection's first.
    pub first: bool,
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
            body_waits: AtomicU32::new(0),
            body_wait_since_ms: AtomicU64::new(0),
            reader: Mutex::new(None),
            tunnelled: AtomicBool::new(false),
            head_timed_out: AtomicBool::new(false),
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

    /// The request head the connection was waiting for, if any: the first (whether or not a byte came), or on
    /// HTTP/1 a later one whose first bytes came. `None` between requests and while one is served.
    pub fn unfinished_head(&self) -> Option<UnfinishedHead> {
        let received = self.received.load(Ordering::Acquire);
        let timed_out = self.head_timed_out.load(Ordering::Acquire);
        if self.requests.load(Ordering::Acquire) == 0 {
            return Some(UnfinishedHead { began: self.opened, received, timed_out, first: true });
        }
        let awaiting = !self.multiplexed && self.phase.load(Ordering::Acquire) == AWAITING_HEAD;
        awaiting.then(|| UnfinishedHead { began: self.since(), received: true, timed_out, first: false })
    }

    /// A request body waits for the client's next bytes: the client timeout runs until [`BodyWait`] says the
    /// bytes came.
    fn body_wait_started(&self) {
        if self.body_waits.fetch_add(1, Ordering::AcqRel) == 0 {
            self.body_wait_since_ms.store(self.elapsed_ms(), Ordering::Release);
        }
        let reader = self.reader.lock().map(|mut waker| waker.take()).unwrap_or_default();
        if let Some(reader) = reader {
            reader.wake();
        }
    }

    fn body_wait_ended(&self) {
        self.body_waits.fetch_sub(1, Ordering::AcqRel);
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
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
        self.since_ms.store(self.elapsed_ms(), Ordering::Release);
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
        if let Some(clock) = self.clock.take() {
            // The tunnel's own idle timer replaces the client timeout on writes too (HAProxy's `timeout tunnel`).
            clock.tunnelled.store(true, Ordering::Release);
        }
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

/// A request body's view of the client timeout: [`BodyWait::waiting`] when the body has no bytes to give,
/// [`BodyWait::received`] when it has; dropping it ends any wait.
#[derive(Debug)]
pub struct BodyWait {
    clock: Arc<ConnectionClock>,
    waiting: bool,
}

impl BodyWait {
    pub fn new(clock: Arc<ConnectionClock>) -> Self {
        Self { clock, waiting: false }
    }

    pub fn waiting(&mut self) {
        if !self.waiting {
            self.waiting = true;
            self.clock.body_wait_started();
        }
    }

    pub fn received(&mut self) {
        if self.waiting {
            self.waiting = false;
            self.clock.body_wait_ended();
        }
    }
}

impl Drop for BodyWait {
    fn drop(&mut self) {
        self.received();
    }
}

/// The client-side timer lengths of one connection.
#[derive(Clone, Copy, Debug)]
pub struct ClientTimers {
    /// A request head must be complete within this (ROUTER_SLOWLORIS_TIMEOUT).
    pub http_request: Duration,
    /// An idle keep-alive connection closes after this (ROUTER_SLOWLORIS_HTTP_KEEPALIVE).
    pub keep_alive: Duration,
    /// The client must send a waited-for body byte, or read what is written to it, within this
    /// (ROUTER_DEFAULT_CLIENT_TIMEOUT).
    pub client: Duration,
    /// ROUTER_HTTP_IGNORE_PROBES: a connection that sent nothing gets no 408 when the head timer passes.
    pub ignore_probes: bool,
}

/// The connection clock a request's body reports its waits to, carried in the request's extensions.
#[derive(Clone, Debug)]
pub struct BodyWaitClock(pub Arc<ConnectionClock>);

impl BodyWaitClock {
    pub fn body_wait(&self) -> BodyWait {
        BodyWait::new(self.0.clone())
    }
}

pub struct ClientIo<S> {
    io: S,
    clock: Arc<ConnectionClock>,
    timers: ClientTimers,
    timer: Pin<Box<Sleep>>,
    /// Runs while a write waits for the client to read; `None` when the last write went through.
    write_timer: Option<Pin<Box<Sleep>>>,
    /// The head timer passed: the 408 on its way out, after which reads fail.
    reply: Option<TimeoutReply>,
}

impl<S> ClientIo<S> {
    pub fn new(io: S, clock: Arc<ConnectionClock>, timers: ClientTimers) -> Self {
        let timer = Box::pin(tokio::time::sleep_until(clock.opened + timers.http_request));
        Self { io, clock, timers, timer, write_timer: None, reply: None }
    }

    fn deadline(&self) -> Option<Instant> {
        match self.clock.phase.load(Ordering::Acquire) {
            AWAITING_HEAD => Some(self.clock.since() + self.timers.http_request),
            IDLE => Some(self.clock.since() + self.timers.keep_alive),
            _ if self.clock.body_waits.load(Ordering::Acquire) > 0 => {
                let since = Duration::from_millis(self.clock.body_wait_since_ms.load(Ordering::Acquire));
                Some(self.clock.opened + since + self.timers.client)
            }
            _ => None,
        }
    }

    /// While a request is served, a body that starts waiting must be able to arm the timer of this task.
    fn remember_reader(&self, cx: &Context<'_>) {
        if self.clock.phase.load(Ordering::Acquire) != BUSY {
            return;
        }
        if let Ok(mut reader) = self.clock.reader.lock() {
            if !reader.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
                *reader = Some(cx.waker().clone());
            }
        }
    }

    /// A write is pending: fails once the client has read nothing for the client timeout.
    fn poll_write_timer(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let client = self.timers.client;
        let timer = self.write_timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(client)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading"))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn written<T>(&mut self, polled: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending if self.clock.tunnelled.load(Ordering::Acquire) => Poll::Pending,
            Poll::Pending => match self.poll_write_timer(cx) {
                Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
                _ => Poll::Pending,
            },
            ready => {
                self.write_timer = None;
                ready
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> ClientIo<S> {
    /// The head timer passed: whether the client is told so with a 408 (HTTP/1, and not a probe that
    /// ROUTER_HTTP_IGNORE_PROBES says to drop silently).
    fn answers_head_timeout(&self) -> bool {
        let clock = &self.clock;
        let probe = !clock.received.load(Ordering::Acquire);
        clock.phase.load(Ordering::Acquire) == AWAITING_HEAD
            && !clock.multiplexed
            && !(self.timers.ignore_probes && probe)
    }

    /// Sends the 408, bounded by the client timeout, then fails the read whatever became of it.
    fn poll_reply(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(reply) = self.reply.as_mut() else { return Poll::Ready(Err(head_timeout())) };
        match reply.poll_send(&mut self.io, cx) {
            Poll::Pending => match self.poll_write_timer(cx) {
                Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
                _ => Poll::Pending,
            },
            Poll::Ready(_) => Poll::Ready(Err(head_timeout())),
        }
    }
}

fn head_timeout() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "client timeout")
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for ClientIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.reply.is_some() {
            // Timed out: what the client sends now is not read.
            return self.poll_reply(cx);
        }
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
                self.remember_reader(cx);
                let Some(deadline) = self.deadline() else { return Poll::Pending };
                if self.timer.deadline() != deadline {
                    self.timer.as_mut().reset(deadline);
                }
                let fired = self.timer.as_mut().poll(cx).is_ready();
                if fired && self.clock.phase.load(Ordering::Acquire) == AWAITING_HEAD {
                    self.clock.head_timed_out.store(true, Ordering::Release);
                }
                match fired {
                    true if self.answers_head_timeout() => {
                        self.reply = Some(TimeoutReply::default());
                        self.poll_reply(cx)
                    }
                    true => Poll::Ready(Err(head_timeout())),
                    false => Poll::Pending,
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ClientIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.written(polled, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.written(polled, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.written(polled, cx)
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
    const CLIENT: Duration = Duration::from_millis(200);
    const TIMERS: ClientTimers =
        ClientTimers { http_request: HEAD, keep_alive: KEEP_ALIVE, client: CLIENT, ignore_probes: false };

    #[tokio::test]
    async fn an_http2_connection_keeps_no_timer_while_a_response_streams_and_pings_do_not_start_the_head_timer() {
        let (near, mut far) = tokio::io::duplex(1024);
        let clock = ConnectionClock::new(true);
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
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
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
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
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
        let mut upgraded = clock.request_started();
        upgraded.keep_timers_off();
        drop(upgraded);
        let mut byte = [0u8; 1];
        assert!(tokio::time::timeout(QUIET, io.read(&mut byte)).await.is_err(), "no client timer on a tunnel");
        // Nor on writes the client does not read (the duplex holds 1024 bytes).
        let big = vec![b'x'; 4096];
        assert!(tokio::time::timeout(QUIET, io.write_all(&big)).await.is_err(), "no write timeout on a tunnel");
    }

    #[tokio::test]
    async fn a_body_waiting_for_the_client_runs_the_client_timeout() {
        let (near, _far) = tokio::io::duplex(1024);
        let clock = ConnectionClock::new(false);
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
        let _request = clock.request_started();
        let mut byte = [0u8; 1];
        assert!(tokio::time::timeout(QUIET, io.read(&mut byte)).await.is_err(), "no timer while the pod works");
        let mut wait = BodyWait::new(clock.clone());
        wait.waiting();
        let started = Instant::now();
        let waited = tokio::time::timeout(Duration::from_secs(2), io.read(&mut byte)).await.expect("a timer fires");
        assert_eq!(waited.expect_err("client timeout").kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= CLIENT - Duration::from_millis(5), "{:?}", started.elapsed());
        wait.received();
        assert_eq!(clock.body_waits.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_times_out_the_write() {
        let (near, _far) = tokio::io::duplex(64);
        let clock = ConnectionClock::new(false);
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
        let _request = clock.request_started();
        let big = vec![b'x'; 4096];
        let started = Instant::now();
        let written = tokio::time::timeout(Duration::from_secs(2), io.write_all(&big)).await.expect("a timer fires");
        assert_eq!(written.expect_err("client timeout").kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= CLIENT - Duration::from_millis(5), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_head_that_never_ends_gets_the_408_and_an_idle_connection_closes_silently() {
        use crate::proxy::request_timeout::REQUEST_TIMEOUT_REPLY;
        // A part of a head, then silence: the 408, then the read fails.
        let (near, mut far) = tokio::io::duplex(4096);
        let clock = ConnectionClock::new(false);
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
        far.write_all(b"GET / HTTP/1.1\r\n").await.expect("write");
        let mut buf = [0u8; 64];
        assert!(io.read(&mut buf).await.expect("read") > 0);
        let waited = tokio::time::timeout(Duration::from_secs(2), io.read(&mut buf)).await.expect("a timer fires");
        assert_eq!(waited.expect_err("head timeout").kind(), io::ErrorKind::TimedOut);
        drop(io);
        let mut answer = String::new();
        far.read_to_string(&mut answer).await.expect("the reply");
        assert_eq!(answer, REQUEST_TIMEOUT_REPLY);

        // Served, then idle past the keep-alive timer: closed without a byte.
        let (near, mut far) = tokio::io::duplex(4096);
        let clock = ConnectionClock::new(false);
        let mut io = ClientIo::new(near, clock.clone(), TIMERS);
        far.write_all(b"G").await.expect("write");
        assert_eq!(io.read(&mut buf).await.expect("read"), 1);
        drop(clock.request_started());
        let waited = tokio::time::timeout(Duration::from_secs(2), io.read(&mut buf)).await.expect("a timer fires");
        assert_eq!(waited.expect_err("keep-alive timeout").kind(), io::ErrorKind::TimedOut);
        drop(io);
        let mut answer = Vec::new();
        far.read_to_end(&mut answer).await.expect("closed");
        assert!(answer.is_empty(), "{answer:?}");
    }

    #[tokio::test]
    async fn ignore_probes_closes_a_silent_connection_without_the_408_but_not_a_started_head() {
        use crate::proxy::request_timeout::REQUEST_TIMEOUT_REPLY;
        let timers = ClientTimers { ignore_probes: true, ..TIMERS };
        let mut buf = [0u8; 64];
        for (sent, expected) in [(&b""[..], ""), (b"GET", REQUEST_TIMEOUT_REPLY)] {
            let (near, mut far) = tokio::io::duplex(4096);
            let mut io = ClientIo::new(near, ConnectionClock::new(false), timers);
            if !sent.is_empty() {
                far.write_all(sent).await.expect("write");
                assert!(io.read(&mut buf).await.expect("read") > 0);
            }
            let waited = tokio::time::timeout(Duration::from_secs(2), io.read(&mut buf)).await.expect("a timer");
            assert_eq!(waited.expect_err("head timeout").kind(), io::ErrorKind::TimedOut);
            drop(io);
            let mut answer = String::new();
            far.read_to_string(&mut answer).await.expect("closed");
            assert_eq!(answer, expected, "after {sent:?}");
        }
    }
}
