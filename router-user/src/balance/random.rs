//! Weighted random with two draws, like HAProxy's `balance random` (draws 2): pick two endpoints at random
//! in proportion to weight and keep the one with fewer requests in flight.

use std::cell::Cell;

use super::Candidate;

pub fn pick_two<C: Candidate>(endpoints: &[C], eligible: &dyn Fn(usize) -> bool) -> Option<usize> {
    let total: u64 = (0..endpoints.len()).filter(|&i| eligible(i)).map(|i| u64::from(endpoints[i].weight())).sum();
    if total == 0 {
        return None;
    }
    let draw = || {
        let mut point = next_random() % total;
        for i in (0..endpoints.len()).filter(|&i| eligible(i)) {
            let weight = u64::from(endpoints[i].weight());
            if point < weight {
                return i;
            }
            point -= weight;
        }
        unreachable_fallback(endpoints, eligible)
    };
    let (a, b) = (draw(), draw());
    Some(if endpoints[b].active() < endpoints[a].active() { b } else { a })
}

/// Rounding can never leave the loop above without a choice, but stay total: the first eligible endpoint.
fn unreachable_fallback<C: Candidate>(endpoints: &[C], eligible: &dyn Fn(usize) -> bool) -> usize {
    (0..endpoints.len()).find(|&i| eligible(i)).unwrap_or(0)
}

/// A fast per-thread xorshift64* generator; balancing needs spread, not secrecy.
pub fn next_random() -> u64 {
    thread_local! {
        static STATE: Cell<u64> = Cell::new(seed());
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    // Mix in a stack address so threads started in the same nanosecond differ.
    (nanos ^ (&local as *const u8 as u64).rotate_left(32)) | 1
}
