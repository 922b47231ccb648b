//! Typed Kubernetes objects the router reads, the whole-state `Snapshot` every source produces, and the
//! step every source runs on it (`add_ingress_routes`: Ingresses as routes).

mod ingress;
mod objects;
mod route;
mod snapshot;

pub use ingress::{add_ingress_routes, ingress_routes, INGRESS_CLASS, TERMINATION_ANNOTATION};
pub use objects::Objects;
pub use route::*;
pub use snapshot::{ObjectKey, Snapshot};
