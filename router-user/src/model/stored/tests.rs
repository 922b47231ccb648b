//! The conversions keep what the readers read and drop what no reader could use.

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;
use crate::model::AddressFamily;

fn slice(yaml: &str) -> StoredSlice {
    let slice: EndpointSlice = serde_saphyr::from_str(yaml).expect("test slice");
    slice.into()
}

fn ips(set: &EndpointSet) -> Vec<String> {
    set.addresses.iter().map(|address| address.ip.to_string()).collect()
}

#[test]
fn a_slice_keeps_tcp_ports_and_addresses_of_its_family() {
    let kept = slice(
        "metadata: {name: a, labels: {kubernetes.io/service-name: web, other: x}}\naddressType: IPv4\n\
         ports: [{name: http, port: 80}, {name: dns, port: 53, protocol: UDP}, {name: big, port: 70000},\n\
         {port: 81, protocol: TCP, appProtocol: kubernetes.io/h2c}, {name: none}]\n\
         endpoints:\n\
         - {addresses: [10.0.0.1, \"2001:db8::1\", bad], conditions: {ready: false}, nodeName: n1,\n\
            targetRef: {kind: Pod, name: web-1}}\n\
         - {addresses: [10.0.0.2], targetRef: {kind: Node, name: n2}}\n",
    );
    assert_eq!(kept.service(), Some("web"));
    let ports: Vec<(&str, u16, bool)> = kept.endpoints.ports.iter().map(|p| (&*p.name, p.number, p.h2c)).collect();
    assert_eq!(ports, [("http", 80, false), ("", 81, true)]);
    assert_eq!(ips(&kept.endpoints), ["10.0.0.1", "10.0.0.2"]);
    let first = &kept.endpoints.addresses[0];
    assert_eq!((first.ready, first.pod.as_deref(), first.node.as_deref()), (false, Some("web-1"), Some("n1")));
    let second = &kept.endpoints.addresses[1];
    assert_eq!((second.ready, second.pod.as_deref()), (true, None), "absent: ready; only a Pod is a pod");
}

#[test]
fn a_slice_of_no_usable_family_is_kept_without_addresses() {
    let kept = slice(
        "metadata: {name: a, labels: {kubernetes.io/service-name: web}}\naddressType: FQDN\n\
         ports: [{port: 80}]\nendpoints: [{addresses: [example.com]}]\n",
    );
    assert_eq!(kept.service(), Some("web"), "it still counts as a slice of its Service");
    assert!(kept.endpoints.addresses.is_empty());
}

#[test]
fn core_endpoints_keep_ready_addresses_of_each_subset() {
    let endpoints: Endpoints = serde_saphyr::from_str(
        "metadata: {name: web}\nsubsets:\n\
         - addresses: [{ip: 10.0.0.1, nodeName: n1, targetRef: {kind: Pod, name: web-1}}, {ip: nonsense}]\n  \
           notReadyAddresses: [{ip: 10.0.0.9}]\n  ports: [{name: http, port: 80}, {port: 53, protocol: UDP}]\n\
         - addresses: [{ip: \"2001:db8::2\"}]\n  ports: [{port: 8080, appProtocol: h2c}]\n",
    )
    .expect("test endpoints");
    let kept = StoredEndpoints::from(endpoints);
    assert_eq!(kept.subsets.len(), 2);
    assert_eq!(ips(&kept.subsets[0]), ["10.0.0.1"]);
    assert_eq!(kept.subsets[0].ports.len(), 1);
    let first = &kept.subsets[0].addresses[0];
    assert_eq!((first.ready, first.pod.as_deref(), first.node.as_deref()), (true, Some("web-1"), Some("n1")));
    assert_eq!(ips(&kept.subsets[1]), ["2001:db8::2"]);
    assert!(kept.subsets[1].ports[0].h2c);
}

#[test]
fn a_service_keeps_its_ports_and_families() {
    let service: Service = serde_saphyr::from_str(
        "metadata: {name: web}\nspec:\n  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080},\n    \
         {port: 81, targetPort: web, protocol: UDP}, {port: 82}]\n  healthCheckNodePort: 31000\n  \
         ipFamilies: [IPv6, IPvX]\n",
    )
    .expect("test service");
    let kept = StoredService::from(service);
    let ports: Vec<(i32, Option<i32>, bool, IntOrString)> =
        kept.ports.iter().map(|p| (p.port, p.node_port, p.tcp, p.route_target_port())).collect();
    assert_eq!(
        ports,
        [
            (80, Some(30080), true, IntOrString::String("http".into())),
            (81, None, false, IntOrString::String("web".into())),
            (82, None, true, IntOrString::Int(82)),
        ]
    );
    assert_eq!(kept.health_check_node_port, Some(31000));
    assert_eq!(kept.ip_families.as_deref(), Some(&[AddressFamily::V6][..]));
    assert_eq!(StoredService::from(Service::default()).ip_families, None);
}
