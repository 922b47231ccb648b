//! The reserved source ports of leg B (Q's ports, `--xdp-steer-ports`): taken for a flow when its
//! SYN goes out, freed when the flow's entries are removed. An exhausted range makes the connection
//! fall back to the userspace relay.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

/// The ports of the reserved range not in use, handed out round-robin so that a port just freed is
/// reused last (late segments of its old flow find no entry rather than a new flow's).
#[derive(Debug)]
pub struct PortPool {
    range: RangeInclusive<u16>,
    in_use: BTreeSet<u16>,
    next: u16,
}

impl PortPool {
    pub fn new(range: RangeInclusive<u16>) -> PortPool {
        let next = *range.start();
        PortPool { range, in_use: BTreeSet::new(), next }
    }

    /// A free port of the range, now in use; `None` when all are.
    pub fn take(&mut self) -> Option<u16> {
        let size = usize::from(self.range.end() - self.range.start()) + 1;
        for _ in 0..size {
            let port = self.next;
            self.next = if port >= *self.range.end() { *self.range.start() } else { port + 1 };
            if self.in_use.insert(port) {
                return Some(port);
            }
        }
        None
    }

    /// Marks `port` in use (a flow adopted from a previous router holds it); `false` when it lies
    /// outside the range (then it is never handed out anyway) or is in use already.
    pub fn claim(&mut self, port: u16) -> bool {
        self.range.contains(&port) && self.in_use.insert(port)
    }

    /// Returns `port` to the pool (a port not taken is ignored).
    pub fn free(&mut self, port: u16) {
        self.in_use.remove(&port);
    }

    #[cfg(test)]
    pub fn in_use(&self) -> usize {
        self.in_use.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_each_port_once_until_exhausted() {
        let mut pool = PortPool::new(61_000..=61_002);
        let taken: Vec<_> = (0..3).map(|_| pool.take()).collect();
        assert_eq!(taken, vec![Some(61_000), Some(61_001), Some(61_002)]);
        assert_eq!(pool.take(), None, "exhausted");
        pool.free(61_001);
        assert_eq!(pool.take(), Some(61_001), "the freed port is the only one");
        assert_eq!(pool.in_use(), 3);
    }

    #[test]
    fn claimed_ports_are_not_handed_out() {
        let mut pool = PortPool::new(61_000..=61_002);
        assert!(pool.claim(61_000));
        assert!(!pool.claim(61_000), "claimed twice");
        assert!(!pool.claim(62_000), "outside the range");
        assert_eq!(pool.take(), Some(61_001));
        assert_eq!(pool.take(), Some(61_002));
        assert_eq!(pool.take(), None);
    }

    #[test]
    fn a_freed_port_is_reused_last() {
        let mut pool = PortPool::new(100..=103);
        assert_eq!(pool.take(), Some(100));
        pool.free(100);
        assert_eq!(pool.take(), Some(101));
        assert_eq!(pool.take(), Some(102));
        assert_eq!(pool.take(), Some(103));
        assert_eq!(pool.take(), Some(100), "wraps around to the freed port");
        pool.free(7);
        assert_eq!(pool.in_use(), 4, "freeing a port never taken changes nothing");
    }

    #[test]
    fn the_top_port_of_the_space_does_not_overflow() {
        let mut pool = PortPool::new(65_534..=65_535);
        assert_eq!(pool.take(), Some(65_534));
        assert_eq!(pool.take(), Some(65_535));
        assert_eq!(pool.take(), None);
    }
}
