//! An endpoint's health, from two sources. Passive: a refused connect takes the endpoint out of rotation
//! for a short while, so one dead pod costs one failed connect rather than one per n-th request. Active:
//! the health checks (module `health_check`) of routes with more than one endpoint mark it down after
//! `FALL` failures in a row and up again after `RISE` successes (HAProxy's defaults).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long an endpoint stays out of rotation after a failed connect (HAProxy's default check interval).
pub const DOWN_FOR: Duration = Duration::from_secs(5);
/// Consecutive failed checks that mark an endpoint down.
pub const FALL: u32 = 3;
/// Consecutive passed checks that bring it back.
pub const RISE: u32 = 2;

#[derive(Debug, Default)]
pub struct EndpointHealth {
    /// Milliseconds on the process clock until which a failed connect keeps the endpoint out; 0 = never.
    down_until_ms: AtomicU64,
    /// Active checks found it down.
    checked_down: AtomicBool,
    /// Failures (while up) or successes (while down) in a row.
    streak: AtomicU32,
    /// When the next active check is due, on the process clock; 0 = now.
    next_check_ms: AtomicU64,
}

impl EndpointHealth {
    pub fn is_up(&self) -> bool {
        if self.checked_down.load(Ordering::Relaxed) {
            return false;
        }
        let until = self.down_until_ms.load(Ordering::Relaxed);
        until == 0 || now_ms() >= until
    }

    /// The active checks hold the endpoint down (after `FALL` failures, until `RISE` successes).
    pub fn checked_down(&self) -> bool {
        self.checked_down.load(Ordering::Relaxed)
    }

    /// A connect failed on the request path.
    pub fn mark_down(&self) {
        let until = now_ms() + DOWN_FOR.as_millis() as u64;
        self.down_until_ms.store(until, Ordering::Relaxed);
    }

    /// A request reached the endpoint.
    pub fn mark_up(&self) {
        if self.down_until_ms.load(Ordering::Relaxed) != 0 {
            self.down_until_ms.store(0, Ordering::Relaxed);
        }
    }

    /// The outcome of one active check.
    pub fn record_check(&self, passed: bool) {
        let down = self.checked_down.load(Ordering::Relaxed);
        if passed != down {
            // The check agrees with the current state: no streak toward a change.
            self.streak.store(0, Ordering::Relaxed);
            if passed {
                self.mark_up();
            }
            return;
        }
        let streak = self.streak.fetch_add(1, Ordering::Relaxed) + 1;
        let needed = if passed { RISE } else { FALL };
        if streak >= needed {
            self.checked_down.store(!passed, Ordering::Relaxed);
            self.streak.store(0, Ordering::Relaxed);
            if passed {
                self.mark_up();
            }
        }
    }

    /// How long until the next active check is due (zero when it is due now).
    pub fn next_check_in(&self) -> Duration {
        Duration::from_millis(self.next_check_at().saturating_sub(now_ms()))
    }

    /// When the next active check is due, on [`now_ms`]'s clock (0: now). No clock read, for callers that look
    /// at many endpoints against one reading.
    pub fn next_check_at(&self) -> u64 {
        self.next_check_ms.load(Ordering::Relaxed)
    }

    /// True (and the next check scheduled `interval` later) when a check is due at `now` ([`now_ms`]).
    pub fn check_due(&self, now: u64, interval: Duration) -> bool {
        let due = self.next_check_ms.load(Ordering::Relaxed);
        if due > now {
            return false;
        }
        self.next_check_ms.store(now + interval.as_millis() as u64, Ordering::Relaxed);
        true
    }

    /// Carries the state of the same endpoint in the previous table over to this one.
    pub fn inherit(&self, previous: &EndpointHealth) {
        for (mine, theirs) in
            [(&self.down_until_ms, &previous.down_until_ms), (&self.next_check_ms, &previous.next_check_ms)]
        {
            mine.store(theirs.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.checked_down.store(previous.checked_down.load(Ordering::Relaxed), Ordering::Relaxed);
        self.streak.store(previous.streak.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// Milliseconds on the process clock the health deadlines use (never 0).
pub fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    // +1 so that a real deadline is never 0, which means "none".
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passive_marks_come_and_go() {
        let health = EndpointHealth::default();
        assert!(health.is_up());
        health.mark_down();
        assert!(!health.is_up());
        health.mark_up();
        assert!(health.is_up());
    }

    #[test]
    fn active_checks_need_three_failures_and_two_passes() {
        let health = EndpointHealth::default();
        health.record_check(false);
        health.record_check(false);
        assert!(health.is_up(), "two failures are not enough");
        health.record_check(true);
        health.record_check(false);
        health.record_check(false);
        assert!(health.is_up(), "a pass in between resets the streak");
        health.record_check(false);
        assert!(!health.is_up(), "three in a row");
        health.record_check(true);
        assert!(!health.is_up());
        health.record_check(true);
        assert!(health.is_up(), "two passes bring it back");
    }
}
