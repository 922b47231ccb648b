//! The access-log side of one HTTP request: its record begun when the head arrives (captures, request line,
//! unique id), completed when the response head is ready (backend, pod, status, termination state, sticky
//! cookie state, response captures) and sent when the response body ends or is dropped (bytes, timers, a
//! client or pod that left mid-body). Also the line of a connection that ended without a request.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, Version};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Instant;

use super::client_io::{HeadTiming, UnfinishedHead};
use super::forwarded::ConnectionInfo;
use super::sticky::cookie_value;
use super::wire_size::{headers_size, response_head_size};
use crate::access_log::{
    AccessLog, Counts, LineKind, LogRecord, RequestLine, Termination, FE_SNI, NOT_REACHED, PUBLIC,
};
use crate::table::Backend;

/// The endpoint (index in its backend) whose response this is; set only while records are kept.
#[derive(Clone, Copy, Debug)]
pub struct ServedBy(pub usize);

/// A request's record until its response ends.
pub struct RequestLog {
    log: Arc<AccessLog>,
    record: LogRecord,
    timing: HeadTiming,
    /// The head was complete (the handler started).
    head_done: Instant,
    /// The Cookie headers as the client sent them, for the sticky cookie's state.
    cookies: HeaderMap,
}

fn frontend_of(info: &ConnectionInfo) -> (&'static str, bool) {
    match info.proto {
        "https" => (FE_SNI, true),
        _ => (PUBLIC, false),
    }
}

fn millis(duration: Duration) -> i64 {
    duration.as_millis().min(i64::MAX as u128) as i64
}

