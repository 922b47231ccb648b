//! Service endpoints as the router uses them: ready addresses from EndpointSlices (or core Endpoints when a
//! service has no slices), filtered by the route's `targetPort`, unsafe addresses dropped. The stored slices
//! hold TCP ports only, and only addresses of an `IPv4` or `IPv6` slice's family (`model::StoredSlice`).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::slice_index::SliceIndex;
use crate::model::{EndpointPort, EndpointSet, ObjectKey, Snapshot, StoredSlice};

/// One ready `ip:port` of a service, with the OpenShift server id (`pod:<pod>:<svc>:<port>:<ip>:<port>` or
/// `ept:<svc>:<port>:<ip>:<port>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceEndpoint {
    pub addr: SocketAddr,
    pub id: String,
    /// The port's appProtocol asks for HTTP/2 without TLS.
    pub h2c: bool,
}

/// `(namespace, service name)`, borrowed from the snapshot.
pub type ServiceRef<'a> = (&'a str, &'a str);

/// The endpoints of a snapshot by service, its slices found through the table's `SliceIndex`.
pub struct EndpointIndex<'a> {
    snapshot: &'a Snapshot,
    allow_loopback: bool,
    by_service: &'a SliceIndex,
}

impl<'a> EndpointIndex<'a> {
    /// `by_service` indexes `snapshot`'s slices.
    pub fn new(snapshot: &'a Snapshot, allow_loopback: bool, by_service: &'a SliceIndex) -> Self {
        Self { snapshot, allow_loopback, by_service }
    }

    /// The slices of `namespace/service`, in key order; empty when it has none.
    pub fn slices_of(&self, namespace: &str, service: &str) -> Vec<&'a StoredSlice> {
        let slices = self.by_service.slices_of(namespace, service);
        let slices = slices.filter_map(|key| self.snapshot.endpoint_slices.get(&key)).map(|slice| &**slice);
        slices.filter(|slice| slice.service() == Some(service)).collect()
    }

    /// Ready endpoints of `service`, in a stable order, optionally only those whose port name or number
    /// equals `target_port`.
    pub fn ready(&self, service: &ObjectKey, target_port: Option<&IntOrString>) -> Vec<ServiceEndpoint> {
        let mut found = Vec::new();
        let slices = self.slices_of(&service.namespace, &service.name);
        if slices.is_empty() {
            if let Some(endpoints) = self.snapshot.endpoints.get(service) {
                for set in endpoints.subsets.iter() {
                    self.collect(service, set, target_port, &mut found);
                }
            }
        }
        for slice in slices.iter() {
            self.collect(service, &slice.endpoints, target_port, &mut found);
        }
        let mut seen = HashSet::new();
        found.retain(|e| seen.insert(e.addr));
        found
    }

    /// The ready addresses of `set` on each of its ports `target_port` selects.
    fn collect(
        &self,
        service: &ObjectKey,
        set: &EndpointSet,
        target_port: Option<&IntOrString>,
        out: &mut Vec<ServiceEndpoint>,
    ) {
        for port in set.ports.iter().filter(|port| port_selected(target_port, &port.name, port.number)) {
            for address in set.addresses.iter().filter(|address| address.ready) {
                self.push(service, address.pod.as_deref(), port, address.ip, out);
            }
        }
    }

    fn push(
        &self,
        service: &ObjectKey,
        pod: Option<&str>,
        port: &EndpointPort,
        ip: IpAddr,
        out: &mut Vec<ServiceEndpoint>,
    ) {
        if !is_routable(ip, self.allow_loopback) {
            return;
        }
        let (port_name, number) = (&port.name, port.number);
        let mut id = match pod {
            Some(pod) => format!("pod:{pod}:{}:{port_name}:{ip}:{number}", service.name),
            None => format!("ept:{}:{port_name}:{ip}:{number}", service.name),
        };
        // `format!` leaves room (64 bytes for a 44-byte id); the table keeps every id as long as it serves.
        id.shrink_to_fit();
        out.push(ServiceEndpoint { addr: SocketAddr::new(ip, number), id, h2c: port.h2c });
    }
}

fn port_selected(target_port: Option<&IntOrString>, name: &str, number: u16) -> bool {
    match target_port {
        None => true,
        Some(IntOrString::Int(want)) => *want == i32::from(number),
        // A string target port names the port, or is a number written as a string.
        Some(IntOrString::String(want)) => want == name || *want == number.to_string(),
    }
}

