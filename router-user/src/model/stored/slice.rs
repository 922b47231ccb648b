//! `StoredSlice`: what the router keeps of an EndpointSlice.

use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::endpoint_set::{pod_of, EndpointAddress, EndpointPort, EndpointSet};
use crate::model::AddressFamily;

/// The label an EndpointSlice carries naming its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// An EndpointSlice: its Service and its endpoints. A slice whose `addressType` gives no backends (`FQDN`)
/// keeps no addresses, but is kept: it still counts as a slice of its Service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredSlice {
    /// Its `kubernetes.io/service-name` label.
    pub service: Option<Box<str>>,
    pub endpoints: EndpointSet,
}

impl StoredSlice {
    /// The Service it belongs to.
    pub fn service(&self) -> Option<&str> {
        self.service.as_deref()
    }
}

impl From<EndpointSlice> for StoredSlice {
    fn from(slice: EndpointSlice) -> Self {
        let mut labels = slice.metadata.labels.unwrap_or_default();
        let service = labels.remove(SERVICE_NAME_LABEL).map(Into::into);
        let Some(family) = AddressFamily::of(&slice.address_type) else {
            return Self { service, endpoints: EndpointSet::default() };
        };
        let ports = slice.ports.unwrap_or_default().into_iter().filter_map(|port| {
            EndpointPort::usable(
                port.name.as_deref(),
                port.port,
                port.protocol.as_deref(),
                port.app_protocol.as_deref(),
            )
        });
        let mut addresses = Vec::new();
        for endpoint in slice.endpoints {
            // An absent condition means ready.
            let ready = endpoint.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
            let pod = pod_of(endpoint.target_ref.as_ref());
            let node: Option<Box<str>> = endpoint.node_name.map(Into::into);
            for ip in endpoint.addresses.iter().filter_map(|address| family.parse(address)) {
                addresses.push(EndpointAddress { ip, ready, pod: pod.clone(), node: node.clone() });
            }
        }
        Self { service, endpoints: EndpointSet { ports: ports.collect(), addresses: addresses.into() } }
    }
}
