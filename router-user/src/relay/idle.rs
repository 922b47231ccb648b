//! When bytes last moved through a relay, shared by its two directions: every relay (splice(2), sockmap,
//! WebSocket tunnel) closes after its idle limit passes with no byte either way (HAProxy's `timeout tunnel`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The time of the last byte moved, kept as nanoseconds since the relay started so that both directions can
/// record it through a shared reference.
#[derive(Debug)]
pub struct IdleTracker {
    started: Instant,
    last_nanos: AtomicU64,
}

impl IdleTracker {
    /// A tracker for a relay starting now (which counts as activity).
    pub fn new() -> Self {
        IdleTracker { started: Instant::now(), last_nanos: AtomicU64::new(0) }
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
}
