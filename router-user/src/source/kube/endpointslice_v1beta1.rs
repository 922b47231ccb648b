//! `discovery.k8s.io/v1beta1` EndpointSlices, for API servers older than 1.21 that do not serve v1. Only the
//! fields the router reads; [`EndpointSliceV1beta1::into_v1`] turns one into the v1 type the table uses.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::NamespaceResourceScope;
use serde::{Deserialize, Serialize};

use crate::model::null_as_default;

/// The topology key v1beta1 used for what v1 calls `zone`.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSliceV1beta1 {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, deserialize_with = "null_as_default")]
    pub address_type: String,
    /// `null` from the API server when the slice is empty.
    #[serde(default, deserialize_with = "null_as_default")]
    pub endpoints: Vec<EndpointV1beta1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<EndpointPort>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointV1beta1 {
    #[serde(default, deserialize_with = "null_as_default")]
    pub addresses: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<EndpointConditions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
}

impl EndpointSliceV1beta1 {
    /// The same slice as `discovery.k8s.io/v1`: `topology` becomes `zone` and `deprecatedTopology`.
    pub fn into_v1(self) -> EndpointSlice {
        let endpoints = self
            .endpoints
            .into_iter()
            .map(|endpoint| Endpoint {
                addresses: endpoint.addresses,
                conditions: endpoint.conditions,
                hostname: endpoint.hostname,
                target_ref: endpoint.target_ref,
                zone: endpoint.topology.as_ref().and_then(|t| t.get(ZONE_LABEL).cloned()),
                deprecated_topology: endpoint.topology,
                node_name: endpoint.node_name,
                hints: None,
            })
            .collect();
        EndpointSlice { metadata: self.metadata, address_type: self.address_type, endpoints, ports: self.ports }
    }
}

impl kube::Resource for EndpointSliceV1beta1 {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "EndpointSlice".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        "discovery.k8s.io".into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        "v1beta1".into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        "endpointslices".into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1beta1_slice_converts_with_its_topology_zone() {
        let json = serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1beta1",
            "kind": "EndpointSlice",
            "metadata": {"name": "web-abc", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{
                "addresses": ["10.0.0.5"],
                "conditions": {"ready": false},
                "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "ns"},
                "topology": {"topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "n1"}
            }],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
        });
        let slice: EndpointSliceV1beta1 = serde_json::from_value(json).expect("v1beta1 slice parses");
        let v1 = slice.into_v1();
        assert_eq!(v1.metadata.name.as_deref(), Some("web-abc"));
        assert_eq!(v1.address_type, "IPv4");
        let endpoint = &v1.endpoints[0];
        assert_eq!(endpoint.addresses, vec!["10.0.0.5".to_string()]);
        assert_eq!(endpoint.conditions.as_ref().and_then(|c| c.ready), Some(false));
        assert_eq!(endpoint.zone.as_deref(), Some("z1"));
        assert_eq!(endpoint.target_ref.as_ref().and_then(|t| t.name.as_deref()), Some("web-1"));
        let port = &v1.ports.as_ref().expect("ports")[0];
        assert_eq!((port.name.as_deref(), port.port), (Some("http"), Some(8080)));
    }
}
