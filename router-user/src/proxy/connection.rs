//! Serving HTTP on one client connection, whatever carries it (TCP, TLS, bytes replayed after a PROXY
//! header): HTTP/1.1 with keep-alive and upgrades by the router's own loop (`h1`), or HTTP/2 by hyper's server
//! when ALPN chose `h2`; client timers from
//! `ClientIo`, off while a request is served (until its response body is finished); on shutdown the requests
//! in flight finish, their bodies included, and the connection closes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Body as _;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tracing::debug;

use super::client_io::{BodyWaitClock, ClientIo, ClientTimers, ConnectionClock, InFlightBody};
use super::coalesced_writes::CoalescedWrites;
use super::h1::{serve_http1, Http1End, Http1Settings};
use super::handler::{ClientConnection, HttpProxy};
use super::request_body::RequestBody;
use super::request_log::{log_unfinished_head, HeadEnd, LoggedBody};
use super::response::ProxyBody;
use crate::access_log::{OpenConnection, FE_SNI, PUBLIC};
use crate::listen::{stop_requested, ClientTimeouts, CountedIo};
use crate::protection::RefusedConnection;

/// While draining a connection, how often to look whether it is idle.
const DRAIN_POLL: Duration = Duration::from_millis(100);
/// Draining after a hand-over, how long an HTTP/1.1 connection may stay idle waiting for its next request
/// (answered with `Connection: close`) before the router closes it.
const HANDOVER_IDLE_CLOSE: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVersion {
    Http1,
    H2,
}

pub async fn serve_client<I>(
    io: I,
    state: ClientConnection,
    proxy: Arc<HttpProxy>,
    timeouts: ClientTimeouts,
    mut shutdown: watch::Receiver<bool>,
    version: HttpVersion,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // The frontend's bytes: what this client socket carries, 408s and tunnels included.
    let frontend_counters = proxy.metrics().haproxy.frontend(state.frontend).clone();
    let io = CountedIo::new(io, frontend_counters.clone());
    let state = Arc::new(state);
    let access_log = proxy.access_log().clone();
    let frontend = if state.info.proto == "https" { FE_SNI } else { PUBLIC };
    let _counted = access_log.enabled().then(|| OpenConnection::new(&access_log, frontend));
    let clock = ConnectionClock::new(version == HttpVersion::H2);
    let (log_state, log_clock) = (state.clone(), clock.clone());
    let drain_clock = clock.clone();
    let io_clock = clock.clone();
    let timers = ClientTimers {
        http_request: timeouts.http_request,
        keep_alive: timeouts.keep_alive,
        client: timeouts.client,
        ignore_probes: access_log.ignores_probes(),
    };
    // ROUTER_BUF_SIZE less ROUTER_MAX_REWRITE_SIZE: a longer head gets 431 (HTTP/1: request line and header
    // section; HTTP/2: the header list as RFC 9113 sizes it, from hyper) before the request reaches the handler.
    let head_limit = proxy.request_head_limit();
    // ROUTER_H1_CASE_ADJUST: response heads to HTTP/1 clients get the listed names' case on the way out.
    let case_map = proxy.h1_case_adjust().filter(|_| version == HttpVersion::Http1);
    let drain_proxy = proxy.clone();
    let end = match version {
        HttpVersion::Http1 => {
            // ClientIo times the request head (ROUTER_SLOWLORIS_TIMEOUT) and the client's reads and writes.
            let io = ClientIo::new(io, io_clock, timers);
            // The requests borrow what the connection holds: no reference count touched per request (the
            // proxy's is shared by every connection, on every thread).
            let serve = |mut request: http::Request<RequestBody>| {
                // A request body runs the client timeout while it waits for the client (see `ClientBody`). A
                // request without a body has nothing to wait for (and an extension costs two allocations).
                if !request.body().is_end_stream() {
                    request.extensions_mut().insert(BodyWaitClock(clock.clone()));
                }
                serve_request(&proxy, &state, &clock, request)
            };
            let settings = Http1Settings {
                head_limit,
                case: case_map,
                draining_idle: Box::new(move || drain_proxy.closes_on_next_response().then_some(HANDOVER_IDLE_CLOSE)),
            };
            match serve_http1(io, serve, settings, shutdown).await {
                Http1End::Closed => HeadEnd::Closed,
                Http1End::Malformed(error) => {
                    debug!(%error, "request head refused");
                    HeadEnd::Malformed
                }
                Http1End::Failed(error) if error.kind() == std::io::ErrorKind::TimedOut => HeadEnd::TimedOut,
                Http1End::Failed(error) => {
                    debug!(%error, "connection ended with an error");
                    HeadEnd::Closed
                }
            }
        }
        HttpVersion::H2 => {
            let io = ClientIo::new(CoalescedWrites::new(io), io_clock, timers);
            let io = TokioIo::new(io);
            // hyper spawns each stream as a task holding the request's future: boxed, the spawn moves a pointer
            // instead of the whole handler state (memmove was the top of the h2-over-edge profile).
            // An HTTP/2 connection may carry other streams while one waits for its body: no `BodyWaitClock`.
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let (proxy, state, clock) = (proxy.clone(), state.clone(), clock.clone());
                Box::pin(async move { serve_request(&proxy, &state, &clock, request.map(RequestBody::Hyper)).await })
            });
            let connection = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .max_header_list_size(u32::try_from(head_limit).unwrap_or(u32::MAX))
                .serve_connection(io, service);
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                _ = stop_requested(&mut shutdown) => {
                    // GOAWAY: streams in flight finish, bodies included, no new ones. A client may keep an idle
                    // connection open (or never send its preface): once no stream is in flight, it is closed.
                    connection.as_mut().graceful_shutdown();
                    // After a hand-over the client may still be sending a request it wrote before it read the
                    // GOAWAY: the GOAWAY exchange ends the connection, and only one idle for a while is dropped.
                    let idle_wait = if drain_proxy.closes_on_next_response() { HANDOVER_IDLE_CLOSE } else { Duration::ZERO };
                    finished_or_idle(connection.as_mut(), &drain_clock, idle_wait).await.unwrap_or(Ok(()))
                }
            };
            if let Err(error) = &result {
                debug!(error = ?error, "connection ended with an error");
            }
            head_end(&result)
        }
    };
    // A head the connection was waiting for: HAProxy's `<BADREQ>` line, and a 4xx on the frontend (except for
    // a connection that sent nothing under http-ignore-probes; an HTTP/2 connection without a stream is not one).
    if let Some(head) = log_clock.unfinished_head() {
        let end = if head.timed_out { HeadEnd::TimedOut } else { end };
        if version == HttpVersion::Http1 && (head.received || !access_log.ignores_probes()) {
            frontend_counters.count_response(end.status());
        }
        if access_log.enabled() {
            let (info, accepted_at) = (&log_state.info, log_state.accepted_at);
            log_unfinished_head(&access_log, info, accepted_at, head, end);
        }
    }
}

