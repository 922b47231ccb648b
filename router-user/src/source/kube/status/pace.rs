//! The pace of status writes: a token bucket, so that a router starting on tens of thousands of routes (or a
//! change that touches them all) writes at a bounded rate instead of flooding the apiserver.

use std::time::{Duration, Instant};

pub struct Pace {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Pace {
    pub fn new(per_second: u32, burst: u32, now: Instant) -> Self {
        Pace { per_second: per_second as f64, burst: burst as f64, tokens: burst as f64, at: now }
    }

    /// Takes a token if one is there; otherwise says how long until one is.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let start = Instant::now();
        let mut pace = Pace::new(100, 3, start);
        for _ in 0..3 {
            assert_eq!(pace.take(start), Ok(()));
        }
        let wait = pace.take(start).expect_err("the burst is spent");
        assert!(wait > Duration::from_millis(9) && wait <= Duration::from_millis(10), "{wait:?}");
        assert_eq!(pace.take(start + Duration::from_millis(10)), Ok(()));
        assert!(pace.take(start + Duration::from_millis(10)).is_err());
        // A long pause refills no more than the burst.
        let later = start + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(pace.take(later), Ok(()));
        }
        assert!(pace.take(later).is_err());
    }
}
