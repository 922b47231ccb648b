//! Taking over the flows a router that died left in the pinned `STEER_FLOWS` (the map is the truth):
//! a flow whose two entries are both steered is watched by the sweep from now on, by the same rules
//! as a flow this router steered (FIN, RST, idle), and keeps its Q port; whatever the dead router
//! had half done (a pod-side entry still connecting, a direction without its partner) is removed,
//! since the process that was setting it up is gone and its connection went on, or failed, without it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use router_common::nat::FlowKey;
use router_common::steer::{SteerFlow, STEER_STEERED, STEER_TO_CLIENT, STEER_TO_POD};

use super::{lock, SteeredFlow, Steering};

/// What adoption found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Adopted {
    /// Steered flows now watched by this router.
    pub flows: usize,
    /// Entries removed: unfinished setups and directions without their partner.
    pub removed_entries: usize,
}

/// Splits `entries` into whole steered flows and the keys of entries that belong to none.
pub fn classify(entries: &[(FlowKey, SteerFlow)], idle_limit: Duration) -> (Vec<SteeredFlow>, Vec<FlowKey>) {
    let by_key: HashMap<FlowKey, &SteerFlow> = entries.iter().map(|(key, flow)| (*key, flow)).collect();
    let mut whole = Vec::new();
    let mut kept: HashSet<FlowKey> = HashSet::new();
    for (pod_key, to_client) in entries {
        if to_client.direction != STEER_TO_CLIENT || to_client.state != STEER_STEERED {
            continue;
        }
        let client_key = to_client.reply_key();
        let Some(to_pod) = by_key.get(&client_key) else { continue };
        if to_pod.direction != STEER_TO_POD || to_pod.state != STEER_STEERED || to_pod.reply_key() != *pod_key {
            continue;
        }
        whole.push(SteeredFlow { pod_key: *pod_key, client_key, port: pod_key.dst_port, idle_limit });
        kept.insert(*pod_key);
        kept.insert(client_key);
    }
    let orphans = entries.iter().map(|(key, _)| *key).filter(|key| !kept.contains(key)).collect();
    (whole, orphans)
}

impl Steering {
    /// Adopts the flows in the datapath's map (see the module comment); `idle_limit` is their tunnel
    /// timeout. Runs once, before this router steers anything.
    pub fn adopt(&self, idle_limit: Duration) -> Adopted {
        let entries = match self.datapath.all_flows() {
            Ok(entries) => entries,
            Err(err) => {
                tracing::warn!(%err, "reading STEER_FLOWS to adopt a previous router's flows");
                return Adopted::default();
            }
        };
        let (whole, orphans) = classify(&entries, idle_limit);
        for key in &orphans {
            let _ = self.datapath.remove_flow(key);
            let _ = self.datapath.remove_answer(key);
        }
        for flow in &whole {
            lock(&self.ports).claim(flow.port);
            self.register(*flow);
        }
        let adopted = Adopted { flows: whole.len(), removed_entries: orphans.len() };
        if adopted != Adopted::default() {
            tracing::info!(
                flows = adopted.flows,
                removed_entries = adopted.removed_entries,
                "adopted the steered flows a previous router left in STEER_FLOWS"
            );
        }
        adopted
    }

    #[cfg(test)]
    pub(crate) fn watched_flows(&self) -> usize {
        lock(&self.flows).len()
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use router_common::nat::FAMILY_IPV4;
    use router_common::steer::setup::STEER_CONNECTING;

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    fn addr16(last: u8) -> [u8; 16] {
        let mut out = [0; 16];
        out[..4].copy_from_slice(&[10, 0, 0, last]);
        out
    }

    /// A whole flow: C (10.0.0.1:40000) -> via (10.0.0.2:443), Q (10.0.0.3:port) -> P (10.0.0.4:8443).
    fn flow(client_port: u16, q_port: u16, state: u32) -> [(FlowKey, SteerFlow); 2] {
        let pod_key = FlowKey::tcp(ip(4), 8443, ip(3), q_port);
        let client_key = FlowKey::tcp(ip(1), client_port, ip(2), 443);
        let to_client = SteerFlow {
            src_addr: addr16(2),
            dst_addr: addr16(1),
            src_port: 443,
            dst_port: client_port,
            family: FAMILY_IPV4,
            direction: STEER_TO_CLIENT,
            state,
            ..SteerFlow::default()
        };
        let to_pod = SteerFlow {
            src_addr: addr16(3),
            dst_addr: addr16(4),
            src_port: q_port,
            dst_port: 8443,
            family: FAMILY_IPV4,
            direction: STEER_TO_POD,
            state: STEER_STEERED,
            ..SteerFlow::default()
        };
        [(pod_key, to_client), (client_key, to_pod)]
    }

    #[test]
    fn whole_steered_flows_are_adopted_with_their_port() {
        let entries = flow(40_000, 61_005, STEER_STEERED);
        let (whole, orphans) = classify(&entries, HOUR);
        assert!(orphans.is_empty(), "{orphans:?}");
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].port, 61_005);
        assert_eq!(whole[0].pod_key, entries[0].0);
        assert_eq!(whole[0].client_key, entries[1].0);
        assert_eq!(whole[0].idle_limit, HOUR);
    }

    #[test]
    fn unfinished_setups_and_lone_directions_are_orphans() {
        let connecting = flow(40_001, 61_006, STEER_CONNECTING);
        let (whole, orphans) = classify(&connecting[..1], HOUR);
        assert!(whole.is_empty());
        assert_eq!(orphans, vec![connecting[0].0], "a connecting entry whose setup died with its router");
        let steered = flow(40_002, 61_007, STEER_STEERED);
        let (whole, orphans) = classify(&steered[1..], HOUR);
        assert!(whole.is_empty());
        assert_eq!(orphans, vec![steered[1].0], "a direction without its partner");
    }

    /// Adoption sends nothing.
    struct NoSender;

    impl crate::relay::steer::SegmentSender for NoSender {
        fn send(&self, _dst: IpAddr, _packet: &[u8]) -> std::io::Result<()> {
            Err(std::io::Error::other("adoption sends nothing"))
        }
        fn route_towards(&self, _pod: IpAddr) -> std::io::Result<crate::xdp::RouteTo> {
            Err(std::io::Error::other("adoption sends nothing"))
        }
    }

    #[test]
    fn the_setup_adopts_into_the_sweep_and_the_port_pool() {
        use std::sync::Arc;

        use crate::relay::steer::datapath::fake::FakeDatapath;

        let datapath = Arc::new(FakeDatapath::with_capacity(16));
        for (key, entry) in
            flow(40_000, 61_000, STEER_STEERED).into_iter().chain(flow(40_001, 61_001, STEER_CONNECTING))
        {
            datapath.lock().flows.insert(key, entry);
        }
        let config =
            crate::relay::steer::SteerConfig { ports: 61_000..=61_002, https_port: 443, proxy_protocol: false };
        let steering = Steering::new(
            datapath.clone(),
            Arc::new(NoSender),
            Arc::new(crate::relay::steer::NamedAtStart),
            &config,
            Arc::new(crate::metrics::Metrics::default()),
            crate::relay::steer::SetupTiming::default(),
        );
        let adopted = steering.adopt(HOUR);
        assert_eq!(adopted, Adopted { flows: 1, removed_entries: 2 });
        assert_eq!(steering.watched_flows(), 1);
        assert_eq!(datapath.lock().flows.len(), 2, "the whole flow stays, the connecting one's entries go");
        assert_eq!(steering.take_port(), Some(61_001), "61000 belongs to the adopted flow");
    }
}
