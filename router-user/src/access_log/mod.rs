//! The access log, off by default as in OpenShift: one line per HTTP request (HAProxy's httplog, or the
//! ROUTER_SYSLOG_FORMAT log-format) and per passthrough connection (tcplog), sent as syslog to
//! ROUTER_SYSLOG_ADDRESS at `info`, so only when ROUTER_LOG_LEVEL lets `info` through (the ingress operator sets
//! it to `info` when it turns access logging on). Also the unique request id (ROUTER_UNIQUE_ID_HEADER_NAME,
//! ROUTER_UNIQUE_ID_FORMAT), sent to the pod whether or not lines are.
//!
//! Pieces: `format` parses log-format strings (unknown variables refused at start), `render` writes a
//! `record` in one, `syslog` frames it, `sink` sends it, `writer` is the task between the bounded queue and
//! the sink, `capture` reads captured headers and cookies, `connections` counts open connections (`%ac`,
//! `%fc`), `time` writes dates.

mod capture;
mod connections;
mod datagrams;
mod decimal;
mod format;
mod framer;
mod record;
mod render;
mod sink;
mod syslog;
mod time;
mod variables;
mod writer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::JoinHandle;

pub use capture::{parse_cookie_capture, parse_header_captures, CaptureError, CookieCapture, HeaderCapture};
pub use connections::{ConnectionCounts, OpenConnection, FE_SNI, PUBLIC, PUBLIC_SSL};
pub use format::{config_unquote, FormatError, LogFormat, HTTPLOG_FORMAT, TCPLOG_FORMAT};
pub use record::{Counts, LogRecord, Millis, RequestLine, Termination, Timers, NOT_REACHED};
pub use render::{render, RenderContext};
pub use sink::{Destination, DestinationError, Sink};
pub use syslog::{hostname, Facility, Framing, Severity, SyslogHeader, ACCESS_SEVERITY};
pub use writer::LineKind;

use framer::Framer;
use writer::{Line, Writer};

/// Lines waiting for the writer before new ones are dropped.
pub const QUEUE_LENGTH: usize = 8192;

/// Everything the access log is configured with (see `config::AccessLogArgs`).
#[derive(Clone, Debug)]
pub struct AccessLogOptions {
    /// `None`: no lines (ROUTER_SYSLOG_ADDRESS unset, or ROUTER_LOG_LEVEL below `info`).
    pub destination: Option<Destination>,
    pub header: SyslogHeader,
    pub http_format: LogFormat,
    pub tcp_format: LogFormat,
    pub request_headers: Vec<HeaderCapture>,
    pub response_headers: Vec<HeaderCapture>,
    pub cookie: Option<CookieCapture>,
    /// `option dontlognull`.
    pub dont_log_null: bool,
    /// `option http-ignore-probes`.
    pub ignore_probes: bool,
    pub unique_id: Option<UniqueId>,
}

impl AccessLogOptions {
    /// No lines and no request id.
    pub fn off() -> AccessLogOptions {
        AccessLogOptions {
            destination: None,
            header: SyslogHeader {
                framing: Framing::Rfc3164,
                facility: Facility(17),
                hostname: String::new(),
                tag: String::new(),
                pid: std::process::id(),
                max_length: 1024,
            },
            http_format: LogFormat { nodes: Vec::new() },
            tcp_format: LogFormat { nodes: Vec::new() },
            request_headers: Vec::new(),
            response_headers: Vec::new(),
            cookie: None,
            dont_log_null: false,
            ignore_probes: false,
            unique_id: None,
        }
    }
}

/// `unique-id-format` and `unique-id-header`.
#[derive(Clone, Debug)]
pub struct UniqueId {
    pub header: HeaderName,
    pub format: LogFormat,
}

/// The running access log, shared by every connection.
pub struct AccessLog {
    lines: Option<mpsc::Sender<Line>>,
    dropped: Counter,
    options: AccessLogOptions,
    context: RenderContext,
    pub connections: ConnectionCounts,
    requests: AtomicU64,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessLog").field("lines", &self.lines.is_some()).finish_non_exhaustive()
    }
}

impl AccessLog {
    /// The access log of `options`, its writer task started when lines are sent; `dropped` counts lost lines.
    pub async fn start(
        options: AccessLogOptions,
        dropped: Counter,
    ) -> std::io::Result<(Arc<AccessLog>, Option<JoinHandle<()>>)> {
        let context = RenderContext { hostname: options.header.hostname.clone(), pid: options.header.pid };
        let (lines, task) = match &options.destination {
            Some(destination) => {
                let sink = Sink::open(destination).await?;
                let (tx, rx) = mpsc::channel(QUEUE_LENGTH);
                let writer = Writer {
                    http_format: options.http_format.clone(),
                    tcp_format: options.tcp_format.clone(),
                    framer: Framer::new(options.header.clone(), ACCESS_SEVERITY),
                    context: context.clone(),
                    sink,
                    dropped: dropped.clone(),
                };
                (Some(tx), Some(tokio::spawn(writer.run(rx))))
            }
            None => (None, None),
        };
        let log = AccessLog {
            lines,
            dropped,
            options,
            context,
            connections: ConnectionCounts::default(),
            requests: AtomicU64::new(0),
        };
        Ok((Arc::new(log), task))
    }

