//! The reflector stores of every watched resource, and the whole-state `Snapshot` built from them. Services,
//! EndpointSlices and core Endpoints are stored as the part the router reads (`Kept`).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};

use super::endpointslice_v1beta1::EndpointSliceV1beta1;
use super::kept::Kept;
use crate::model::gateway::{Gateway, GatewayReport, HTTPRoute, TLSRoute};
use crate::model::{
    add_gateway_routes, add_ingress_routes, ObjectKey, Objects, Route, Snapshot, StoredEndpoints, StoredService,
    StoredSlice,
};

/// Which EndpointSlice API the server serves, or none when core Endpoints are watched instead.
#[derive(Clone)]
pub enum SliceStore {
    V1(Store<Kept<EndpointSlice, StoredSlice>>),
    V1beta1(Store<Kept<EndpointSliceV1beta1, StoredSlice>>),
    Off,
}

#[derive(Clone)]
pub struct Stores {
    pub routes: Store<Route>,
    pub services: Store<Kept<Service, StoredService>>,
    pub slices: SliceStore,
    /// Only with `ROUTER_WATCH_ENDPOINTS`.
    pub endpoints: Option<Store<Kept<Endpoints, StoredEndpoints>>>,
    pub namespaces: Store<Namespace>,
    /// `kubernetes.io/tls` Secrets only.
    pub secrets: Store<Secret>,
    /// Every ConfigMap: routes name their client certificate CA bundles by ConfigMap.
    pub config_maps: Store<ConfigMap>,
    pub ingresses: Store<Ingress>,
    /// Only with `ROUTER_GATEWAY_CLASS`.
    pub gateway: Option<GatewayStores>,
}

/// The Gateway API reflectors, and the class whose Gateways are served.
#[derive(Clone)]
pub struct GatewayStores {
    pub class: String,
    pub gateways: Store<Gateway>,
    pub http_routes: Store<HTTPRoute>,
    /// `None` when the server does not serve TLSRoutes (`v1alpha2`, the experimental channel).
    pub tls_routes: Option<Store<TLSRoute>>,
}

impl Stores {
    /// Waits until every reflector has finished its first list.
    pub async fn wait_until_ready(&self) {
        // An error here means the reflector was dropped, which only happens when the source stops.
        let _ = self.routes.wait_until_ready().await;
        let _ = self.services.wait_until_ready().await;
        match &self.slices {
            SliceStore::V1(store) => drop(store.wait_until_ready().await),
            SliceStore::V1beta1(store) => drop(store.wait_until_ready().await),
            SliceStore::Off => {}
        }
        if let Some(endpoints) = &self.endpoints {
            let _ = endpoints.wait_until_ready().await;
        }
        let _ = self.namespaces.wait_until_ready().await;
        let _ = self.secrets.wait_until_ready().await;
        let _ = self.config_maps.wait_until_ready().await;
        let _ = self.ingresses.wait_until_ready().await;
        if let Some(gateway) = &self.gateway {
            let _ = gateway.gateways.wait_until_ready().await;
            let _ = gateway.http_routes.wait_until_ready().await;
            if let Some(tls_routes) = &gateway.tls_routes {
                let _ = tls_routes.wait_until_ready().await;
            }
        }
    }

    /// Everything the stores hold now, with Ingresses and Gateway API routes translated into routes (a real Route keeps its name). Objects
    /// are the stores' own (shared, not copied).
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            routes: keyed(&self.routes),
            services: kept(&self.services),
            endpoint_slices: match &self.slices {
                SliceStore::V1(store) => kept(store),
                SliceStore::V1beta1(store) => kept(store),
                SliceStore::Off => Objects::default(),
            },
            endpoints: self.endpoints.as_ref().map(kept).unwrap_or_default(),
            namespaces: self.namespaces.state().into_iter().map(|ns| (ns.name_any(), ns)).collect(),
            secrets: keyed(&self.secrets),
            config_maps: keyed(&self.config_maps),
            ingresses: keyed(&self.ingresses),
            unreadable_secrets: BTreeSet::new(),
            ..Snapshot::default()
        };
        add_ingress_routes(&mut snapshot);
        if let Some(gateway) = &self.gateway {
            snapshot.gateways = keyed(&gateway.gateways);
            snapshot.http_routes = keyed(&gateway.http_routes);
            snapshot.tls_routes = gateway.tls_routes.as_ref().map(keyed).unwrap_or_default();
            add_gateway_routes(&mut snapshot, &gateway.class);
        }
        snapshot
    }
}

