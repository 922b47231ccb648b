//! `discovery.k8s.io/v1` EndpointSlice: a Service's pods (address, readiness, the pod it is) with the ports they
//! listen on. `addressType` follows the first endpoint's address family.

use std::fmt::Write as _;
use std::net::IpAddr;

use crate::document::Manifest;
use crate::yaml::scalar;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointSlice {
    pub namespace: String,
    pub name: String,
    /// The Service it belongs to (label `kubernetes.io/service-name`).
    pub service: String,
    pub ports: Vec<EndpointPort>,
    pub endpoints: Vec<Endpoint>,
}

/// One entry of `ports` (protocol TCP).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointPort {
    pub name: String,
    pub port: u16,
    pub app_protocol: Option<String>,
}

/// One entry of `endpoints`: one address, its readiness, and the pod (`targetRef`, in the slice's namespace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub address: IpAddr,
    pub ready: bool,
    pub pod: String,
}

impl EndpointSlice {
    /// A slice of `service` with the one port `http` (`port`) and no endpoints yet.
    pub fn http(namespace: impl Into<String>, name: impl Into<String>, service: impl Into<String>, port: u16) -> Self {
        EndpointSlice {
            namespace: namespace.into(),
            name: name.into(),
            service: service.into(),
            ports: vec![EndpointPort { name: "http".into(), port, app_protocol: None }],
            endpoints: Vec::new(),
        }
    }

    /// With `appProtocol` on every port.
    pub fn with_app_protocol(mut self, app_protocol: &str) -> Self {
        for port in &mut self.ports {
            port.app_protocol = Some(app_protocol.into());
        }
        self
    }

    /// With one more endpoint: `address`, ready or not, for pod `pod`.
    pub fn with_endpoint(mut self, address: impl Into<IpAddr>, ready: bool, pod: impl Into<String>) -> Self {
        self.endpoints.push(Endpoint { address: address.into(), ready, pod: pod.into() });
        self
    }

    fn address_type(&self) -> &'static str {
        match self.endpoints.first().map(|endpoint| endpoint.address) {
            Some(IpAddr::V6(_)) => "IPv6",
            _ => "IPv4",
        }
    }
}

impl Manifest for EndpointSlice {
    fn write_yaml(&self, out: &mut String) {
        let namespace = scalar(&self.namespace);
        let _ = write!(
            out,
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {}\n  namespace: {namespace}\n  \
             labels:\n    kubernetes.io/service-name: {}\naddressType: {}\nports:\n",
            scalar(&self.name),
            scalar(&self.service),
            self.address_type()
        );
        for port in &self.ports {
            let _ = write!(out, "- name: {}\n  port: {}\n  protocol: TCP\n", scalar(&port.name), port.port);
            if let Some(app_protocol) = &port.app_protocol {
                let _ = writeln!(out, "  appProtocol: {}", scalar(app_protocol));
            }
        }
        if self.endpoints.is_empty() {
            out.push_str("endpoints: []\n");
        } else {
            out.push_str("endpoints:\n");
        }
        for endpoint in &self.endpoints {
            let _ = write!(
                out,
                "- addresses:\n  - {}\n  conditions:\n    ready: {}\n  targetRef:\n    kind: Pod\n    name: {}\n    \
                 namespace: {namespace}\n",
                scalar(&endpoint.address.to_string()),
                endpoint.ready,
                scalar(&endpoint.pod),
            );
        }
        out.push_str("---\n");
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn a_slice_lists_its_ports_and_endpoints() {
        let yaml = EndpointSlice::http("bench", "r1-1", "r1", 8080)
            .with_endpoint(Ipv4Addr::new(127, 0, 0, 11), true, "bench-pod-0")
            .with_endpoint(Ipv4Addr::new(127, 0, 0, 12), false, "bench-pod-1")
            .to_yaml();
        assert_eq!(
            yaml,
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: r1-1\n  namespace: bench\n  \
             labels:\n    kubernetes.io/service-name: r1\naddressType: IPv4\nports:\n- name: http\n  port: 8080\n  \
             protocol: TCP\nendpoints:\n\
             - addresses:\n  - \"127.0.0.11\"\n  conditions:\n    ready: true\n  targetRef:\n    kind: Pod\n    \
             name: bench-pod-0\n    namespace: bench\n\
             - addresses:\n  - \"127.0.0.12\"\n  conditions:\n    ready: false\n  targetRef:\n    kind: Pod\n    \
             name: bench-pod-1\n    namespace: bench\n---\n"
        );
    }

    #[test]
    fn address_type_follows_the_endpoints_and_app_protocol_is_on_the_port() {
        let v6 = EndpointSlice::http("ns", "s-0", "s", 80).with_endpoint(Ipv6Addr::LOCALHOST, true, "p").to_yaml();
        assert!(v6.contains("addressType: IPv6\n") && v6.contains("  - \"::1\"\n"), "{v6}");
        let empty = EndpointSlice::http("ns", "s-0", "s", 80).with_app_protocol("h2c").to_yaml();
        assert!(empty.contains("  protocol: TCP\n  appProtocol: h2c\nendpoints: []\n"), "{empty}");
    }
}