    /// No lines, no request id.
    pub fn off() -> Arc<AccessLog> {
        Arc::new(AccessLog {
            lines: None,
            dropped: Counter::default(),
            options: AccessLogOptions::off(),
            context: RenderContext { hostname: String::new(), pid: std::process::id() },
            connections: ConnectionCounts::default(),
            requests: AtomicU64::new(0),
        })
    }

    /// Lines are sent.
    pub fn enabled(&self) -> bool {
        self.lines.is_some()
    }

    /// Requests need a record: for a line, or for the unique id.
    pub fn records_requests(&self) -> bool {
        self.lines.is_some() || self.options.unique_id.is_some()
    }

    pub fn options(&self) -> &AccessLogOptions {
        &self.options
    }

    /// The next value of `%rt`.
    pub fn next_request_number(&self) -> u64 {
        self.requests.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues a line; never waits. A full queue (or a stopped writer) drops it, counted.
    pub fn log(&self, kind: LineKind, record: LogRecord) {
        let Some(lines) = &self.lines else { return };
        if let Err(TrySendError::Full(_) | TrySendError::Closed(_)) =
            lines.try_send(Line { kind, record: Box::new(record) })
        {
            self.dropped.inc();
        }
    }

    /// Fills a request record's captured request headers and cookie from the request as the client sent it.
    pub fn capture_request(&self, headers: &HeaderMap, record: &mut LogRecord) {
        if self.lines.is_none() {
            return;
        }
        record.request_headers = self.options.request_headers.iter().map(|c| c.capture(headers)).collect();
        record.request_cookie = self.options.cookie.as_ref().and_then(|c| c.from_request(headers));
    }

    /// Fills the captured response headers and cookie from a pod's response; `None` (the router answered
    /// itself): each capture empty.
    pub fn capture_response(&self, headers: Option<&HeaderMap>, record: &mut LogRecord) {
        if self.lines.is_none() {
            return;
        }
        let captures = &self.options.response_headers;
        record.response_headers = captures.iter().map(|c| headers.and_then(|h| c.capture(h))).collect();
        record.response_cookie = self.options.cookie.as_ref().zip(headers).and_then(|(c, h)| c.from_response(h));
    }

    /// The unique id of a request whose record has its connection and counter: the header to send, and its value.
    pub fn unique_id(&self, record: &LogRecord) -> Option<(HeaderName, HeaderValue)> {
        let unique = self.options.unique_id.as_ref()?;
        let mut id = String::with_capacity(64);
        render(&unique.format, record, &self.context, &mut id);
        let value = HeaderValue::from_str(&id).ok()?;
        Some((unique.header.clone(), value))
    }

    /// `option http-ignore-probes`: a connection that sends nothing gets no 408 either.
    pub fn ignores_probes(&self) -> bool {
        self.options.ignore_probes
    }

    /// A connection that ended without a request is logged unless dontlognull or http-ignore-probes asks
    /// otherwise (HAProxy 2.6 skips it under either when the client sent nothing).
    pub fn logs_empty_connection(&self, received_bytes: bool) -> bool {
        self.enabled() && (received_bytes || !(self.options.dont_log_null || self.options.ignore_probes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.expect("listener");
        let mut options = AccessLogOptions::off();
        options.destination = Some(Destination::Udp(socket.local_addr().expect("addr")));
        options.http_format = LogFormat::parse("%ci %ST").expect("format");
        options.header.framing = Framing::Raw;
        let dropped = Counter::default();
        let (log, task) = AccessLog::start(options, dropped.clone()).await.expect("start");
        // The writer cannot run on this single-threaded runtime until the test yields: the queue fills.
        let record =
            LogRecord::new("public", false, "127.0.0.1:1".parse().expect("a"), "127.0.0.1:2".parse().expect("b"));
        for _ in 0..QUEUE_LENGTH + 5 {
            log.log(LineKind::Http, record.clone());
        }
        assert_eq!(dropped.get(), 5);
        let mut buf = [0u8; 64];
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), socket.recv(&mut buf)).await;
        assert_eq!(&buf[..got.expect("a line").expect("recv")], b"127.0.0.1 -1\n");
        drop(log);
        tokio::time::timeout(std::time::Duration::from_secs(10), task.expect("writer")).await.expect("drained").ok();
    }

    #[tokio::test]
    async fn queued_lines_leave_in_batches_one_datagram_each_in_order() {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.expect("listener");
        let mut options = AccessLogOptions::off();
        options.destination = Some(Destination::Udp(socket.local_addr().expect("addr")));
        options.http_format = LogFormat::parse("%cp %ST").expect("format");
        options.header.framing = Framing::Raw;
        let (log, task) = AccessLog::start(options, Counter::default()).await.expect("start");
        // More lines than one batch, queued before the writer runs.
        let count = writer::BATCH + 44;
        for port in 1..=count {
            let client = format!("127.0.0.1:{port}").parse().expect("client");
            let mut record = LogRecord::new("public", false, client, "127.0.0.1:2".parse().expect("b"));
            record.status = Some(200);
            log.log(LineKind::Http, record);
        }
        let mut buf = [0u8; 64];
        for port in 1..=count {
            let got = tokio::time::timeout(std::time::Duration::from_secs(5), socket.recv(&mut buf)).await;
            let got = got.expect("a line").expect("recv");
            assert_eq!(std::str::from_utf8(&buf[..got]).expect("utf-8"), format!("{port} 200\n"));
        }
        drop(log);
        tokio::time::timeout(std::time::Duration::from_secs(10), task.expect("writer")).await.expect("drained").ok();
    }
}
