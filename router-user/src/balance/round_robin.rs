//! Round robin. With equal weights: a shared counter. With unequal weights: smooth weighted round robin
//! (each pick adds every endpoint's weight to its credit and takes the highest, which then pays the total),
//! which interleaves rather than bursting, as HAProxy's roundrobin does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(Debug)]
pub struct RoundRobin {
    next: AtomicUsize,
    /// `None` when all weights are equal.
    weighted: Option<Mutex<Smooth>>,
    count: usize,
}

#[derive(Debug)]
struct Smooth {
    weights: Vec<i64>,
    credit: Vec<i64>,
}

impl RoundRobin {
    pub fn new(weights: &[u32]) -> RoundRobin {
        let equal = weights.windows(2).all(|w| w[0] == w[1]);
        let weighted = (!equal).then(|| {
            Mutex::new(Smooth {
                weights: weights.iter().map(|&w| i64::from(w)).collect(),
                credit: vec![0; weights.len()],
            })
        });
        RoundRobin { next: AtomicUsize::new(0), weighted, count: weights.len() }
    }

    pub fn pick(&self, eligible: &dyn Fn(usize) -> bool) -> Option<usize> {
        if self.count == 0 {
            return None;
        }
        if let Some(smooth) = &self.weighted {
            // A poisoned lock only means another request panicked mid-pick; the credits are still usable.
            let mut smooth = smooth.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            return smooth.pick(eligible);
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..self.count).map(|offset| (start + offset) % self.count).find(|&i| eligible(i))
    }
}

impl Smooth {
    fn pick(&mut self, eligible: &dyn Fn(usize) -> bool) -> Option<usize> {
        let mut total = 0;
        let mut best: Option<usize> = None;
        for i in 0..self.weights.len() {
            if !eligible(i) {
                continue;
            }
            self.credit[i] += self.weights[i];
            total += self.weights[i];
            if best.is_none_or(|b| self.credit[i] > self.credit[b]) {
                best = Some(i);
            }
        }
        let chosen = best?;
        self.credit[chosen] -= total;
        Some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_weights_rotate() {
        let rr = RoundRobin::new(&[1, 1, 1]);
        let picks: Vec<_> = (0..6).map(|_| rr.pick(&|_| true)).collect();
        assert_eq!(picks, [Some(0), Some(1), Some(2), Some(0), Some(1), Some(2)]);
        assert_eq!(rr.pick(&|_| false), None);
        assert_eq!(RoundRobin::new(&[]).pick(&|_| true), None);
    }

    #[test]
    fn smooth_weights_interleave_in_proportion() {
        let rr = RoundRobin::new(&[5, 1, 1]);
        let picks: Vec<usize> = (0..7).filter_map(|_| rr.pick(&|_| true)).collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0], "nginx's smooth sequence for 5,1,1");
        let rr = RoundRobin::new(&[256, 64]);
        let mut counts = [0; 2];
        for _ in 0..500 {
            counts[rr.pick(&|_| true).expect("pick")] += 1;
        }
        assert_eq!(counts, [400, 100]);
    }
}
