//! The router's readiness (what `/healthz/ready` reports): the first route table is live and shutdown has not
//! begun. Shared by the admin listener, the load-balancer probe and the lifecycle code.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
pub struct Readiness {
    table_ready: AtomicBool,
    draining: AtomicBool,
}

impl Readiness {
    /// The first complete route table is live.
    pub fn mark_table_ready(&self) {
        self.table_ready.store(true, Ordering::Release);
    }

    /// Shutdown began: readiness fails from now on so load balancers move away.
    pub fn mark_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Why the router is not ready, or `None` when it is.
    pub fn not_ready_reason(&self) -> Option<&'static str> {
        if self.is_draining() {
            Some("shutting down")
        } else if !self.table_ready.load(Ordering::Acquire) {
            Some("waiting for the first route table")
        } else {
            None
        }
    }
}
