//! The contents the router wants in the userspace-written XDP maps (`NODE_ADDRS`, `NODE_PORTS`, `EP_SLOTS`),
//! from the router's own Service ([`LocalService`]) and the node's addresses: one Maglev table per nodePort and
//! family.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use router_common::{
    maps::RING_SIZE,
    nat::{Endpoint, NodeAddr, NodeAddrKey, NodePort, NodePortKey, SlotKey, FAMILY_IPV4, FAMILY_IPV6},
};

use super::maglev;
use crate::model::{Family, LocalService};

/// The map contents the router wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    pub node_addrs: BTreeMap<NodeAddrKey, NodeAddr>,
    pub node_ports: BTreeMap<NodePortKey, NodePort>,
    pub slots: BTreeMap<SlotKey, Endpoint>,
}

impl Desired {
    /// From the router Service (none: no nodePorts) and the node addresses with the interface
    /// index they were read from (0 for configured ones).
    pub fn new(service: Option<&LocalService>, node_addrs: &[(IpAddr, u32)]) -> Desired {
        let mut desired = Desired::default();
        for &(ip, if_index) in node_addrs {
            desired.node_addrs.insert(NodeAddrKey::new(ip), NodeAddr { if_index });
        }
        let Some(service) = service else { return desired };
        for port in &service.node_ports {
            for family in &service.families {
                let family_tag = match family {
                    Family::V4 => FAMILY_IPV4,
                    Family::V6 => FAMILY_IPV6,
                };
                let key = NodePortKey::tcp(port.node_port, family_tag);
                let endpoints: Vec<Endpoint> = port
                    .endpoints
                    .iter()
                    .filter(|e| Family::of(&e.ip()) == *family)
                    .map(|e| Endpoint::new(e.ip(), e.port()))
                    .collect();
                for (slot, &index) in maglev::table(&endpoints, RING_SIZE).iter().enumerate() {
                    desired.slots.insert(key.slot(slot as u32), endpoints[index]);
                }
                let count = u32::try_from(endpoints.len()).unwrap_or(u32::MAX);
                desired.node_ports.insert(key, NodePort { endpoints: count, flags: 0 });
            }
        }
        desired
    }

    /// Number of distinct endpoints over all nodePorts.
    pub(crate) fn endpoint_count(&self) -> usize {
        self.slots.values().collect::<BTreeSet<_>>().len()
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::model::{NodePortSpec, ObjectKey};

    fn service(endpoints: &[&str], families: &[Family]) -> LocalService {
        let endpoints: BTreeSet<SocketAddr> = endpoints.iter().map(|e| e.parse().expect("addr")).collect();
        LocalService {
            service: ObjectKey::new("ns", "router"),
            found: true,
            families: families.iter().copied().collect(),
            node_ports: vec![NodePortSpec { name: "http".into(), node_port: 30080, endpoints: endpoints.clone() }],
            health_check_node_port: Some(32000),
            local_addresses: endpoints.iter().map(SocketAddr::ip).collect(),
        }
    }

    #[test]
    fn one_full_table_per_node_port_and_family() {
        let svc = service(&["10.0.0.2:80", "[fd00::2]:80"], &[Family::V4, Family::V6]);
        let desired = Desired::new(Some(&svc), &[("10.0.0.2".parse().expect("ip"), 3)]);
        assert_eq!(desired.node_addrs.len(), 1);
        assert_eq!(desired.node_ports.len(), 2);
        assert!(desired.node_ports.values().all(|p| p.endpoints == 1));
        assert_eq!(desired.slots.len(), 2 * RING_SIZE as usize);
        let v4 = NodePortKey::tcp(30080, FAMILY_IPV4);
        assert_eq!(desired.slots[&v4.slot(0)], Endpoint::new("10.0.0.2".parse().expect("ip"), 80));
    }

    #[test]
    fn no_local_endpoint_keeps_the_port_with_zero() {
        let desired = Desired::new(Some(&service(&[], &[Family::V4])), &[]);
        assert_eq!(desired.node_ports.values().map(|p| p.endpoints).collect::<Vec<_>>(), vec![0]);
        assert!(desired.slots.is_empty());
        assert_eq!(Desired::new(None, &[]), Desired::default());
    }
}
