//! The counters of one HAProxy-style proxy (a frontend, a backend, or a server of a backend), kept by the
//! router itself: what `show stat` would report for it.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

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
    /// `bin`: bytes from the client side (a frontend's clients; a backend's or server's requests to pods).
    pub bytes_in: AtomicU64,
    /// `bout`: bytes to the client side (a frontend's answers; what pods answered).
    pub bytes_out: AtomicU64,
    /// `qcur`: requests waiting for a free `pod-concurrent-connections` slot (a backend's queue; the router
    /// never queues on one server).
    queued: AtomicI64,
    /// `reuse`: requests sent on a kept-alive pod connection.
    pub connections_reused: AtomicU64,
    /// `qtime`, `ctime`: milliseconds waited in the queue, and to connect to the pod (0 on a reused
    /// connection), over the last 1024 requests.
    queue_ms: SlidingAverage,
    connect_ms: SlidingAverage,
    /// `downtime`: milliseconds the active checks held the server down, the current spell excluded; and when
    /// that spell began (milliseconds on the process clock, 0 = up).
    downtime_ms: AtomicU64,
    down_since_ms: AtomicU64,
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

/// One request waiting in a backend's queue: counted as queued until dropped.
#[derive(Debug)]
pub struct Queued {
    counters: Arc<ProxyCounters>,
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.counters.queued.fetch_sub(1, Ordering::Relaxed);
    }
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

    /// A request starts waiting in the queue: queued until the returned guard drops.
    pub fn enter_queue(self: &Arc<Self>) -> Queued {
        self.queued.fetch_add(1, Ordering::Relaxed);
        Queued { counters: self.clone() }
    }

    pub fn current_queue(&self) -> u64 {
        self.queued.load(Ordering::Relaxed).max(0) as u64
    }

    /// A served request's time in the queue (zero when it found a free slot) and to its pod connection.
    pub fn observe_queue_time(&self, waited: Duration) {
        self.queue_ms.add(waited.as_millis() as u64);
    }

    pub fn observe_connect_time(&self, connect: Duration) {
        self.connect_ms.add(connect.as_millis() as u64);
    }

    pub fn average_queue_ms(&self) -> u64 {
        self.queue_ms.get()
    }

    pub fn average_connect_ms(&self) -> u64 {
        self.connect_ms.get()
    }

    /// The active checks' verdict on a server: a spell of downtime starts or ends.
    pub fn observe_check_state(&self, up: bool) {
        let since = self.down_since_ms.load(Ordering::Relaxed);
        match (up, since) {
            (false, 0) => self.down_since_ms.store(clock_ms(), Ordering::Relaxed),
            (true, since) if since > 0 => {
                self.downtime_ms.fetch_add(clock_ms().saturating_sub(since), Ordering::Relaxed);
                self.down_since_ms.store(0, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Seconds the server was down by its checks, the current spell included.
    pub fn downtime_seconds(&self) -> u64 {
        let since = self.down_since_ms.load(Ordering::Relaxed);
        let current = if since > 0 { clock_ms().saturating_sub(since) } else { 0 };
        (self.downtime_ms.load(Ordering::Relaxed) + current) / 1000
    }
}

/// Milliseconds on the process clock, from 1 (0 means "not down").
fn clock_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
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
    fn queue_and_downtime_follow_their_events() {
        let counters = Arc::new(ProxyCounters::default());
        let waiting = counters.enter_queue();
        assert_eq!(counters.current_queue(), 1);
        drop(waiting);
        assert_eq!(counters.current_queue(), 0);
        counters.observe_check_state(true);
        assert_eq!(counters.down_since_ms.load(Ordering::Relaxed), 0, "up: no spell");
        counters.observe_check_state(false);
        std::thread::sleep(Duration::from_millis(1100));
        assert!(counters.downtime_seconds() >= 1, "the current spell counts");
        counters.observe_check_state(true);
        let total = counters.downtime_seconds();
        assert!(total >= 1);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(counters.downtime_seconds(), total, "up again: no more downtime");
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
