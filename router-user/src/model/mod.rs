//! Typed Kubernetes objects the router reads (Services and endpoints as the few fields it reads: `stored`), the
//! whole-state `Snapshot` every source produces, what is derived from a snapshot alone (the router's own Service
//! as this node sees it), and the step every source runs on it (`add_ingress_routes`: Ingresses as routes;
//! `add_gateway_routes`: Gateway API routes as routes).

mod address_family;
mod bookkeeping;
pub mod gateway;
mod gateway_api;
mod gateway_filters;
mod ingress;
mod local_service;
mod null_as_default;
mod object_key;
mod objects;
mod pem_text;
mod request_match;
mod route;
mod snapshot;
mod stored;

pub use address_family::{unusable_address_type, AddressFamily};
pub use bookkeeping::{drop_bookkeeping, LAST_APPLIED};
pub use gateway::add_gateway_routes;
pub use gateway_filters::GatewayFilters;
pub use ingress::{add_ingress_routes, ingress_routes, INGRESS_CLASS, TERMINATION_ANNOTATION};
pub use local_service::{Family, LocalService, NodePortSpec};
pub use null_as_default::null_as_default;
pub use object_key::ObjectKey;
pub use objects::Objects;
pub use pem_text::PemText;
pub use request_match::{same_conditions, MatchOrigin, RequestConditions, RequestMatch, ValueCondition};
pub use route::*;
pub use snapshot::Snapshot;
pub use stored::{
    EndpointAddress, EndpointPort, EndpointSet, StoredEndpoints, StoredService, StoredServicePort, StoredSlice,
};
