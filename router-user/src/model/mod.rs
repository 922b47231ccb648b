//! Typed Kubernetes objects the router reads, the whole-state `Snapshot` every source produces, and what is
//! derived from a snapshot alone (the router's own Service as this node sees it).

mod local_service;
mod objects;
mod route;
mod snapshot;

pub use local_service::{Family, LocalService, NodePortSpec};
pub use objects::Objects;
pub use route::*;
pub use snapshot::{ObjectKey, Snapshot};