fn version_name(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

fn new_record(log: &AccessLog, info: &ConnectionInfo, accepted_at: SystemTime, now: SystemTime) -> LogRecord {
    let (frontend, tls) = frontend_of(info);
    let mut record = LogRecord::at(frontend, tls, info.client, info.local, now);
    record.accepted_at = accepted_at;
    let (active, on_frontend) = log.connections.now(frontend);
    record.counts = Counts { active, frontend: on_frontend, ..Counts::default() };
    record
}

impl RequestLog {
    /// A record for `request`, whose head was complete at `head_done`, when the access log keeps records
    /// (lines, or a unique id).
    pub fn begin<B>(
        log: &Arc<AccessLog>,
        info: &ConnectionInfo,
        accepted_at: SystemTime,
        request: &Request<B>,
        timing: HeadTiming,
        head_done: std::time::Instant,
    ) -> Option<Box<RequestLog>> {
        if !log.records_requests() {
            return None;
        }
        let head_done = Instant::from_std(head_done);
        let now = SystemTime::now();
        let mut record = new_record(log, info, accepted_at, now);
        let idle = if timing.first { Duration::ZERO } else { timing.idle };
        record.requested_at = now - head_done.duration_since(timing.began);
        record.timers.idle = millis(idle);
        record.timers.request = millis(head_done.duration_since(timing.began));
        record.request_counter = log.next_request_number();
        let uri = uri_text(request.uri());
        record.bytes_uploaded = head_size(request, uri.len());
        record.request = Some(RequestLine {
            method: request.method().as_str().to_string(),
            uri,
            version: version_name(request.version()),
        });
        log.capture_request(request.headers(), &mut record);
        let mut cookies = HeaderMap::new();
        for value in request.headers().get_all(http::header::COOKIE) {
            cookies.append(http::header::COOKIE, value.clone());
        }
        // Boxed: the handler's future holds it across the forwarding, and a smaller future is cheaper to start
        // (each layer copies what it holds); the access log is off by default.
        Some(Box::new(RequestLog { log: log.clone(), record, timing, head_done, cookies }))
    }

    /// The unique id for this request (kept for `%ID`): the header to send to the pod.
    pub fn unique_id(&mut self) -> Option<(HeaderName, HeaderValue)> {
        let (name, value) = self.log.unique_id(&self.record)?;
        self.record.unique_id = value.to_str().ok().map(str::to_string);
        Some((name, value))
    }

    /// The response head is ready: who answered and how.
    pub fn responded<B>(&mut self, backend: Option<&Backend>, response: &Response<B>) {
        let record = &mut self.record;
        let served = response.extensions().get::<ServedBy>().and_then(|s| backend.and_then(|b| b.endpoints.get(s.0)));
        let status = response.status();
        record.status = Some(status.as_u16());
        if backend.is_none() && matches!(status, StatusCode::SERVICE_UNAVAILABLE | StatusCode::NOT_FOUND) {
            // No route: HAProxy's default backend answers (404: its `http-request deny` with ROUTER_ERRORFILE_404).
            record.backend = Arc::from("openshift_default");
        }
        if let Some(backend) = backend {
            record.backend = backend.labels.backend.clone();
            record.counts.backend = backend.endpoints.iter().map(|e| u64::from(e.in_flight.get())).sum();
        }
        let waited = millis(self.head_done.elapsed());
        match served {
            Some(endpoint) => {
                record.server = Some((endpoint.id.clone(), endpoint.addr));
                record.counts.server = u64::from(endpoint.in_flight.get());
                record.timers.queue = 0;
                record.timers.connect = 0;
                record.timers.response = waited;
            }
            None => record.termination = own_answer(status),
        }
        if let (Some(backend), Some(endpoint)) = (backend, served) {
            if let Some(cookie) = &backend.policy.cookie {
                let sent = cookie_value(&self.cookies, &cookie.name);
                record.termination = match sent {
                    Some(value) if value == endpoint.cookie.as_str() => record.termination.with_cookie(b'V', b'N'),
                    Some(_) => record.termination.with_cookie(b'I', b'I'),
                    None => record.termination.with_cookie(b'N', b'I'),
                };
            }
        }
        record.bytes_read = client_response_head_size(response);
        // As HAProxy: response captures are of a server's response, empty for the router's own answers.
        let headers = served.map(|_| response.headers());
        self.log.capture_response(headers, record);
    }

    /// The protection refused the client: its connection closes unanswered.
    pub fn refused(mut self) {
        self.record.termination = Termination::new(b'P', b'R');
        self.finish(0, None);
    }

    fn finish(self, body_bytes: u64, ended_early: Option<Termination>) {
        let RequestLog { log, mut record, timing, .. } = self;
        if !log.enabled() {
            return;
        }
        record.bytes_read += body_bytes;
        if let Some(early) = ended_early {
            if record.termination.0[0] == b'-' {
                record.termination =
                    Termination([early.0[0], early.0[1], record.termination.0[2], record.termination.0[3]]);
            }
        }
        let active = timing.began.elapsed();
        record.timers.active = millis(active);
        let before = if timing.first { Duration::ZERO } else { timing.idle };
        record.timers.total = millis(active + before);
        log.log(LineKind::Http, record);
    }
}

/// The termination state of an answer the router made itself.
fn own_answer(status: StatusCode) -> Termination {
    match status.as_u16() {
        // 404: the default backend's `http-request deny` (ROUTER_ERRORFILE_404).
        400 | 404 | 431 | 500 => Termination::new(b'P', b'R'),
        502 => Termination::new(b'S', b'H'),
        503 => Termination::new(b'S', b'C'),
        504 => Termination::new(b's', b'H'),
        _ => Termination::new(b'L', b'R'),
    }
}

/// The request target as the client wrote it: an origin-form path taken as it is, other forms written out.
fn uri_text(uri: &http::Uri) -> String {
    match (uri.scheme(), uri.authority(), uri.path_and_query()) {
        (None, _, Some(path)) => path.as_str().to_string(),
        // Every HTTP/2 request: its pseudo-headers make an absolute URI. Put together directly rather than
        // through `Display`'s formatting.
        (Some(scheme), Some(authority), Some(path)) => {
            let parts = [scheme.as_str(), "://", authority.as_str(), path.as_str()];
            let mut text = String::with_capacity(parts.iter().map(|part| part.len()).sum());
            parts.iter().for_each(|part| text.push_str(part));
            text
        }
        _ => uri.to_string(),
    }
}

/// Bytes of an HTTP/1.1 request head (request line of a `uri_len`-byte target, headers, blank line), plus a
/// declared body.
fn head_size<B>(request: &Request<B>, uri_len: usize) -> u64 {
    let line = request.method().as_str().len() + 1 + uri_len + 1 + 8 + 2;
    let body = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    (line + headers_size(request.headers()) + 2) as u64 + body
}

/// Bytes of the response head as HTTP/1.1 writes it to the client: the head as sized for the pod's side, and the
/// `date` header the connection adds when the response has none (`h1::response_head`).
fn client_response_head_size<B>(response: &Response<B>) -> u64 {
    let date = if response.headers().contains_key(http::header::DATE) { 0 } else { 37 };
    response_head_size(response) + date
}

/// How a connection waiting for a request head ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadEnd {
    /// ROUTER_SLOWLORIS_TIMEOUT passed (HAProxy's `timeout http-request`).
    TimedOut,
    /// What came was not a request (answered with 400, 414 or 431).
    Malformed,
    /// The client closed the connection.
    Closed,
}

