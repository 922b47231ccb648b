//! The whole state a source has seen, as typed objects. Every source (manifest files, Kubernetes) produces a
//! complete `Snapshot`; the table is compiled from it, never patched event by event.
//!
//! Objects are shared (`Arc`), and so are whole maps of them (`Objects`): a source that changes one object
//! builds the next snapshot from the last one's by reference, and a build sees an unchanged object as the same
//! allocation (`Arc::ptr_eq`), without comparing it.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::networking::v1::Ingress;

use std::sync::Arc;

use super::gateway_api::{Gateway, GatewayReport, HTTPRoute, TLSRoute};
use super::object_key::ObjectKey;
use super::objects::Objects;
use super::route::Route;
use super::stored::{StoredEndpoints, StoredService, StoredSlice};

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Route objects, and the routes `add_ingress_routes` made of `ingresses` (and `add_gateway_routes` of the
    /// Gateway API objects).
    pub routes: Objects<ObjectKey, Route>,
    /// Services, EndpointSlices and core `Endpoints` as the few fields the router reads of them.
    pub services: Objects<ObjectKey, StoredService>,
    pub endpoint_slices: Objects<ObjectKey, StoredSlice>,
    /// Core `Endpoints`, keyed like their Service.
    pub endpoints: Objects<ObjectKey, StoredEndpoints>,
    /// Cluster-scoped: keyed by name.
    pub namespaces: Objects<String, Namespace>,
    pub secrets: Objects<ObjectKey, Secret>,
    /// ConfigMaps: the CA bundles routes name for client certificates (`router.openshift.io/client-tls-ca`).
    pub config_maps: Objects<ObjectKey, ConfigMap>,
    /// `networking.k8s.io/v1` Ingresses, as read; their routes are in `routes` once the source has run
    /// `add_ingress_routes`.
    pub ingresses: Objects<ObjectKey, Ingress>,
    /// Gateway API objects, as read; the routes of those attached to the router's Gateways are in `routes`
    /// once the source has run `add_gateway_routes`, which also fills `gateway_report`.
    pub gateways: Objects<ObjectKey, Gateway>,
    pub http_routes: Objects<ObjectKey, HTTPRoute>,
    pub tls_routes: Objects<ObjectKey, TLSRoute>,
    pub gateway_report: Arc<GatewayReport>,
    /// Secrets named by a route's `externalCertificate` that the router's service account may not read.
    pub unreadable_secrets: BTreeSet<ObjectKey>,
}
