//! When bytes last moved through a relay, shared by its two directions: every relay (splice(2), sockmap,
//! WebSocket tunnel) closes after its idle limit passes with no byte either way (HAProxy's `timeout tunnel`).
//! Once one side has closed its direction (FIN), the splice(2) relay and the tunnel hold what remains to
//! HAProxy's half-close timeouts instead: `timeout server-fin` after the client's FIN (the pod must go on
//! sending), `timeout client-fin` after the pod's (the client must).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// ROUTER_CLIENT_FIN_TIMEOUT and ROUTER_DEFAULT_SERVER_FIN_TIMEOUT: the idle limit of a relay once one side
/// has closed. Each replaces the tunnel timeout, longer or shorter, as in HAProxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinTimeouts {
    /// After the pod's FIN: the client side's limit.
    pub client: Duration,
    /// After the client's FIN: the pod side's limit.
    pub server: Duration,
}

/// The side of a relay whose FIN was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedSide {
    Client,
    Pod,
}

const OPEN: u8 = 0;
const CLIENT_CLOSED: u8 = 1;
const POD_CLOSED: u8 = 2;

/// The time of the last byte moved, kept as nanoseconds since the relay started so that both directions can
/// record it through a shared reference.
#[derive(Debug)]
pub struct IdleTracker {
    started: Instant,
    last_nanos: AtomicU64,
    /// `OPEN`, or which side closed first.
    half_closed: AtomicU8,
    /// Woken when a side closes, so that a relay waiting on the open-relay deadline takes the shorter one.
    closed: Notify,
}

impl IdleTracker {
    /// A tracker for a relay starting now (which counts as activity).
    pub fn new() -> Self {
        IdleTracker {
            started: Instant::now(),
            last_nanos: AtomicU64::new(0),
            half_closed: AtomicU8::new(OPEN),
            closed: Notify::new(),
        }
    }

    /// Records `side`'s FIN; the first one starts the half-close timer (it counts as activity).
    pub fn side_closed(&self, side: ClosedSide) {
        let code = match side {
            ClosedSide::Client => CLIENT_CLOSED,
            ClosedSide::Pod => POD_CLOSED,
        };
        if self.half_closed.compare_exchange(OPEN, code, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.touch();
            self.closed.notify_one();
        }
    }

    /// Whether a side has closed.
    pub fn is_half_closed(&self) -> bool {
        self.half_closed.load(Ordering::Acquire) != OPEN
    }

    /// Resolves once a side has closed (at once if one already has).
    pub async fn half_closed(&self) {
        if self.half_closed.load(Ordering::Acquire) == OPEN {
            self.closed.notified().await;
        }
    }

    /// The idle limit now: `open` while both sides are open, then the FIN timeout of the side still sending.
    pub fn limit(&self, open: Duration, fin: Option<FinTimeouts>) -> Duration {
        match (self.half_closed.load(Ordering::Acquire), fin) {
            (CLIENT_CLOSED, Some(fin)) => fin.server,
            (POD_CLOSED, Some(fin)) => fin.client,
            _ => open,
        }
    }

    /// Records that bytes moved now.
    pub fn touch(&self) {
        let nanos = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_nanos.store(nanos, Ordering::Relaxed);
    }

    /// When bytes last moved (the start, when none has).
    pub fn last_activity(&self) -> Instant {
        self.started + Duration::from_nanos(self.last_nanos.load(Ordering::Relaxed))
    }

    /// When the relay will have been idle for `limit`, unless bytes move before then.
    pub fn deadline(&self, limit: Duration) -> Instant {
        self.last_activity() + limit
    }

    /// Whether no byte has moved for `limit`.
    pub fn expired(&self, limit: Duration) -> bool {
        self.deadline(limit) <= Instant::now()
    }
}

impl Default for IdleTracker {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn activity_moves_the_deadline() {
        let long = Duration::from_secs(3600);
        let idle = IdleTracker::new();
        let first = idle.deadline(long);
        assert!(!idle.expired(long), "just started");
        assert!(idle.expired(Duration::ZERO), "no time left with a zero limit");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let before_touch = Instant::now();
        idle.touch();
        assert!(idle.last_activity() >= before_touch, "the touch is the last activity");
        assert!(idle.deadline(long) >= first + Duration::from_millis(20), "the deadline moved with it");
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(idle.expired(Duration::from_millis(1)), "idle longer than the limit since the touch");
    }

    #[tokio::test]
    async fn the_first_fin_switches_to_the_other_sides_fin_timeout() {
        let (open, fin) =
            (Duration::from_secs(3600), FinTimeouts { client: Duration::from_secs(1), server: Duration::from_secs(2) });
        let idle = IdleTracker::new();
        assert_eq!(idle.limit(open, Some(fin)), open);
        idle.side_closed(ClosedSide::Client);
        tokio::time::timeout(Duration::from_secs(1), idle.half_closed()).await.expect("the close is seen");
        assert_eq!(idle.limit(open, Some(fin)), fin.server, "the pod must go on: server-fin");
        idle.side_closed(ClosedSide::Pod);
        assert_eq!(idle.limit(open, Some(fin)), fin.server, "the first FIN decides");
        assert_eq!(idle.limit(open, None), open, "no FIN timeouts: the open limit stays");
        let other = IdleTracker::new();
        other.side_closed(ClosedSide::Pod);
        assert_eq!(other.limit(open, Some(fin)), fin.client);
    }
}
