//! Typed Kubernetes objects the router reads, and the whole-state `Snapshot` every source produces.

mod address_family;
mod null_as_default;
mod objects;
mod route;
mod snapshot;

pub use address_family::{unusable_address_type, AddressFamily};
pub use null_as_default::null_as_default;
pub use objects::Objects;
pub use route::*;
pub use snapshot::{ObjectKey, Snapshot};
