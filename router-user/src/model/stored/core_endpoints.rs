//! `StoredEndpoints`: what the router keeps of a core `Endpoints` object (`ROUTER_WATCH_ENDPOINTS`).

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Endpoints;

use super::endpoint_set::{pod_of, EndpointAddress, EndpointPort, EndpointSet};

/// A core `Endpoints` object: its subsets' ports and ready `addresses` (`notReadyAddresses` are not read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredEndpoints {
    pub subsets: Box<[EndpointSet]>,
}

impl From<Endpoints> for StoredEndpoints {
    fn from(endpoints: Endpoints) -> Self {
        let subsets = endpoints.subsets.unwrap_or_default().into_iter().map(|subset| {
            let ports = subset.ports.unwrap_or_default().into_iter().filter_map(|port| {
                let (name, protocol, app) =
                    (port.name.as_deref(), port.protocol.as_deref(), port.app_protocol.as_deref());
                EndpointPort::usable(name, Some(port.port), protocol, app)
            });
            let addresses = subset.addresses.unwrap_or_default().into_iter().filter_map(|address| {
                let ip = address.ip.parse::<IpAddr>().ok()?;
                let (pod, node) = (pod_of(address.target_ref.as_ref()), address.node_name.map(Into::into));
                Some(EndpointAddress { ip, ready: true, pod, node })
            });
            EndpointSet { ports: ports.collect(), addresses: addresses.collect() }
        });
        Self { subsets: subsets.collect() }
    }
}
