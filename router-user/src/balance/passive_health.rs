//! Passive health: an endpoint that refused a connection is skipped for a short while, so one dead pod costs
//! one failed connect rather than a failed connect on every n-th request (HAProxy marks it down by its check).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long an endpoint stays out of rotation after a failed connect (HAProxy's default check interval).
pub const DOWN_FOR: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct PassiveHealth {
    /// Milliseconds since the process clock's epoch until which the endpoint is considered down; 0 = up.
    down_until_ms: AtomicU64,
}

impl PassiveHealth {
    pub fn is_up(&self) -> bool {
        let until = self.down_until_ms.load(Ordering::Relaxed);
        until == 0 || now_ms() >= until
    }

    pub fn mark_down(&self) {
        let until = now_ms() + DOWN_FOR.as_millis() as u64;
        self.down_until_ms.store(until, Ordering::Relaxed);
    }

    pub fn mark_up(&self) {
        if self.down_until_ms.load(Ordering::Relaxed) != 0 {
            self.down_until_ms.store(0, Ordering::Relaxed);
        }
    }
}

fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    // +1 so that a real deadline is never 0, which means "up".
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_then_up_again() {
        let health = PassiveHealth::default();
        assert!(health.is_up());
        health.mark_down();
        assert!(!health.is_up());
        health.mark_up();
        assert!(health.is_up());
    }
}
