//! Decoding as the API server sends objects: `null` where a list is empty, and one object among many that does
//! not decode.

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::core::{ObjectList, WatchEvent};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Decoded, Undecodable};
use crate::model::Route;
use crate::source::kube::EndpointSliceV1beta1;

fn decode<K: DeserializeOwned>(value: serde_json::Value) -> K {
    let text = value.to_string();
    match serde_json::from_str::<Decoded<K>>(&text).expect("well-formed JSON") {
        Decoded::Object(object) => object,
        Decoded::Undecodable(undecodable) => panic!("{text} did not decode: {}", undecodable.error),
    }
}

#[test]
fn null_lists_read_as_empty_lists_in_every_kind() {
    let metadata = json!({"name": "x", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}});
    let slice: EndpointSliceV1beta1 = decode(json!({
        "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice", "metadata": metadata,
        "addressType": "IPv4", "endpoints": null, "ports": null
    }));
    assert!(slice.endpoints.is_empty() && slice.ports.is_none());
    let slice: EndpointSliceV1beta1 = decode(json!({
        "metadata": metadata, "addressType": null,
        "endpoints": [{"addresses": null, "conditions": {"ready": true}}]
    }));
    assert_eq!((slice.address_type.as_str(), slice.endpoints[0].addresses.len()), ("", 0));

    let slice: EndpointSlice = decode(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": metadata,
        "addressType": "IPv4", "endpoints": null, "ports": null
    }));
    assert!(slice.endpoints.is_empty());
    let slice: EndpointSlice =
        decode(json!({"metadata": metadata, "addressType": "IPv4", "endpoints": [{"addresses": null}]}));
    assert!(slice.endpoints[0].addresses.is_empty());

    let endpoints: Endpoints =
        decode(json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata, "subsets": null}));
    assert!(endpoints.subsets.is_none());
    let endpoints: Endpoints = decode(
        json!({"metadata": metadata, "subsets": [{"addresses": null, "notReadyAddresses": null, "ports": null}]}),
    );
    assert!(endpoints.subsets.as_deref().is_some_and(|subsets| subsets[0].addresses.is_none()));

    let route: Route = decode(json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": metadata,
        "spec": {
            "host": "a.example.com", "to": {"kind": null, "name": "web"}, "alternateBackends": null,
            "httpHeaders": {"actions": {"request": null, "response": null}}
        },
        "status": {"ingress": [{"routerName": "default", "conditions": null}]}
    }));
    assert!(route.spec.alternate_backends.is_empty());
    assert_eq!(route.spec.to.kind, "");
    let actions = route.spec.http_headers.and_then(|headers| headers.actions).expect("actions");
    assert!(actions.request.is_empty() && actions.response.is_empty());
    let status = route.status.expect("status");
    assert!(status.ingress[0].conditions.is_empty());
    let route: Route =
        decode(json!({"metadata": metadata, "spec": {"to": {"name": "web"}}, "status": {"ingress": null}}));
    assert!(route.status.is_some_and(|status| status.ingress.is_empty()));

    let ingress: Ingress = decode(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata,
        "spec": {"rules": [{"host": "a.example.com", "http": {"paths": null}}], "tls": null},
        "status": {"loadBalancer": {"ingress": null}}
    }));
    let spec = ingress.spec.expect("spec");
    assert!(spec.tls.is_none());
    let rules = spec.rules.expect("rules");
    assert!(rules[0].http.as_ref().is_some_and(|http| http.paths.is_empty()));
}

/// A Route the API server accepts (the CRD keeps unknown spec fields) but the router cannot read.
fn unreadable_route(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "42", "uid": "u-1"},
        "spec": {"to": {"name": "web"}, "httpHeaders": {"actions": {"request": [{"name": "X", "action": "Set"}]}}}
    })
}

fn route(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "41"},
        "spec": {"host": format!("{name}.example.com"), "to": {"kind": "Service", "name": "web"}}
    })
}

#[test]
fn one_object_that_does_not_decode_leaves_the_rest_of_its_list() {
    let list = json!({
        "apiVersion": "route.openshift.io/v1", "kind": "RouteList", "metadata": {"resourceVersion": "43"},
        "items": [route("a"), unreadable_route("b"), route("c")]
    });
    assert!(serde_json::from_str::<ObjectList<Route>>(&list.to_string()).is_err(), "one object fails a plain list");
    let list: ObjectList<Decoded<Route>> = serde_json::from_slice(list.to_string().as_bytes()).expect("list");
    let names: Vec<String> = list
        .items
        .iter()
        .map(|item| match item {
            Decoded::Object(route) => format!("ok {}", route.metadata.name.as_deref().unwrap_or("")),
            Decoded::Undecodable(undecodable) => {
                let Undecodable { metadata, error } = undecodable.as_ref();
                assert_eq!(metadata.resource_version.as_deref(), Some("42"));
                assert_eq!(metadata.namespace.as_deref(), Some("ns"));
                assert!(error.contains("invalid type"), "{error}");
                format!("skipped {}", metadata.name.as_deref().unwrap_or(""))
            }
        })
        .collect();
    assert_eq!(names, ["ok a", "skipped b", "ok c"]);
}

#[test]
fn a_watch_event_with_an_object_that_does_not_decode_still_decodes() {
    // The API server sends `type` first; the other order goes through serde's buffering.
    let texts = [
        format!(r#"{{"type":"MODIFIED","object":{}}}"#, unreadable_route("b")),
        format!(r#"{{"object":{},"type":"MODIFIED"}}"#, unreadable_route("b")),
    ];
    for text in texts {
        match serde_json::from_str::<WatchEvent<Decoded<Route>>>(&text).expect("watch event") {
            WatchEvent::Modified(Decoded::Undecodable(undecodable)) => {
                assert_eq!(undecodable.metadata.name.as_deref(), Some("b"));
                assert_eq!(undecodable.metadata.uid.as_deref(), Some("u-1"));
            }
            other => panic!("{other:?}"),
        }
    }
    let text = format!(r#"{{"type":"ADDED","object":{}}}"#, route("a"));
    let event = serde_json::from_str::<WatchEvent<Decoded<Route>>>(&text).expect("watch event");
    assert!(
        matches!(event, WatchEvent::Added(Decoded::Object(route)) if route.spec.host.as_deref() == Some("a.example.com"))
    );
}
