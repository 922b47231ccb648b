//! The router's own HTTP/1.1 server loop for one client connection: one read buffer reused for every
//! request, heads parsed in place, the handler's future polled in the connection's task (no task, channel or
//! boxed future per request), the response head and first body bytes written together. Requests are served
//! one after another in the order they came, pipelined ones included (their bytes wait in the buffer).
//!
//! The connection closes after a response when the client or the response asked for it, when the request
//! body was not read to its end (what follows it cannot be found), after a 101 (the connection goes to the
//! tunnel), or while the router drains; a refused client (`RefusedConnection`) is closed without an answer;
//! a malformed head gets its 400, 414 or 431 and the close.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode, Version};
use hyper::body::Body;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tracing::debug;

use super::body_feed::BodyFeed;
use super::request_head::{parse_request_head, HeadError, RequestHead};
use super::response_head::{encode_response_head, BodySize, RequestSide};
use super::response_writer::ResponseWriter;
use super::upgrade_handoff::{ClientStream, UpgradeSlot};
use crate::listen::{stop_requested, Prefixed};
use crate::protection::RefusedConnection;
use crate::proxy::header_case::HeaderCaseMap;
use crate::proxy::request_body::{BoxError, RequestBody};

/// Room made in the read buffer before each read of a head.
const READ_ROOM: usize = 8 * 1024;
/// Less spare room than this and a read reserves `READ_ROOM` first (most request heads are shorter).
const MIN_READ_ROOM: usize = 2 * 1024;
/// The longest a closing connection waits to flush its last bytes (a TLS close_notify).
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

pub struct Http1Settings {
    /// Bytes of request line and header section beyond which a head gets 431.
    pub head_limit: usize,
    /// ROUTER_H1_CASE_ADJUST for response header names.
    pub case: Option<Arc<HeaderCaseMap>>,
    /// While draining: how long an idle connection may still wait for one more request (after a hand-over
    /// the clients' traffic goes on), or `None` to close it at once.
    pub draining_idle: Box<dyn Fn() -> Option<Duration> + Send + Sync>,
}

/// How the connection ended.
#[derive(Debug)]
pub enum Http1End {
    /// Closed between requests, by either side, or handed to a tunnel.
    Closed,
    /// A head that was not a request, answered with its error status.
    Malformed(HeadError),
    /// Reading or writing failed (a client timer's `TimedOut` included).
    Failed(io::Error),
}

