//! Sessions per second as HAProxy's stats show them: the count of the last complete second (`rate`), and the
//! highest such count seen (`rate_max`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

#[derive(Debug, Default)]
pub struct SessionRate {
    /// The second (on the process clock) `current` counts.
    second: AtomicU64,
    current: AtomicU64,
    /// The count of the second before `second`.
    previous: AtomicU64,
    max: AtomicU64,
}

impl SessionRate {
    pub fn tick(&self) {
        self.tick_at(now_second());
    }

    fn tick_at(&self, now: u64) {
        self.roll(now);
        self.current.fetch_add(1, Ordering::Relaxed);
    }

    /// Moves to second `now`: the current count becomes the previous one (or 0 after a silent second).
    fn roll(&self, now: u64) {
        let second = self.second.load(Ordering::Relaxed);
        if second == now || self.second.compare_exchange(second, now, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        let finished = self.current.swap(0, Ordering::Relaxed);
        let previous = if now == second + 1 { finished } else { 0 };
        self.previous.store(previous, Ordering::Relaxed);
        self.max.fetch_max(finished, Ordering::Relaxed);
    }

    /// Sessions in the last complete second.
    pub fn current(&self) -> u64 {
        self.current_at(now_second())
    }

    fn current_at(&self, now: u64) -> u64 {
        self.roll(now);
        self.previous.load(Ordering::Relaxed)
    }

    /// The most sessions seen in one second (the running second included).
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed).max(self.current.load(Ordering::Relaxed))
    }
}

fn now_second() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_secs() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_the_last_complete_second_and_the_busiest() {
        let rate = SessionRate::default();
        for _ in 0..3 {
            rate.tick_at(5);
        }
        assert_eq!(rate.current_at(5), 0, "second 5 is not complete yet");
        assert_eq!(rate.max(), 3, "the running second counts toward the max");
        rate.tick_at(6);
        assert_eq!(rate.current_at(6), 3);
        assert_eq!(rate.current_at(8), 0, "second 7 was silent");
        assert_eq!(rate.max(), 3);
    }
}
