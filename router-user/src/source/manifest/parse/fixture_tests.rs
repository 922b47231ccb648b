//! Tests of manifest parsing against fixtures shaped like `oc get -o yaml` output.

use k8s_openapi::api::core::v1::EndpointAddress;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::tests::{clean, key};

const ROUTE_EDGE: &str = include_str!("../testdata/route-edge.yaml");
const LIST: &str = include_str!("../testdata/list.yaml");
const ENDPOINT_SLICE: &str = include_str!("../testdata/endpointslice.yaml");
const ENDPOINTS: &str = include_str!("../testdata/endpoints.yaml");
const MIXED: &str = include_str!("../testdata/mixed.yaml");
const INGRESS: &str = include_str!("../testdata/ingress.yaml");

#[test]
fn route_with_every_field_as_oc_prints_it() {
    let parsed = clean(ROUTE_EDGE);
    let route = &parsed.objects.routes[&key("shop", "frontend")];
    assert_eq!(route.metadata.managed_fields, None);
    assert_eq!(route.metadata.resource_version.as_deref(), Some("482913"));
    let annotations = route.metadata.annotations.as_ref().expect("annotations");
    assert_eq!(annotations["haproxy.router.openshift.io/timeout"], "5m");
    let spec = &route.spec;
    assert_eq!(spec.host.as_deref(), Some("frontend-shop.apps.example.com"));
    assert_eq!(spec.path.as_deref(), Some("/store"));
    let to = &spec.to;
    assert_eq!((to.kind.as_str(), to.name.as_str(), to.weight), ("Service", "frontend", Some(90)));
    assert_eq!(spec.alternate_backends.len(), 1);
    assert_eq!(spec.alternate_backends[0].name, "frontend-canary");
    assert_eq!(spec.alternate_backends[0].weight, Some(10));
    let port = spec.port.as_ref().expect("port");
    assert_eq!(port.target_port, IntOrString::String("http".into()));
    let tls = spec.tls.as_ref().expect("tls");
    assert_eq!(tls.termination, "edge");
    assert_eq!(tls.insecure_edge_termination_policy.as_deref(), Some("Redirect"));
    let certificate = tls.certificate.as_deref().expect("certificate");
    assert!(certificate.starts_with("-----BEGIN CERTIFICATE-----\n"));
    let key_pem = tls.key.as_deref().expect("key");
    assert!(key_pem.ends_with("-----END PRIVATE KEY-----"));
    assert!(tls.ca_certificate.is_some());
    assert_eq!(spec.wildcard_policy.as_deref(), Some("None"));
    let status = route.status.as_ref().expect("status");
    assert_eq!(status.ingress.len(), 1);
    let ingress = &status.ingress[0];
    assert_eq!(ingress.router_name.as_deref(), Some("default"));
    let canonical = ingress.router_canonical_hostname.as_deref();
    assert_eq!(canonical, Some("router-default.apps.example.com"));
    assert_eq!(ingress.conditions[0].kind, "Admitted");
    assert_eq!(ingress.conditions[0].status, "True");
}

#[test]
fn kind_list_as_oc_prints_it() {
    let parsed = clean(LIST);
    let route = &parsed.objects.routes[&key("shop", "api")];
    assert_eq!(route.metadata.managed_fields, None);
    let port = route.spec.port.as_ref().expect("port");
    assert_eq!(port.target_port, IntOrString::Int(8443));
    let tls = route.spec.tls.as_ref().expect("tls");
    assert_eq!(tls.termination, "reencrypt");
    let service = &parsed.objects.services[&key("shop", "api")];
    let ports = service.spec.as_ref().and_then(|spec| spec.ports.as_ref()).expect("ports");
    assert_eq!(ports[0].port, 8443);
    // The Deployment is ignored, not an error.
    assert_eq!(parsed.objects.routes.len() + parsed.objects.services.len(), 2);
}

#[test]
fn reencrypt_destination_ca_as_oc_prints_it() {
    let parsed = clean(LIST);
    let tls = parsed.objects.routes[&key("shop", "api")].spec.tls.clone().expect("tls");
    let ca = tls.destination_ca_certificate.expect("destinationCACertificate");
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
}

#[test]
fn endpoint_slice_with_ready_false_and_absent() {
    let parsed = clean(ENDPOINT_SLICE);
    let slice = &parsed.objects.endpoint_slices[&key("shop", "frontend-x7k2p")];
    assert_eq!(slice.metadata.managed_fields, None);
    assert_eq!(slice.address_type, "IPv4");
    let labels = slice.metadata.labels.as_ref().expect("labels");
    assert_eq!(labels["kubernetes.io/service-name"], "frontend");
    let ready: Vec<Option<bool>> =
        slice.endpoints.iter().map(|e| e.conditions.as_ref().and_then(|c| c.ready)).collect();
    assert_eq!(ready, [Some(true), Some(false), None, None]);
    assert!(slice.endpoints[3].conditions.is_none());
    let ports = slice.ports.as_ref().expect("ports");
    assert_eq!((ports[0].name.as_deref(), ports[0].port), (Some("http"), Some(8080)));
}

fn ips(addresses: &Option<Vec<EndpointAddress>>) -> Vec<&str> {
    addresses.iter().flatten().map(|address| address.ip.as_str()).collect()
}

#[test]
fn core_endpoints() {
    let parsed = clean(ENDPOINTS);
    let endpoints = &parsed.objects.endpoints[&key("shop", "frontend")];
    let subset = &endpoints.subsets.as_ref().expect("subsets")[0];
    assert_eq!(ips(&subset.addresses), ["10.128.2.15"]);
    assert_eq!(ips(&subset.not_ready_addresses), ["10.128.3.22"]);
    assert_eq!(subset.ports.as_ref().expect("ports")[0].port, 8080);
}

#[test]
fn mixed_kinds_comments_empty_documents_and_default_namespace() {
    let parsed = clean(MIXED);
    let objects = &parsed.objects;
    assert!(objects.namespaces.contains_key("shop"));
    let hello = &objects.services[&key("default", "hello")];
    assert_eq!(hello.metadata.namespace.as_deref(), Some("default"));
    assert!(objects.routes.contains_key(&key("default", "hello")));
    assert!(objects.secrets.contains_key(&key("shop", "frontend-tls")));
    // The ConfigMap is ignored.
    let kinds = [objects.namespaces.len(), objects.services.len(), objects.routes.len()];
    assert_eq!(kinds.iter().sum::<usize>() + objects.secrets.len(), 4);
}

#[test]
fn ingress_as_kubectl_prints_it() {
    let parsed = clean(INGRESS);
    let objects = &parsed.objects;
    let ingress = &objects.ingresses[&key("shop", "site")];
    assert_eq!(ingress.metadata.managed_fields, None);
    let spec = ingress.spec.as_ref().expect("spec");
    let rules = spec.rules.as_ref().expect("rules");
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[1].http.as_ref().expect("http").paths[2].path_type, "ImplementationSpecific");
    let tls = spec.tls.as_ref().expect("tls");
    assert_eq!(tls[0].secret_name.as_deref(), Some("site-tls"));
    assert!(objects.services.contains_key(&key("shop", "web")));
    assert!(objects.secrets.contains_key(&key("shop", "site-tls")));
    // A file's objects are as read: the routes of the Ingress are added to the merged snapshot.
    assert!(objects.routes.is_empty());
}
