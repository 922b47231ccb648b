//! The router's own Service as this node sees it: its http/https nodePorts, its
//! healthCheckNodePort, and its ready endpoints on this node. Derived from the whole
//! [`Snapshot`] (either source), so it is recomputed, never patched, on each update.
//!
//! Rules (facts of kube-proxy's `externalTrafficPolicy: Local` handling that matter here):
//! - ports: the Service's TCP ports named `http`/`https`, or numbered 80/443, that have a nodePort;
//! - endpoints: from the EndpointSlices labelled `kubernetes.io/service-name: <name>` in the
//!   Service's namespace (core `Endpoints` when there is no slice); ready (an absent condition
//!   means ready); on this node (`nodeName == NODE_NAME`; an endpoint without a nodeName is not
//!   local); the endpoint port is the slice port with the Service port's name;
//! - families: the Service's `ipFamilies`, or when absent the families of its endpoint addresses
//!   (IPv4 when it has none);
//! - the local endpoint count (`localEndpoints` of the load-balancer probe's answer) is the largest
//!   number of distinct local addresses of one family (a dual-stack pod counts once).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use super::address_family::AddressFamily;
use super::object_key::ObjectKey;
use super::snapshot::Snapshot;
use super::stored::{EndpointSet, StoredService, StoredServicePort, StoredSlice};

/// An address family of the Service.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn of(ip: &IpAddr) -> Family {
        if ip.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }
}

/// One of the router Service's nodePorts and where it goes on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePortSpec {
    /// The Service port's name (`http`, `https`, or empty).
    pub name: String,
    pub node_port: u16,
    /// Ready local endpoints (address and endpoint port), every family.
    pub endpoints: BTreeSet<SocketAddr>,
}

/// The router's own Service as seen from this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalService {
    pub service: ObjectKey,
    /// The Service is in the snapshot (when not, everything below is empty).
    pub found: bool,
    pub families: BTreeSet<Family>,
    pub node_ports: Vec<NodePortSpec>,
    pub health_check_node_port: Option<u16>,
    /// Distinct ready local endpoint addresses, every port and family.
    pub local_addresses: BTreeSet<IpAddr>,
}

impl LocalService {
    /// The load-balancer probe's `localEndpoints`: distinct local addresses of the best-served family.
    pub fn local_endpoint_count(&self) -> usize {
        let v4 = self.local_addresses.iter().filter(|ip| ip.is_ipv4()).count();
        v4.max(self.local_addresses.len() - v4)
    }

    /// Derives the view of `service` for node `node_name` from `snapshot`.
    pub fn derive(snapshot: &Snapshot, service: &ObjectKey, node_name: &str) -> LocalService {
        let mut local = LocalService {
            service: service.clone(),
            found: false,
            families: BTreeSet::new(),
            node_ports: Vec::new(),
            health_check_node_port: None,
            local_addresses: BTreeSet::new(),
        };
        let Some(svc) = snapshot.services.get(service) else {
            return local;
        };
        local.found = true;
        local.health_check_node_port =
            svc.health_check_node_port.and_then(|p| u16::try_from(p).ok()).filter(|&p| p != 0);
        let endpoints = Endpoints::collect(snapshot, service);
        for port in router_ports(svc) {
            let Some(node_port) = port.node_port.and_then(|p| u16::try_from(p).ok()).filter(|&p| p != 0) else {
                continue;
            };
            let name = port.name.clone().unwrap_or_default();
            let local_endpoints: BTreeSet<SocketAddr> = endpoints
                .all
                .iter()
                .filter(|e| e.ready && e.node.as_deref() == Some(node_name) && e.port_name == name)
                .map(|e| e.addr)
                .collect();
            local.local_addresses.extend(local_endpoints.iter().map(SocketAddr::ip));
            local.node_ports.push(NodePortSpec { name, node_port, endpoints: local_endpoints });
        }
        local.families = match &svc.ip_families {
            Some(families) => families
                .iter()
                .map(|family| match family {
                    AddressFamily::V4 => Family::V4,
                    AddressFamily::V6 => Family::V6,
                })
                .collect(),
            None => endpoints.all.iter().map(|e| Family::of(&e.addr.ip())).collect(),
        };
        if local.families.is_empty() {
            local.families.insert(Family::V4);
        }
        local
    }
}

/// The Service's TCP ports that carry http or https.
fn router_ports(svc: &StoredService) -> impl Iterator<Item = &StoredServicePort> {
    svc.ports.iter().filter(|port| {
        let named = matches!(port.name.as_deref(), Some("http" | "https"));
        port.tcp && (named || port.port == 80 || port.port == 443)
    })
}

/// One endpoint address for one port of the Service.
struct EndpointPort {
    addr: SocketAddr,
    port_name: String,
    node: Option<String>,
    ready: bool,
}

/// Every endpoint (ready or not, any node) of one Service.
struct Endpoints {
    all: Vec<EndpointPort>,
}

impl Endpoints {
    fn collect(snapshot: &Snapshot, service: &ObjectKey) -> Endpoints {
        let slices: Vec<&StoredSlice> = snapshot
            .endpoint_slices
            .iter()
            .filter(|(key, slice)| key.namespace == service.namespace && slice.service() == Some(&service.name))
            .map(|(_, slice)| &**slice)
            .collect();
        let mut all = Vec::new();
        if slices.is_empty() {
            let core = snapshot.endpoints.get(service);
            core.into_iter().flat_map(|endpoints| endpoints.subsets.iter()).for_each(|set| Self::add(set, &mut all));
        }
        slices.into_iter().for_each(|slice| Self::add(&slice.endpoints, &mut all));
        Endpoints { all }
    }

