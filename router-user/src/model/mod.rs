//! Typed Kubernetes objects the router reads, the whole-state `Snapshot` every source produces, and what is
//! derived from a snapshot alone (the router's own Service as this node sees it).

mod address_family;
mod null_as_default;
mod local_service;
mod objects;
mod route;
mod snapshot;

pub use address_family::{unusable_address_type, AddressFamily};
pub use null_as_default::null_as_default;
pub use local_service::{Family, LocalService, NodePortSpec};
pub use objects::Objects;
pub use route::*;
pub use snapshot::{ObjectKey, Snapshot};
