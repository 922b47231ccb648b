//! `StoredService`: what the router keeps of a Service.

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::model::AddressFamily;

/// A Service: its ports, and what the router's own Service is read for (`LocalService`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredService {
    /// Every port, in the object's order.
    pub ports: Box<[StoredServicePort]>,
    pub health_check_node_port: Option<i32>,
    /// `spec.ipFamilies` (names of neither family left out); `None` when the field is absent.
    pub ip_families: Option<Box<[AddressFamily]>>,
}

/// One port of a Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredServicePort {
    pub name: Option<String>,
    pub port: i32,
    pub target_port: Option<IntOrString>,
    pub node_port: Option<i32>,
    /// Its protocol is TCP (no protocol means TCP).
    pub tcp: bool,
}

impl StoredServicePort {
    /// The `targetPort` a route to this port gets: the port's name when it has one (endpoint ports carry it),
    /// else its target port, else its number.
    pub fn route_target_port(&self) -> IntOrString {
        match (&self.name, &self.target_port) {
            (Some(name), _) if !name.is_empty() => IntOrString::String(name.clone()),
            (_, Some(target)) => target.clone(),
            _ => IntOrString::Int(self.port),
        }
    }
}

impl From<Service> for StoredService {
    fn from(service: Service) -> Self {
        let Some(spec) = service.spec else { return Self::default() };
        let ports = spec.ports.unwrap_or_default().into_iter().map(|port| StoredServicePort {
            tcp: port.protocol.as_deref().is_none_or(|p| p == "TCP"),
            name: port.name,
            port: port.port,
            target_port: port.target_port,
            node_port: port.node_port,
        });
        let ip_families =
            spec.ip_families.map(|families| families.iter().filter_map(|f| AddressFamily::of(f)).collect());
        Self { ports: ports.collect(), health_check_node_port: spec.health_check_node_port, ip_families }
    }
}
