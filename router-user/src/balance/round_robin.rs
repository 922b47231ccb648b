//! Plain round robin over a backend's endpoints, skipping those marked down and those already tried.

use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Default)]
pub struct RoundRobin {
    next: AtomicUsize,
}

impl RoundRobin {
    /// Index of the next endpoint out of `count` for which `usable(i)` holds, or `None` when none does.
    pub fn pick(&self, count: usize, usable: impl Fn(usize) -> bool) -> Option<usize> {
        if count == 0 {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..count).map(|offset| (start + offset) % count).find(|&i| usable(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_over_all_endpoints() {
        let rr = RoundRobin::default();
        let picks: Vec<_> = (0..6).map(|_| rr.pick(3, |_| true)).collect();
        assert_eq!(picks, [Some(0), Some(1), Some(2), Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn skips_unusable_and_reports_none_when_all_are() {
        let rr = RoundRobin::default();
        assert!((0..5).all(|_| rr.pick(3, |i| i != 1) != Some(1)));
        assert_eq!(rr.pick(3, |_| false), None);
        assert_eq!(rr.pick(0, |_| true), None);
    }
}
