//! Typed Kubernetes objects the router reads, and the whole-state `Snapshot` every source produces.

mod objects;
mod route;
mod snapshot;

pub use objects::Objects;
pub use route::*;
pub use snapshot::{ObjectKey, Snapshot};
