//! The steered flows as `router xdp status` lists them, read from `STEER_FLOWS` alone: one row per
//! flow (its `STEER_TO_CLIENT` entry, keyed P -> Q, joined with the `STEER_TO_POD` entry its
//! reply key names), with both directions' counters and how long it has been quiet.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use aya::maps::{HashMap, MapData};
use router_common::{
    nat::{FlowKey, FAMILY_IPV4},
    steer::{setup::STEER_CONNECTING, SteerFlow, STEER_FIN, STEER_RST, STEER_STEERED, STEER_TO_CLIENT},
};

/// One steered (or connecting) flow.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SteeredFlowRow {
    /// The client, C.
    pub client: SocketAddr,
    /// The address C connected to (the node's, or a nodePort's).
    pub via: SocketAddr,
    /// The pod, P.
    pub pod: SocketAddr,
    /// The node end of the pod leg, Q.
    pub node_leg: SocketAddr,
    /// `steered` or `connecting`.
    pub state: &'static str,
    /// Packets and bytes translated from the client towards the pod (0 when that entry is missing).
    pub to_pod_packets: u64,
    pub to_pod_bytes: u64,
    /// Packets and bytes translated from the pod towards the client.
    pub to_client_packets: u64,
    pub to_client_bytes: u64,
    /// Seconds since either direction last translated a packet (refreshed about once a second).
    pub idle_seconds: u64,
    /// FIN and RST seen, in either direction.
    pub fin: bool,
    pub rst: bool,
}

/// The rows of every flow in `flows`, clients in order; `now_ns` is CLOCK_MONOTONIC.
pub(crate) fn rows(flows: &HashMap<MapData, FlowKey, SteerFlow>, now_ns: u64) -> Vec<SteeredFlowRow> {
    let mut rows: Vec<SteeredFlowRow> = flows
        .iter()
        .filter_map(Result::ok)
        .filter(|(_, entry)| entry.direction == STEER_TO_CLIENT)
        .map(|(pod_key, to_client)| {
            let to_pod = flows.get(&to_client.reply_key(), 0).ok();
            row(&pod_key, &to_client, to_pod.as_ref(), now_ns)
        })
        .collect();
    rows.sort_by_key(|row| (row.client, row.pod));
    rows
}

/// The row of the flow whose `STEER_TO_CLIENT` entry is `to_client` (keyed `pod_key`, P -> Q).
pub(crate) fn row(pod_key: &FlowKey, to_client: &SteerFlow, to_pod: Option<&SteerFlow>, now_ns: u64) -> SteeredFlowRow {
    let family = to_client.family;
    let last = to_client.last_seen_ns.max(to_pod.map_or(0, |entry| entry.last_seen_ns));
    let seen = to_client.seen | to_pod.map_or(0, |entry| entry.seen);
    SteeredFlowRow {
        client: socket(family, to_client.dst_addr, to_client.dst_port),
        via: socket(family, to_client.src_addr, to_client.src_port),
        pod: socket(pod_key.family, pod_key.src_addr, pod_key.src_port),
        node_leg: socket(pod_key.family, pod_key.dst_addr, pod_key.dst_port),
        state: match to_client.state {
            STEER_STEERED => "steered",
            STEER_CONNECTING => "connecting",
            _ => "pending",
        },
        to_pod_packets: to_pod.map_or(0, |entry| entry.packets),
        to_pod_bytes: to_pod.map_or(0, |entry| entry.bytes),
        to_client_packets: to_client.packets,
        to_client_bytes: to_client.bytes,
        idle_seconds: now_ns.saturating_sub(last) / 1_000_000_000,
        fin: seen & STEER_FIN != 0,
        rst: seen & STEER_RST != 0,
    }
}

fn socket(family: u8, addr: [u8; 16], port: u16) -> SocketAddr {
    let ip = if family == FAMILY_IPV4 {
        IpAddr::V4(Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]))
    } else {
        IpAddr::V6(Ipv6Addr::from(addr))
    };
    SocketAddr::new(ip, port)
}

#[cfg(test)]
mod tests {
    use router_common::steer::STEER_TO_POD;

    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut out = [0; 16];
        out[..4].copy_from_slice(&a);
        out
    }

    fn ip(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(a))
    }

    #[test]
    fn a_row_joins_both_directions() {
        let pod_key = FlowKey::tcp(ip([10, 1, 0, 2]), 8443, ip([10, 1, 0, 1]), 61_000);
        let to_client = SteerFlow {
            last_seen_ns: 5_000_000_000,
            packets: 7,
            bytes: 7000,
            src_addr: v4([10, 0, 0, 2]),
            dst_addr: v4([10, 0, 0, 1]),
            src_port: 443,
            dst_port: 40_000,
            family: FAMILY_IPV4,
            direction: STEER_TO_CLIENT,
            state: STEER_STEERED,
            ..SteerFlow::default()
        };
        let to_pod = SteerFlow {
            last_seen_ns: 8_000_000_000,
            packets: 3,
            bytes: 300,
            seen: STEER_FIN,
            direction: STEER_TO_POD,
            ..SteerFlow::default()
        };
        let row = row(&pod_key, &to_client, Some(&to_pod), 10_500_000_000);
        assert_eq!(row.client, "10.0.0.1:40000".parse().expect("addr"));
        assert_eq!(row.via, "10.0.0.2:443".parse().expect("addr"));
        assert_eq!(row.pod, "10.1.0.2:8443".parse().expect("addr"));
        assert_eq!(row.node_leg, "10.1.0.1:61000".parse().expect("addr"));
        assert_eq!(
            (row.to_pod_packets, row.to_pod_bytes, row.to_client_packets, row.to_client_bytes),
            (3, 300, 7, 7000)
        );
        assert_eq!(row.idle_seconds, 2, "the newer direction counts");
        assert!(row.fin && !row.rst);
        assert_eq!(row.state, "steered");
    }
}
