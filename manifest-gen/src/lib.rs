//! Synthetic Kubernetes manifests for the tests, the bench and the examples: one generator of `Namespace`,
//! `Service`, `EndpointSlice` and `Route` YAML, written the way `oc get -o yaml` prints them.
//!
//! - `yaml`: scalars (plain when YAML reads them back as the same string, double-quoted otherwise) and blocks;
//! - `document`: the `Manifest` trait (one YAML document per object, `---` after each) and `documents`;
//! - `namespace`, `service`, `endpoint_slice`, `route`: one object kind each;
//! - `route_set`: the bench-shaped route sets (a Service with its pods per route, HTTP and TLS kinds) that the
//!   bench's proxies, the churn example and the churn test share.
//!
//! No dependencies: the text is written directly.

mod document;
mod endpoint_slice;
mod namespace;
mod route;
mod route_set;
mod service;
mod yaml;

pub use document::{documents, Manifest};
pub use endpoint_slice::{Endpoint, EndpointPort, EndpointSlice};
pub use namespace::Namespace;
pub use route::{Backend, Route, RouteTls, TlsTermination};
pub use route_set::{
    loopback_pods, BenchRoute, Certificates, Pod, RouteSet, Termination, BENCH_CREATED, DOMAIN, NAMESPACE,
};
pub use service::{Service, ServicePort};
