//! The reflectors' waits after a failed list or watch: [`FIRST`], doubling up to [`CAP`], each shortened by a
//! random fraction of up to a quarter so that routers restarted together spread their calls; back to [`FIRST`]
//! after anything arrives. The cap is the longest a reflector waits to try again once the API server is back:
//! client-go's 30 s (kube-rs's default) would leave changes unserved that long after an API server restart,
//! and a change made after the API server is back is to be served within 2 s: the wait, then a relist or
//! watch, then a table build. A handful of watches retried every second costs an API server nothing.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use kube::runtime::utils::Backoff;

/// The first wait.
pub const FIRST: Duration = Duration::from_millis(250);
/// The longest wait.
pub const CAP: Duration = Duration::from_secs(1);

/// Exponential backoff with a low cap and jitter.
#[derive(Debug)]
pub struct WatchBackoff {
    next: Duration,
    /// Seeds the jitter (random per instance).
    seed: RandomState,
    draws: u64,
}

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: FIRST, seed: RandomState::new(), draws: 0 }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let wait = self.next;
        self.next = (self.next * 2).min(CAP);
        self.draws += 1;
        // A fraction in [0, 1/4) of the wait, from a hash of the draw number.
        let fraction = (self.seed.hash_one(self.draws) >> 11) as f64 / (1u64 << 53) as f64 / 4.0;
        Some(wait.mul_f64(1.0 - fraction))
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = FIRST;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_start_over_after_a_reset() {
        let mut backoff = WatchBackoff::default();
        let waits: Vec<Duration> = backoff.by_ref().take(12).collect();
        let nominal = [250, 500, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000];
        for (wait, nominal) in waits.iter().zip(nominal) {
            let nominal = Duration::from_millis(nominal);
            assert!(*wait <= nominal && *wait > nominal * 3 / 4, "{wait:?} for a nominal {nominal:?}");
        }
        assert!(waits.iter().all(|wait| *wait <= CAP));
        backoff.reset();
        let first = backoff.next().expect("always a next wait");
        assert!(first <= FIRST, "{first:?}");
    }
}
