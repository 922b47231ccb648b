//! Where `steer_ingress` must run for a pod: the steering setup asks before leg B's SYN leaves, with the
//! interface the FIB reaches the pod by. The XDP front attaches it there on first use; the fixed kind
//! serves tests and fronts whose pod-facing side is all named at start.

use std::sync::Arc;

use crate::xdp::{XdpError, XdpFront};

/// The interfaces the pods' packets come in by.
pub trait PodInterfaces: Send + Sync {
    /// Makes sure the packets arriving on `if_index` meet `steer_ingress`.
    fn watch(&self, if_index: u32) -> Result<(), XdpError>;
    /// Forgets interfaces that went away (run with the sweep).
    fn prune(&self);
}

impl PodInterfaces for XdpFront {
    fn watch(&self, if_index: u32) -> Result<(), XdpError> {
        self.watch_pod_interface(if_index).map(drop)
    }

    fn prune(&self) {
        self.prune_pod_interfaces();
    }
}

impl<T: PodInterfaces + ?Sized> PodInterfaces for Arc<T> {
    fn watch(&self, if_index: u32) -> Result<(), XdpError> {
        (**self).watch(if_index)
    }

    fn prune(&self) {
        (**self).prune();
    }
}

/// Every interface already has `steer_ingress` (tests' fake datapaths).
pub struct NamedAtStart;

impl PodInterfaces for NamedAtStart {
    fn watch(&self, _if_index: u32) -> Result<(), XdpError> {
        Ok(())
    }

    fn prune(&self) {}
}
