//! The counters of one HAProxy-style proxy (a frontend, a backend, or a server of a backend), kept by the
//! router itself: what `show stat` would report for it.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::session_rate::SessionRate;
use super::sliding_average::SlidingAverage;

/// HAProxy's response classes, in its `hrsp_*` column order; also the exporter's `code` label values.
pub const RESPONSE_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"];

#[derive(Debug, Default)]
pub struct ProxyCounters {
    /// Sessions open now (`scur`): connections for a frontend, requests being served for a backend.
    current: AtomicI64,
    /// The most sessions open at once (`smax`).
    max: AtomicU64,
    /// Sessions since start (`stot`).
    total: AtomicU64,
    rate: SessionRate,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// `econ`: attempts that could not connect.
    pub connection_errors: AtomicU64,
    /// `eresp`: attempts that connected but got no usable response (broken, or too late).
    pub response_errors: AtomicU64,
    /// `chkfail`: failed health checks.
    pub check_failures: AtomicU64,
    responses: [AtomicU64; 6],
    /// `rtime`: milliseconds from picking a server to its response head, over the last 1024 requests.
    response_ms: SlidingAverage,
}

/// One open session of a [`ProxyCounters`]: it counts as current until dropped.
#[derive(Debug)]
pub struct Session {
    counters: Arc<ProxyCounters>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.counters.current.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ProxyCounters {
    /// Opens a session: counted now, current until the returned guard drops.
    pub fn open_session(self: &Arc<Self>) -> Session {
        self.count_session();
        let now = self.current.fetch_add(1, Ordering::Relaxed) + 1;
        self.max.fetch_max(now.max(0) as u64, Ordering::Relaxed);
        Session { counters: self.clone() }
    }

    /// Counts a session whose concurrency is tracked elsewhere (a server's requests in flight).
    pub fn count_session(&self) {
        self.total.fetch_add(1, Ordering::Relaxed);
        self.rate.tick();
    }

    /// Records `concurrent` sessions seen at once, for the maximum.
    pub fn observe_concurrency(&self, concurrent: u64) {
        self.max.fetch_max(concurrent, Ordering::Relaxed);
    }

    pub fn count_response(&self, code: u16) {
        self.responses[response_class(code)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn observe_response_time(&self, elapsed: Duration) {
        self.response_ms.add(elapsed.as_millis() as u64);
    }

    pub fn add_bytes(&self, bytes_in: u64, bytes_out: u64) {
        self.bytes_in.fetch_add(bytes_in, Ordering::Relaxed);
        self.bytes_out.fetch_add(bytes_out, Ordering::Relaxed);
    }

    pub fn current_sessions(&self) -> u64 {
        self.current.load(Ordering::Relaxed).max(0) as u64
    }

    pub fn max_sessions(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    pub fn sessions_total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    pub fn session_rate(&self) -> u64 {
        self.rate.current()
    }

    pub fn max_session_rate(&self) -> u64 {
        self.rate.max()
    }

    /// Responses per class, in [`RESPONSE_CLASSES`] order.
    pub fn responses(&self) -> [u64; 6] {
        std::array::from_fn(|i| self.responses[i].load(Ordering::Relaxed))
    }

    pub fn average_response_ms(&self) -> u64 {
        self.response_ms.get()
    }
}

/// The index in [`RESPONSE_CLASSES`] of a status code.
pub fn response_class(code: u16) -> usize {
    match code {
        100..=199 => 0,
        200..=299 => 1,
        300..=399 => 2,
        400..=499 => 3,
        500..=599 => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_count_while_open_and_keep_their_maximum() {
        let counters = Arc::new(ProxyCounters::default());
        let first = counters.open_session();
        let second = counters.open_session();
        assert_eq!(counters.current_sessions(), 2);
        drop(first);
        drop(second);
        let _third = counters.open_session();
        assert_eq!((counters.current_sessions(), counters.max_sessions(), counters.sessions_total()), (1, 2, 3));
    }

    #[test]
    fn responses_fall_in_haproxys_classes() {
        let counters = ProxyCounters::default();
        for code in [101, 200, 204, 302, 404, 503, 600] {
            counters.count_response(code);
        }
        assert_eq!(counters.responses(), [1, 2, 1, 1, 1, 1]);
    }
}