    /// Every address of `set` on each of its ports.
    fn add(set: &EndpointSet, all: &mut Vec<EndpointPort>) {
        for port in set.ports.iter() {
            for address in set.addresses.iter() {
                all.push(EndpointPort {
                    addr: SocketAddr::new(address.ip, port.number),
                    port_name: port.name.to_string(),
                    node: address.node.as_deref().map(str::to_owned),
                    ready: address.ready,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::api::discovery::v1::EndpointSlice;

    use super::*;

    fn snapshot(yaml: &str) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for doc in yaml.split("\n---\n") {
            let value: serde_json::Value = serde_saphyr::from_str(doc).expect("yaml");
            let name = value["metadata"]["name"].as_str().expect("name").to_owned();
            let namespace = value["metadata"]["namespace"].as_str().expect("namespace").to_owned();
            let key = ObjectKey::new(namespace, name);
            match value["kind"].as_str() {
                Some("Service") => {
                    let service: Service = serde_json::from_value(value).expect("service");
                    snapshot.services.insert(key, Arc::new(service.into()));
                }
                Some("EndpointSlice") => {
                    let slice: EndpointSlice = serde_json::from_value(value).expect("slice");
                    snapshot.endpoint_slices.insert(key, Arc::new(slice.into()));
                }
                Some("Endpoints") => {
                    let endpoints: k8s_openapi::api::core::v1::Endpoints =
                        serde_json::from_value(value).expect("endpoints");
                    snapshot.endpoints.insert(key, Arc::new(endpoints.into()));
                }
                other => panic!("unexpected kind {other:?}"),
            }
        }
        snapshot
    }

    const SERVICE: &str = "apiVersion: v1
kind: Service
metadata: {name: router-default, namespace: openshift-ingress}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  healthCheckNodePort: 32000
  ports:
  - {name: http, port: 80, targetPort: http, nodePort: 30080, protocol: TCP}
  - {name: https, port: 443, targetPort: https, nodePort: 30443, protocol: TCP}
  - {name: metrics, port: 1936, nodePort: 31936, protocol: TCP}";

    const SLICE: &str = "apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: router-default-abc
  namespace: openshift-ingress
  labels: {kubernetes.io/service-name: router-default}
addressType: IPv4
ports: [{name: http, port: 80, protocol: TCP}, {name: https, port: 443, protocol: TCP}]
endpoints:
- {addresses: [10.0.0.2], nodeName: node-a}
- {addresses: [10.0.0.3], nodeName: node-b}
- {addresses: [10.0.0.4], nodeName: node-a, conditions: {ready: false}}";

    fn key() -> ObjectKey {
        ObjectKey::new("openshift-ingress", "router-default")
    }

    #[test]
    fn local_ready_endpoints_per_node_port() {
        let local = LocalService::derive(&snapshot(&format!("{SERVICE}\n---\n{SLICE}")), &key(), "node-a");
        assert!(local.found);
        assert_eq!(local.health_check_node_port, Some(32000));
        let ports: Vec<(&str, u16, Vec<String>)> = local
            .node_ports
            .iter()
            .map(|p| (p.name.as_str(), p.node_port, p.endpoints.iter().map(ToString::to_string).collect()))
            .collect();
        assert_eq!(
            ports,
            vec![("http", 30080, vec!["10.0.0.2:80".to_owned()]), ("https", 30443, vec!["10.0.0.2:443".to_owned()])]
        );
        assert_eq!(local.local_endpoint_count(), 1);
        assert_eq!(local.families, BTreeSet::from([Family::V4]));
    }

    #[test]
    fn another_node_has_no_local_endpoint() {
        let local = LocalService::derive(&snapshot(&format!("{SERVICE}\n---\n{SLICE}")), &key(), "node-c");
        assert_eq!(local.local_endpoint_count(), 0);
        assert!(local.node_ports.iter().all(|p| p.endpoints.is_empty()));
        assert_eq!(local.node_ports.len(), 2, "nodePorts stay known, with no endpoint");
    }

    #[test]
    fn missing_service_is_not_found() {
        let local = LocalService::derive(&snapshot(SLICE), &key(), "node-a");
        assert!(!local.found);
        assert!(local.node_ports.is_empty());
        assert_eq!(local.health_check_node_port, None);
    }

    #[test]
    fn core_endpoints_when_there_is_no_slice() {
        let endpoints = "apiVersion: v1
kind: Endpoints
metadata: {name: router-default, namespace: openshift-ingress}
subsets:
- addresses: [{ip: 10.0.0.2, nodeName: node-a}, {ip: 10.0.0.3, nodeName: node-b}]
  ports: [{name: http, port: 80}]";
        let local = LocalService::derive(&snapshot(&format!("{SERVICE}\n---\n{endpoints}")), &key(), "node-a");
        assert_eq!(local.node_ports[0].endpoints.len(), 1);
        assert!(local.node_ports[1].endpoints.is_empty(), "https has no endpoint port");
    }

    #[test]
    fn dual_stack_pod_counts_once() {
        let v6 = SLICE
            .replace("router-default-abc", "router-default-v6")
            .replace("IPv4", "IPv6")
            .replace("10.0.0.", "fd00::");
        let svc = SERVICE.replace("  type: LoadBalancer", "  type: LoadBalancer\n  ipFamilies: [IPv4, IPv6]");
        let local = LocalService::derive(&snapshot(&format!("{svc}\n---\n{SLICE}\n---\n{v6}")), &key(), "node-a");
        assert_eq!(local.local_addresses.len(), 2);
        assert_eq!(local.local_endpoint_count(), 1);
        assert_eq!(local.families, BTreeSet::from([Family::V4, Family::V6]));
    }
}
