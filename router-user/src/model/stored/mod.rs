//! What the router keeps of Services, EndpointSlices and core Endpoints: the few fields the route table, the
//! Ingress and Gateway API steps and the router's own Service (`LocalService`) read, taken from the decoded
//! Kubernetes object when a source stores it. The whole k8s-openapi structs cost several times more (an
//! EndpointSlice endpoint is 352 bytes before its strings), and there is one Service and slice per route.
//! Each conversion applies the rules every reader applied to the whole object (endpoint ports that are not TCP
//! or whose number does not fit 16 bits, and addresses not of the slice's family, give nothing), so the readers
//! see only what they use.

mod core_endpoints;
mod endpoint_set;
mod service;
mod slice;

pub use core_endpoints::StoredEndpoints;
pub use endpoint_set::{EndpointAddress, EndpointPort, EndpointSet};
pub use service::{StoredService, StoredServicePort};
pub use slice::StoredSlice;

#[cfg(test)]
mod tests;
