//! Spare room given back after decoding. Decoding from JSON text cannot know a list's length before reading it,
//! so a list grows as it fills and keeps the room of its last growth: an EndpointSlice of one endpoint holds room
//! for four (1.4 KB), at 100,000 routes 100 MB for nothing. The lists of the objects there are many of (one or
//! more per route) are shrunk to their length; the others are left as they are.

use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;

use crate::model::gateway::{Gateway, HTTPRoute, TLSRoute};
use crate::model::Route;

/// An object whose lists can give back spare room.
pub(super) trait ShrinkLists {
    fn shrink_lists(&mut self) {}
}

impl ShrinkLists for EndpointSlice {
    fn shrink_lists(&mut self) {
        self.endpoints.shrink_to_fit();
        for endpoint in &mut self.endpoints {
            endpoint.addresses.shrink_to_fit();
        }
        shrink(&mut self.ports);
    }
}

impl ShrinkLists for Endpoints {
    fn shrink_lists(&mut self) {
        shrink(&mut self.subsets);
        for subset in self.subsets.iter_mut().flatten() {
            shrink(&mut subset.addresses);
            shrink(&mut subset.not_ready_addresses);
            shrink(&mut subset.ports);
        }
    }
}

impl ShrinkLists for Service {
    fn shrink_lists(&mut self) {
        if let Some(spec) = self.spec.as_mut() {
            shrink(&mut spec.ports);
            shrink(&mut spec.cluster_ips);
            shrink(&mut spec.ip_families);
        }
    }
}

impl ShrinkLists for Route {
    fn shrink_lists(&mut self) {
        self.spec.alternate_backends.shrink_to_fit();
    }
}

impl ShrinkLists for Secret {}
impl ShrinkLists for ConfigMap {}
impl ShrinkLists for Namespace {}
impl ShrinkLists for Ingress {}
impl ShrinkLists for Gateway {}
impl ShrinkLists for HTTPRoute {}
impl ShrinkLists for TLSRoute {}

fn shrink<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list.as_mut() {
        list.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_slice_decoded_from_json_text_keeps_no_spare_room() {
        let text = r#"{"addressType":"IPv4","metadata":{"name":"web"},"endpoints":[{"addresses":["10.0.0.1"]}],
                      "ports":[{"port":8080}]}"#;
        let mut slice: EndpointSlice = serde_json::from_str(text).expect("a slice");
        assert!(
            slice.endpoints.capacity() > slice.endpoints.len(),
            "the decoder leaves room (else this tests nothing)"
        );
        slice.shrink_lists();
        assert_eq!(slice.endpoints.capacity(), 1);
        assert_eq!(slice.endpoints[0].addresses.capacity(), 1);
        assert_eq!(slice.ports.as_ref().map(Vec::capacity), Some(1));
    }
}
