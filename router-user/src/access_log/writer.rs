//! The one task that renders, frames and sends lines, fed by a bounded queue: the request path only moves a
//! record into the queue, and when the queue is full (the sink is slow) or a send fails (the sink is gone)
//! the line is dropped and counted in `router_access_log_dropped_lines_total`.

use std::time::SystemTime;

use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;

use super::format::LogFormat;
use super::record::LogRecord;
use super::render::{render, RenderContext};
use super::sink::Sink;
use super::syslog::{SyslogHeader, ACCESS_SEVERITY};

/// Which default format a line takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// An HTTP request (httplog, or ROUTER_SYSLOG_FORMAT).
    Http,
    /// A passthrough connection (tcplog).
    Tcp,
}

pub struct Line {
    pub kind: LineKind,
    pub record: Box<LogRecord>,
}

/// What the writer task owns.
pub struct Writer {
    pub http_format: LogFormat,
    pub tcp_format: LogFormat,
    pub header: SyslogHeader,
    pub context: RenderContext,
    pub sink: Sink,
    pub dropped: Counter,
}

impl Writer {
    /// Runs until every sender is gone.
    pub async fn run(mut self, mut lines: mpsc::Receiver<Line>) {
        let mut text = String::with_capacity(512);
        let mut framed = Vec::with_capacity(1024);
        while let Some(line) = lines.recv().await {
            text.clear();
            framed.clear();
            let format = match line.kind {
                LineKind::Http => &self.http_format,
                LineKind::Tcp => &self.tcp_format,
            };
            render(format, &line.record, &self.context, &mut text);
            self.header.frame(ACCESS_SEVERITY, SystemTime::now(), &text, &mut framed);
            if self.sink.send(&framed).await.is_err() {
                self.dropped.inc();
            }
        }
    }
}
