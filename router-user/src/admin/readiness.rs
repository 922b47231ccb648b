//! The router's readiness (what `/healthz/ready` reports): the first route table is live and shutdown has not
//! begun. Shared by the admin listener, the load-balancer probe and the lifecycle code.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Default)]
pub struct Readiness {
    table_ready: AtomicBool,
    draining: AtomicBool,
    /// ROUTER_BIND_PORTS_AFTER_SYNC: the HTTP/HTTPS ports are not bound yet.
    ports_unbound: AtomicBool,
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

    /// ROUTER_BIND_PORTS_AFTER_SYNC: whether the HTTP/HTTPS ports still wait to be bound.
    pub fn set_ports_unbound(&self, unbound: bool) {
        self.ports_unbound.store(unbound, Ordering::Release);
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
        } else if self.ports_unbound.load(Ordering::Acquire) {
            Some("binding the HTTP and HTTPS ports")
        } else {
            None
        }
    }
}