impl HeadEnd {
    /// The status HAProxy logs and counts for it.
    pub fn status(self) -> u16 {
        match self {
            HeadEnd::TimedOut => 408,
            HeadEnd::Malformed | HeadEnd::Closed => 400,
        }
    }
}

/// The line of a connection that ended while waiting for a request head (its first, or on HTTP/1 a later
/// one already begun), as HAProxy logs it: `<BADREQ>` with 408 `cR--` when the head timer passed, 400 `CR--`
/// when the client closed, 400 `PR--` when what it sent was not a request. A connection that sent nothing
/// is not logged under dontlognull or http-ignore-probes.
pub fn log_unfinished_head(
    log: &AccessLog,
    info: &ConnectionInfo,
    accepted_at: SystemTime,
    head: UnfinishedHead,
    end: HeadEnd,
) {
    if !log.logs_empty_connection(head.received) {
        return;
    }
    let now = SystemTime::now();
    let lasted = head.began.elapsed();
    let mut record = new_record(log, info, accepted_at, now);
    // A later head's line starts with its first byte, as HAProxy starts a new stream then.
    if !head.first {
        let began = now.checked_sub(lasted).unwrap_or(now);
        (record.accepted_at, record.requested_at) = (began, began);
    }
    record.request_counter = log.next_request_number();
    record.status = Some(end.status());
    record.termination = match end {
        HeadEnd::TimedOut => Termination::new(b'c', b'R'),
        HeadEnd::Malformed => Termination::new(b'P', b'R'),
        HeadEnd::Closed => Termination::new(b'C', b'R'),
    };
    record.timers.request = NOT_REACHED;
    record.timers.active = millis(lasted);
    record.timers.total = millis(lasted);
    log.log(LineKind::Http, record);
}

/// A response body that sends its request's line when it is dropped: after its end, or when the client or the
/// pod left mid-body.
pub struct LoggedBody<B> {
    body: B,
    log: Option<Box<RequestLog>>,
    bytes: u64,
    complete: bool,
    failed: bool,
}

impl<B: Body> LoggedBody<B> {
    pub fn new(body: B, log: Option<Box<RequestLog>>) -> Self {
        let complete = body.is_end_stream();
        Self { body, log, bytes: 0, complete, failed: false }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for LoggedBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if self.log.is_some() {
            match &polled {
                Poll::Ready(Some(Ok(frame))) => {
                    self.bytes += frame.data_ref().map_or(0, |data| data.len() as u64);
                    if self.body.is_end_stream() {
                        self.complete = true;
                    }
                }
                Poll::Ready(Some(Err(_))) => self.failed = true,
                Poll::Ready(None) => self.complete = true,
                Poll::Pending => {}
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<B> Drop for LoggedBody<B> {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            let early = match (self.complete, self.failed) {
                (true, _) => None,
                (false, true) => Some(Termination::new(b'S', b'D')),
                (false, false) => Some(Termination::new(b'C', b'D')),
            };
            log.finish(self.bytes, early);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::uri_text;

    #[test]
    fn a_logged_target_reads_as_the_uri_written_out() {
        for target in ["/", "/a/b?c=d&e", "https://h.example.com/p?q", "http://h:8080/", "h.example.com:443", "*"] {
            let uri: http::Uri = target.parse().expect("a valid target");
            assert_eq!(uri_text(&uri), uri.to_string(), "{target}");
        }
        let uri = http::Uri::builder().scheme("https").authority("a.example.com").path_and_query("/x?y").build();
        assert_eq!(uri_text(&uri.expect("parts")), "https://a.example.com/x?y");
    }
}