/// One request through the proxy, the client timers off from its head until its response body is finished
/// or dropped (or this future is, on a reset stream); an upgraded connection becomes a tunnel with its own
/// idle timer, without them.
async fn serve_request(
    proxy: &HttpProxy,
    state: &ClientConnection,
    clock: &Arc<ConnectionClock>,
    request: http::Request<RequestBody>,
) -> Result<http::Response<InFlightBody<LoggedBody<ProxyBody>>>, RefusedConnection> {
    let timing = clock.head_timing();
    let mut in_flight = clock.request_started();
    let response = proxy.handle(state, request, timing).await?;
    if response.status() == http::StatusCode::SWITCHING_PROTOCOLS {
        in_flight.keep_timers_off();
    }
    Ok(response.map(|body| InFlightBody::new(body, in_flight)))
}

/// Drives a draining `connection` until it finishes (`Some` of its result) or has served nothing for
/// `idle_wait` (`None`).
async fn finished_or_idle<F: std::future::Future>(
    mut connection: std::pin::Pin<&mut F>,
    clock: &ConnectionClock,
    idle_wait: Duration,
) -> Option<F::Output> {
    let mut idle_since = None;
    loop {
        tokio::select! {
            result = connection.as_mut() => return Some(result),
            _ = tokio::time::sleep(DRAIN_POLL) => {
                if clock.busy() {
                    idle_since = None;
                } else if idle_since.get_or_insert_with(Instant::now).elapsed() >= idle_wait.max(DRAIN_POLL) {
                    // Idle for a whole poll at least: a stream counted finished when its body's last frame went
                    // to hyper may still have that frame to write (dropped at once, it was cut).
                    return None;
                }
            }
        }
    }
}

/// How a connection waiting for a request head ended.
fn head_end(result: &Result<(), hyper::Error>) -> HeadEnd {
    match result {
        Err(error) if is_timeout(error) => HeadEnd::TimedOut,
        // hyper answered it (400, 431 ...).
        Err(error) if error.is_parse() || error.is_parse_too_large() => HeadEnd::Malformed,
        // The client closed (or reset) the connection.
        _ => HeadEnd::Closed,
    }
}

/// The connection ended on one of `ClientIo`'s timers.
fn is_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    for _ in 0..8 {
        let Some(current) = cause else { return false };
        if current.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        cause = current.source();
    }
    false
}
