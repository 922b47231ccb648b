//! HAProxy's sliding average of the last N samples (`swrate`): the sum loses a 1/N share of itself before each
//! new sample is added, so the average (sum / N) follows the last N samples without keeping them. Until N
//! samples have arrived the divisor is the number seen (HAProxy's `swrate_add_dynamic`), so the first values are
//! meaningful at once (an estimate between the samples, not their exact mean).

use std::sync::atomic::{AtomicU64, Ordering};

/// HAProxy averages its queue, connect and response times over the last 1024 requests.
pub const SAMPLES: u64 = 1024;

#[derive(Debug, Default)]
pub struct SlidingAverage {
    sum: AtomicU64,
    seen: AtomicU64,
}

impl SlidingAverage {
    pub fn add(&self, value: u64) {
        let seen = self.seen.fetch_add(1, Ordering::Relaxed).saturating_add(1).min(SAMPLES);
        // A lost race between two adds only blurs one sample; no lock on the request path.
        let _ = self.sum.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sum| Some(sum - sum / seen + value));
    }

    /// The average of the last `SAMPLES` values (0 before the first).
    pub fn get(&self) -> u64 {
        let seen = self.seen.load(Ordering::Relaxed).min(SAMPLES);
        if seen == 0 {
            return 0;
        }
        self.sum.load(Ordering::Relaxed) / seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_the_first_samples_and_then_follows_new_ones() {
        let average = SlidingAverage::default();
        assert_eq!(average.get(), 0);
        average.add(10);
        assert_eq!(average.get(), 10, "one sample is its own average");
        average.add(30);
        assert!((10..30).contains(&average.get()), "{}", average.get());
        for _ in 0..SAMPLES * 8 {
            average.add(100);
        }
        let settled = average.get();
        assert!((99..=100).contains(&settled), "{settled}");
    }
}
