//! Typed Kubernetes objects the router reads, and the whole-state `Snapshot` every source produces.

mod route;
mod snapshot;

pub use route::*;
pub use snapshot::{ObjectKey, Snapshot};
