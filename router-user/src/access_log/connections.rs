//! Open client connections, for `%ac` (all) and `%fc` (the line's frontend): counted while a guard lives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// HAProxy's frontend names for the router's listeners.
pub const PUBLIC: &str = "public";
pub const FE_SNI: &str = "fe_sni";
pub const PUBLIC_SSL: &str = "public_ssl";

#[derive(Debug, Default)]
pub struct ConnectionCounts {
    active: AtomicU64,
    public: AtomicU64,
    fe_sni: AtomicU64,
    public_ssl: AtomicU64,
}

impl ConnectionCounts {
    fn frontend(&self, name: &str) -> &AtomicU64 {
        match name {
            PUBLIC => &self.public,
            FE_SNI => &self.fe_sni,
            _ => &self.public_ssl,
        }
    }

    /// (`%ac`, `%fc`) now.
    pub fn now(&self, frontend: &str) -> (u64, u64) {
        (self.active.load(Ordering::Relaxed), self.frontend(frontend).load(Ordering::Relaxed))
    }
}

/// One open connection on a frontend; dropping it stops counting it.
pub struct OpenConnection {
    counts: Arc<super::AccessLog>,
    frontend: &'static str,
}

impl OpenConnection {
    pub fn new(log: &Arc<super::AccessLog>, frontend: &'static str) -> OpenConnection {
        log.connections.active.fetch_add(1, Ordering::Relaxed);
        log.connections.frontend(frontend).fetch_add(1, Ordering::Relaxed);
        OpenConnection { counts: log.clone(), frontend }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        let counts = &self.counts.connections;
        counts.active.fetch_sub(1, Ordering::Relaxed);
        counts.frontend(self.frontend).fetch_sub(1, Ordering::Relaxed);
    }
}
