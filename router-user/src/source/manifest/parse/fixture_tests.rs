//! Tests of manifest parsing against fixtures shaped like `oc get -o yaml` output.

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
    assert_eq!(service.ports[0].port, 8443);
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
    assert_eq!(slice.service(), Some("frontend"));
    let addresses = &slice.endpoints.addresses;
    let ready: Vec<(String, bool)> = addresses.iter().map(|a| (a.ip.to_string(), a.ready)).collect();
    let want = [("10.128.2.15", true), ("10.128.3.22", false), ("10.128.4.9", true), ("10.128.5.3", true)];
    assert_eq!(ready, want.map(|(ip, ready)| (ip.to_string(), ready)), "an absent condition means ready");
    assert_eq!(addresses[0].pod.as_deref(), Some("frontend-7d9f8b6c5-abcde"));
    assert_eq!((addresses[1].pod.as_deref(), addresses[1].node.as_deref()), (None, Some("worker-1")));
    let port = &slice.endpoints.ports[0];
    assert_eq!((&*port.name, port.number, port.h2c), ("http", 8080, false));
}

#[test]
fn core_endpoints() {
    let parsed = clean(ENDPOINTS);
    let endpoints = &parsed.objects.endpoints[&key("shop", "frontend")];
    let subset = &endpoints.subsets[0];
    let ips: Vec<String> = subset.addresses.iter().map(|a| a.ip.to_string()).collect();
    assert_eq!(ips, ["10.128.2.15"], "notReadyAddresses are not kept");
    assert_eq!(subset.addresses[0].node.as_deref(), Some("worker-0"));
    assert_eq!(subset.ports[0].number, 8080);
}

#[test]
fn mixed_kinds_comments_empty_documents_and_default_namespace() {
    let parsed = clean(MIXED);
    let objects = &parsed.objects;
    assert!(objects.namespaces.contains_key("shop"));
    assert!(objects.services.contains_key(&key("default", "hello")));
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
