//! The one task that renders, frames and sends lines, fed by a bounded queue: the request path only moves a
//! record into the queue, and when the queue is full (the sink is slow) or a send fails (the sink is gone)
//! the line is dropped and counted in `router_access_log_dropped_lines_total`. Lines are taken in batches
//! (a batch that did not fill waits `GATHER` before the next), rendered into one reused buffer and sent with one call.

use std::time::{Duration, SystemTime};

use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;

use super::format::LogFormat;
use super::framer::Framer;
use super::record::LogRecord;
use super::render::{render_with_dates, RenderContext};
use super::sink::Sink;
use super::time::LogDates;

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

/// Lines taken from the queue at once: one `sendmmsg` call's worth, a burst a syslog daemon's default receive
/// buffer holds (some 200 small datagrams) even when it is slow to read.
pub const BATCH: usize = 64;

/// After a batch, the writer lets lines gather this long before it takes the next: the request path then
/// queues lines without waking it for each, and they leave in a few large `sendmmsg` calls.
pub const GATHER: Duration = Duration::from_millis(2);

/// What the writer task owns.
pub struct Writer {
    pub http_format: LogFormat,
    pub tcp_format: LogFormat,
    pub framer: Framer,
    pub context: RenderContext,
    pub sink: Sink,
    pub dropped: Counter,
}

impl Writer {
    /// Runs until every sender is gone and the queue is empty.
    pub async fn run(mut self, mut lines: mpsc::Receiver<Line>) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut text = Vec::with_capacity(512);
        let mut framed = Vec::with_capacity(BATCH * 256);
        let mut ends = Vec::with_capacity(BATCH);
        let mut dates = LogDates::default();
        loop {
            let taken = lines.recv_many(&mut batch, BATCH).await;
            if taken == 0 {
                break;
            }
            framed.clear();
            ends.clear();
            // One clock read for the batch: its lines were queued within the last few milliseconds.
            let now = SystemTime::now();
            for line in batch.drain(..) {
                text.clear();
                let format = match line.kind {
                    LineKind::Http => &self.http_format,
                    LineKind::Tcp => &self.tcp_format,
                };
                render_with_dates(format, &line.record, &self.context, &mut dates, &mut text);
                self.framer.frame(now, &text, &mut framed);
                ends.push(framed.len());
            }
            let lost = self.sink.send_batch(&framed, &ends).await;
            if lost > 0 {
                self.dropped.inc_by(lost as u64);
            }
            if framed.capacity() > BATCH * 4096 {
                framed = Vec::with_capacity(BATCH * 256);
            }
            if taken < BATCH {
                tokio::time::sleep(GATHER).await;
            }
        }
    }
}