/// The OpenShift router never sends traffic to loopback, link-local, multicast, unspecified or cloud metadata
/// addresses (also in their IPv4-in-IPv6 forms). `allow_loopback` keeps loopback and link-local ones.
pub fn is_routable(ip: IpAddr, allow_loopback: bool) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    let (local, never) = match ip {
        IpAddr::V4(v4) => (
            v4.is_loopback() || v4.is_link_local(),
            v4.is_multicast() || v4.is_unspecified() || v4.is_broadcast() || v4.octets() == [168, 63, 129, 16],
        ),
        IpAddr::V6(v6) => (
            v6.is_loopback() || (v6.segments()[0] & 0xffc0) == 0xfe80,
            v6.is_multicast() || v6.is_unspecified() || v6.segments() == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254],
        ),
    };
    !never && (allow_loopback || !local)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::discovery::v1::EndpointSlice;

    use super::*;

    #[test]
    fn slices_are_found_by_their_service_label_and_namespace() {
        let mut snapshot = Snapshot::default();
        // Slices of services a and b in two namespaces, one of them named after the other service.
        for (namespace, name, service, ip) in [
            ("x", "a-1", "a", "10.0.0.1"),
            ("x", "a-2", "a", "10.0.0.2"),
            ("x", "b-1", "a", "10.0.0.3"),
            ("x", "b-2", "b", "10.0.0.4"),
            ("y", "a-1", "a", "10.0.1.1"),
        ] {
            let yaml = format!(
                "metadata: {{name: {name}, namespace: {namespace}, labels: {{kubernetes.io/service-name: {service}}}}}\n\
                 addressType: IPv4\nports: [{{name: http, port: 80}}]\nendpoints: [{{addresses: [\"{ip}\"]}}]\n"
            );
            let slice: EndpointSlice = serde_saphyr::from_str(&yaml).expect("test slice");
            snapshot.endpoint_slices.insert(ObjectKey::new(namespace, name), Arc::new(slice.into()));
        }
        let slices = SliceIndex::new(&snapshot);
        let index = EndpointIndex::new(&snapshot, false, &slices);
        let services = [("x", "a"), ("x", "b"), ("y", "a"), ("y", "b"), ("z", "a")];
        let lookups = |index: &EndpointIndex<'_>| -> Vec<Vec<String>> {
            let ready = |(ns, name): (&str, &str)| index.ready(&ObjectKey::new(ns, name), None);
            services.map(|service| ready(service).into_iter().map(|e| e.addr.to_string()).collect()).to_vec()
        };
        let scanned = lookups(&index);
        assert_eq!(scanned[0], ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"]);
        assert_eq!(scanned[1], ["10.0.0.4:80"]);
        assert_eq!(scanned[2], ["10.0.1.1:80"]);
        assert!(scanned[3].is_empty() && scanned[4].is_empty());
    }

    #[test]
    fn only_ipv4_and_ipv6_slices_give_endpoints_of_their_family() {
        let mut snapshot = Snapshot::default();
        for (name, address_type, address) in [
            ("v4", "IPv4", "10.0.0.1"),
            ("v4-with-v6", "IPv4", "2001:db8::1"),
            ("v6", "IPv6", "2001:db8::2"),
            ("v6-with-v4", "IPv6", "10.0.0.2"),
            ("fqdn", "FQDN", "10.0.0.3"),
            ("unknown", "IPv5", "10.0.0.4"),
        ] {
            let yaml = format!(
                "metadata: {{name: {name}, namespace: x, labels: {{kubernetes.io/service-name: web}}}}\n\
                 addressType: {address_type}\nports: [{{name: http, port: 80}}]\n\
                 endpoints: [{{addresses: [\"{address}\"]}}]\n"
            );
            let slice: EndpointSlice = serde_saphyr::from_str(&yaml).expect("test slice");
            snapshot.endpoint_slices.insert(ObjectKey::new("x", name), Arc::new(slice.into()));
        }
        let slices = SliceIndex::new(&snapshot);
        let index = EndpointIndex::new(&snapshot, false, &slices);
        let found: Vec<String> =
            index.ready(&ObjectKey::new("x", "web"), None).into_iter().map(|e| e.addr.to_string()).collect();
        assert_eq!(found, ["10.0.0.1:80", "[2001:db8::2]:80"]);
    }

    #[test]
    fn unsafe_addresses_are_dropped_unless_loopback_is_allowed() {
        let cases = [
            ("10.1.2.3", true, true),
            ("127.0.0.1", false, true),
            ("169.254.1.1", false, true),
            ("::1", false, true),
            ("fe80::1", false, true),
            ("::ffff:127.0.0.1", false, true),
            ("224.0.0.1", false, false),
            ("0.0.0.0", false, false),
            ("168.63.129.16", false, false),
            ("fd00:ec2::254", false, false),
            ("::ffff:168.63.129.16", false, false),
            ("2001:db8::1", true, true),
        ];
        for (ip, plain, allowed) in cases {
            let ip: IpAddr = ip.parse().expect("test address");
            assert_eq!(is_routable(ip, false), plain, "{ip} without allow");
            assert_eq!(is_routable(ip, true), allowed, "{ip} with allow");
        }
    }

    #[test]
    fn target_port_matches_name_or_number() {
        let by_name = IntOrString::String("http".into());
        let by_number = IntOrString::Int(8080);
        let number_as_text = IntOrString::String("8080".into());
        assert!(port_selected(None, "x", 1));
        assert!(port_selected(Some(&by_name), "http", 1));
        assert!(!port_selected(Some(&by_name), "https", 8443));
        assert!(port_selected(Some(&by_number), "", 8080));
        assert!(!port_selected(Some(&by_number), "http", 80));
        assert!(port_selected(Some(&number_as_text), "web", 8080));
    }
}