impl Stores {
    /// What the Gateway API step reports over the stores' objects now (for status): the step alone, over only
    /// the objects it reads.
    pub fn gateway_report(&self) -> Arc<GatewayReport> {
        let Some(gateway) = &self.gateway else { return Arc::default() };
        let mut snapshot = Snapshot {
            services: kept(&self.services),
            namespaces: self.namespaces.state().into_iter().map(|ns| (ns.name_any(), ns)).collect(),
            secrets: keyed(&self.secrets),
            gateways: keyed(&gateway.gateways),
            http_routes: keyed(&gateway.http_routes),
            tls_routes: gateway.tls_routes.as_ref().map(keyed).unwrap_or_default(),
            ..Snapshot::default()
        };
        add_gateway_routes(&mut snapshot, &gateway.class);
        snapshot.gateway_report
    }
}

fn keyed<K: Resource<DynamicType = ()> + Clone>(store: &Store<K>) -> Objects<ObjectKey, K> {
    store.state().into_iter().map(|object| (object_key(object.as_ref()), object)).collect()
}

/// What a store of `Kept` parts holds, shared.
fn kept<K, T>(store: &Store<Kept<K, T>>) -> Objects<ObjectKey, T>
where
    K: Resource<DynamicType = ()>,
{
    store.state().into_iter().map(|kept| (kept.key.clone(), kept.object.clone())).collect()
}

fn object_key<K: Resource>(object: &K) -> ObjectKey {
    ObjectKey::new(object.namespace().unwrap_or_default(), object.name_any())
}

/// The route store's fingerprint of what matters to the table: everything but status (status writes, ours and
/// other routers', must not cause rebuilds).
pub fn route_relevance(route: &Route) -> String {
    let meta = route.meta();
    format!("{:?}|{:?}|{:?}|{:?}", meta.uid, meta.labels, meta.annotations, route.spec)
}

/// A Gateway API object's fingerprint of what matters to the table: everything but status.
pub fn spec_relevance<K: Resource + std::fmt::Debug, S: std::fmt::Debug>(object: &K, spec: &S) -> String {
    let meta = object.meta();
    format!("{:?}|{:?}|{:?}|{:?}|{:?}", meta.uid, meta.generation, meta.labels, meta.annotations, spec)
}

pub fn gateway_relevance(gateway: &Gateway) -> String {
    spec_relevance(gateway, &gateway.spec)
}

pub fn http_route_relevance(route: &HTTPRoute) -> String {
    spec_relevance(route, &route.spec)
}

pub fn tls_route_relevance(route: &TLSRoute) -> String {
    spec_relevance(route, &route.spec)
}

/// A ConfigMap's fingerprint of what matters to the table: its data, hashed (ConfigMaps can be large, and every
/// one is watched). Updates of anything else, such as the leader-election annotations some controllers renew
/// every few seconds, cause no rebuild.
pub fn config_map_relevance(config_map: &ConfigMap) -> String {
    use sha2::{Digest as _, Sha256};
    let mut hash = Sha256::new();
    hash.update(config_map.metadata.uid.as_deref().unwrap_or_default());
    let text = config_map.data.iter().flatten().map(|(key, value)| (key, value.as_bytes()));
    let binary = config_map.binary_data.iter().flatten().map(|(key, value)| (key, value.0.as_slice()));
    for (kind, (key, value)) in text.map(|entry| (0u8, entry)).chain(binary.map(|entry| (1u8, entry))) {
        // Lengths first, so that no two different maps hash the same bytes.
        hash.update([kind]);
        hash.update((key.len() as u64).to_be_bytes());
        hash.update(key.as_bytes());
        hash.update((value.len() as u64).to_be_bytes());
        hash.update(value);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_map_changes_only_with_its_data() {
        let with = |data: &[(&str, &str)], annotation: &str| {
            let mut config_map = ConfigMap::default();
            config_map.metadata.annotations = Some([("leader".to_string(), annotation.to_string())].into());
            config_map.data = Some(data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
            config_map_relevance(&config_map)
        };
        let base = with(&[("ca-bundle.pem", "one")], "a");
        assert_eq!(base, with(&[("ca-bundle.pem", "one")], "b"), "a renewed annotation");
        assert_ne!(base, with(&[("ca-bundle.pem", "two")], "a"));
        assert_ne!(base, with(&[("ca-bundle.pem", "one"), ("x", "")], "a"));
        assert_ne!(with(&[("ab", "c")], "a"), with(&[("a", "bc")], "a"));
    }
}
