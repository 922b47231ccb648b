//! `haproxy.router.openshift.io/pod-concurrent-connections`: at most N requests in flight per endpoint;
//! further requests wait briefly for a free slot (HAProxy queues them) and then get a 503.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

#[derive(Debug)]
pub struct ConnectionSlots {
    max: u32,
    used: AtomicU32,
    /// Shared by every endpoint of a backend: a request waiting for any slot wakes when one frees.
    freed: Arc<Notify>,
}

impl ConnectionSlots {
    pub fn new(max: u32, freed: Arc<Notify>) -> Self {
        Self { max, used: AtomicU32::new(0), freed }
    }

    pub fn available(&self) -> bool {
        self.used.load(Ordering::Relaxed) < self.max
    }

    /// Takes a slot if one is free; pair a success with [`ConnectionSlots::release`].
    pub fn try_take(&self) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            if used >= self.max {
                return false;
            }
            match self.used.compare_exchange_weak(used, used + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    pub fn release(&self) {
        self.used.fetch_sub(1, Ordering::AcqRel);
        self.freed.notify_waiters();
    }

    /// Resolves when a slot of this backend is released.
    pub fn freed(&self) -> Arc<Notify> {
        self.freed.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cap_and_release() {
        let slots = ConnectionSlots::new(2, Arc::new(Notify::new()));
        assert!(slots.try_take());
        assert!(slots.try_take());
        assert!(!slots.try_take());
        assert!(!slots.available());
        slots.release();
        assert!(slots.available());
        assert!(slots.try_take());
    }
}