/// Serves requests on `io` with `serve` until the connection ends.
pub async fn serve_http1<I, S, F, B>(
    io: I,
    mut serve: S,
    settings: Http1Settings,
    mut shutdown: watch::Receiver<bool>,
) -> Http1End
where
    I: ClientStream + 'static,
    S: FnMut(Request<RequestBody>) -> F,
    F: Future<Output = Result<Response<B>, RefusedConnection>>,
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let mut io = io;
    let mut buf = BytesMut::with_capacity(READ_ROOM);
    let mut out = Vec::with_capacity(1024);
    loop {
        let head = match read_head(&mut io, &mut buf, &settings, &mut shutdown).await {
            Ok(Some(head)) => head,
            Ok(None) => return close(io, Http1End::Closed).await,
            Err(HeadRead::Malformed(error)) => {
                out.clear();
                let mut parts = Response::new(()).into_parts().0;
                parts.status = error.status();
                let side =
                    RequestSide { version: Version::HTTP_11, method: &Method::GET, keep_alive: false, case: None };
                if encode_response_head(&mut parts, BodySize::None, side, &mut out).is_ok() {
                    let _ = io.write_all(&out).await;
                }
                return close(io, Http1End::Malformed(error)).await;
            }
            Err(HeadRead::Failed(error)) => return Http1End::Failed(error),
        };
        let RequestHead { request, framing, keep_alive, expect_continue, wants_upgrade } = head;
        let (mut feed, body) = BodyFeed::new(framing, expect_continue);
        let (method, version) = (request.method().clone(), request.version());
        let mut request = request.map(|()| RequestBody::Own(body));
        let upgrade = wants_upgrade.then(|| {
            let (slot, sender) = UpgradeSlot::new();
            request.extensions_mut().insert(slot);
            sender
        });

        // The handler, with the request body fed while it runs.
        let mut handled = pin!(serve(request));
        let mut read_failed = None;
        let served = poll_fn(|cx| {
            if let Poll::Ready(result) = handled.as_mut().poll(cx) {
                return Poll::Ready(Some(result));
            }
            match poll_client_side(cx, &mut io, &mut buf, feed.as_mut()) {
                Poll::Ready(error) => {
                    read_failed = Some(error);
                    Poll::Ready(None)
                }
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        // The client went away (closed, reset, timed out) before the response: the exchange is dropped.
        let Some(served) = served else { return Http1End::Failed(read_failed.unwrap_or_else(eof)) };
        let Ok(response) = served else { return close(io, Http1End::Closed).await };

        let (mut parts, mut body) = response.into_parts();
        let size = match (body.is_end_stream(), body.size_hint().exact()) {
            (true, _) => BodySize::None,
            (false, Some(length)) => BodySize::Known(length),
            (false, None) => BodySize::Unknown,
        };
        let status = parts.status;
        out.clear();
        // Draining: this is the connection's last response, and its head says so (`Connection: close`); a 101
        // hands the connection to its tunnel, which the drain waits for.
        let keep_alive = keep_alive && (status == StatusCode::SWITCHING_PROTOCOLS || !*shutdown.borrow());
        let side = RequestSide { version, method: &method, keep_alive, case: settings.case.as_deref() };
        let encoded = match encode_response_head(&mut parts, size, side, &mut out) {
            Ok(encoded) => encoded,
            Err(error) => {
                debug!(%error, "response head not written");
                return close(io, Http1End::Closed).await;
            }
        };
        let mut writer = ResponseWriter::new(&mut out, encoded.encoding);
        let written = poll_fn(|cx| {
            if let Poll::Ready(result) = writer.poll_write(cx, &mut io, &mut body) {
                return Poll::Ready(result);
            }
            match poll_client_side(cx, &mut io, &mut buf, feed.as_mut()) {
                Poll::Ready(error) => Poll::Ready(Err(error.into())),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        // The response is over for the client timers (its body carries the request's in-flight guard).
        drop(body);
        if let Err(error) = written {
            debug!(%error, "response not written whole");
            return close(io, Http1End::Closed).await;
        }
        if status == StatusCode::SWITCHING_PROTOCOLS {
            if let Some(upgrade) = upgrade {
                let leftover = buf.split().freeze();
                let _ = upgrade.send(Prefixed::new(leftover, Box::new(io) as Box<dyn ClientStream>));
                return Http1End::Closed;
            }
            return close(io, Http1End::Closed).await;
        }
        // A drain that began while the response was written is seen by `read_head`.
        let body_read = feed.as_mut().is_none_or(|feed| feed.finished() || feed.take_buffered(&mut buf));
        if !encoded.keep_alive || !body_read {
            return close(io, Http1End::Closed).await;
        }
    }
}

/// While an exchange is in progress: feeds the request body while it is wanted; otherwise, with nothing
/// buffered, watches the client's side, whose end or failure ends the exchange (as hyper's server did; bytes
/// that come meanwhile are a pipelined request and wait in the buffer). `Ready` with the error that ended it.
fn poll_client_side<I: ClientStream>(
    cx: &mut std::task::Context<'_>,
    io: &mut I,
    buf: &mut BytesMut,
    feed: Option<&mut BodyFeed>,
) -> Poll<io::Error> {
    match feed {
        Some(feed) if !feed.finished() => match feed.poll_feed(cx, io, buf) {
            Poll::Ready(Err(error)) => Poll::Ready(error),
            _ => Poll::Pending,
        },
        _ if !buf.is_empty() => Poll::Pending,
        _ => {
            make_read_room(buf);
            match tokio_util::io::poll_read_buf(std::pin::Pin::new(io), cx, buf) {
                Poll::Ready(Ok(0)) => Poll::Ready(eof()),
                Poll::Ready(Ok(_)) | Poll::Pending => Poll::Pending,
                Poll::Ready(Err(error)) => Poll::Ready(error),
            }
        }
    }
}

fn eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the client closed the connection")
}

enum HeadRead {
    Malformed(HeadError),
    Failed(io::Error),
}

/// The next request head; `None` when the connection closed (or is to close) before one began.
async fn read_head<I: ClientStream>(
    io: &mut I,
    buf: &mut BytesMut,
    settings: &Http1Settings,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<RequestHead>, HeadRead> {
    let mut stopping = *shutdown.borrow();
    loop {
        if !buf.is_empty() {
            match parse_request_head(buf, settings.head_limit) {
                Ok(Some(head)) => return Ok(Some(head)),
                Ok(None) => {}
                Err(error) => return Err(HeadRead::Malformed(error)),
            }
        }
        let idle_limit = if stopping && buf.is_empty() { (settings.draining_idle)() } else { None };
        if stopping && buf.is_empty() && idle_limit.is_none() {
            return Ok(None);
        }
        make_read_room(buf);
        tokio::select! {
            read = read_more(io, buf) => match read {
                Ok(0) if buf.is_empty() => return Ok(None),
                // Closed in the middle of a head: not a request, and nothing to answer.
                Ok(0) => return Err(HeadRead::Failed(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => {}
                Err(error) => return Err(HeadRead::Failed(error)),
            },
            _ = stop_requested(shutdown), if !stopping => stopping = true,
            _ = idle_for(idle_limit), if idle_limit.is_some() => return Ok(None),
        }
    }
}

/// Sleeps for `limit`. select! builds every branch's future, the disabled ones too: as an async fn, the
/// timer is made only when the branch is polled, not for every request head.
async fn idle_for(limit: Option<Duration>) {
    if let Some(limit) = limit {
        tokio::time::sleep(limit).await;
    }
}

/// Room for the next read. The buffer's spare room is used while it is at least `MIN_READ_ROOM`; only then
/// is `READ_ROOM` reserved, which takes the buffer back in place once nothing shares it. Reserving
/// `READ_ROOM` before every read allocated a new buffer per request: the request in flight still shares the
/// old one (its head's values point into it).
fn make_read_room(buf: &mut BytesMut) {
    if buf.capacity() - buf.len() < MIN_READ_ROOM {
        buf.reserve(READ_ROOM);
    }
}

async fn read_more<I: ClientStream>(io: &mut I, buf: &mut BytesMut) -> io::Result<usize> {
    poll_fn(|cx| tokio_util::io::poll_read_buf(std::pin::Pin::new(&mut *io), cx, buf)).await
}

/// Ends the connection (a TLS stream sends its close_notify) and reports `end`. Bounded: a client that reads
/// nothing more must not hold the connection open through the close.
async fn close<I: ClientStream>(mut io: I, end: Http1End) -> Http1End {
    let _ = tokio::time::timeout(CLOSE_LIMIT, io.shutdown()).await;
    end
}
