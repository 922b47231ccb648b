//! The map keys and `STEER_FLOWS` entries of one steered flow, built from what the datapath recorded
//! (the client's SYN, the pod's SYN-ACK) and what the router's socket R reports: the pure part of the
//! setup, following the contract's step 4.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use router_common::nat::{addr_bytes, FlowKey, FAMILY_IPV6};
use router_common::steer::setup::{
    SteerAnswer, SteerSyn, STEER_CONNECTING, SYN_OPT_MSS, SYN_OPT_SACK_OK, SYN_OPT_TIMESTAMPS, SYN_OPT_WSCALE,
};
use router_common::steer::{SteerFlow, SteerTcp, STEER_STEERED, STEER_TO_CLIENT, STEER_TO_POD};

use super::segment::TcpOptions;

/// What the router's socket R says about leg A (read in TCP_REPAIR mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouterSide {
    /// R's send-queue sequence: Ir + 1 while R has sent no data.
    pub send_next: u32,
    /// R's receive-queue sequence: Ic + 1 + the bytes R received.
    pub receive_next: u32,
    /// R's current TSval clock, taken as Tr_last.
    pub ts_now: u32,
    /// Wr, the shift R advertised.
    pub wscale_router: u8,
    /// Wc as R took it from C's SYN.
    pub wscale_client: u8,
}

/// The 5-tuple of the addresses in a TCP flow (both of one family).
pub fn key(src: SocketAddr, dst: SocketAddr) -> FlowKey {
    FlowKey::tcp(src.ip(), src.port(), dst.ip(), dst.port())
}

/// The address and port C connected to (before any nodePort rewrite), from its recorded SYN.
pub fn arrival_destination(syn: &SteerSyn) -> SocketAddr {
    let a = syn.arrival_dst_addr;
    let ip = if syn.family == FAMILY_IPV6 {
        IpAddr::V6(Ipv6Addr::from(a))
    } else {
        IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
    };
    SocketAddr::new(ip, syn.arrival_dst_port)
}

/// Leg B's SYN options: exactly what C offered, with C's TSval and no echo.
pub fn syn_options(syn: &SteerSyn) -> TcpOptions {
    let has = |bit| syn.options & bit != 0;
    TcpOptions {
        mss: has(SYN_OPT_MSS).then_some(syn.mss),
        wscale: has(SYN_OPT_WSCALE).then_some(syn.wscale),
        sack_permitted: has(SYN_OPT_SACK_OK),
        timestamps: has(SYN_OPT_TIMESTAMPS).then_some((syn.tsval, 0)),
    }
}

/// Why a pod's SYN-ACK cannot be joined to leg A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerMismatch {
    #[error("the pod acknowledged {got}, not the SYN's {expected}")]
    WrongAck { expected: u32, got: u32 },
    /// C and R use timestamps or window scaling and P did not take them (or took ones C did not
    /// offer): the same bytes would mean different things on the two legs.
    #[error("the pod's options differ from the client's")]
    Options,
    #[error("R's view of the client's window scale ({router}) differs from the SYN's ({syn})")]
    ClientScale { router: u8, syn: u8 },
}

/// Checks P's SYN-ACK against C's SYN and R's view of leg A.
pub fn check_answer(syn: &SteerSyn, answer: &SteerAnswer, router: &RouterSide) -> Result<(), AnswerMismatch> {
    let expected = syn.isn.wrapping_add(1);
    if answer.ack != expected {
        return Err(AnswerMismatch::WrongAck { expected, got: answer.ack });
    }
    let same = |bit| (syn.options & bit != 0) == (answer.options & bit != 0);
    if !same(SYN_OPT_TIMESTAMPS) || !same(SYN_OPT_WSCALE) {
        return Err(AnswerMismatch::Options);
    }
    let syn_scale = if syn.options & SYN_OPT_WSCALE != 0 { syn.wscale.min(14) } else { 0 };
    if router.wscale_client != syn_scale {
        return Err(AnswerMismatch::ClientScale { router: router.wscale_client, syn: syn_scale });
    }
    Ok(())
}

/// The offsets between the legs: D = Ip - Ir, T = (Tr_last + 1) - Tp0.
pub fn offsets(answer: &SteerAnswer, router: &RouterSide) -> SteerTcp {
    let wscale_pod = if answer.options & SYN_OPT_WSCALE != 0 { answer.wscale } else { 0 };
    SteerTcp::new(
        router.send_next.wrapping_sub(1),
        answer.isn,
        router.ts_now,
        answer.tsval,
        router.wscale_router,
        wscale_pod,
    )
}

/// The pod-side entry while leg B's SYN is out (key P -> Q): the datapath records P's answer.
pub fn connecting_entry(syn: &SteerSyn, client: SocketAddr, now_ns: u64) -> SteerFlow {
    SteerFlow { state: STEER_CONNECTING, ..to_client_entry(syn, client, SteerTcp::default(), now_ns) }
}

/// The entry keyed P -> Q: P's packets leave from the address C connected to, towards C, by the
/// interface C's SYN came in on.
pub fn to_client_entry(syn: &SteerSyn, client: SocketAddr, tcp: SteerTcp, now_ns: u64) -> SteerFlow {
    let from = arrival_destination(syn);
    SteerFlow {
        last_seen_ns: now_ns,
        src_addr: addr16(from.ip()),
        dst_addr: addr16(client.ip()),
        src_port: from.port(),
        dst_port: client.port(),
        if_index: syn.if_index,
        src_mac: syn.local_mac,
        dst_mac: syn.peer_mac,
        family: family(client.ip()),
        direction: STEER_TO_CLIENT,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    }
}

/// The entry keyed C -> the address C connected to: C's packets leave from Q towards P, by the
/// interface P's answer came in on.
pub fn to_pod_entry(answer: &SteerAnswer, q: SocketAddr, pod: SocketAddr, tcp: SteerTcp, now_ns: u64) -> SteerFlow {
    SteerFlow {
        last_seen_ns: now_ns,
        src_addr: addr16(q.ip()),
        dst_addr: addr16(pod.ip()),
        src_port: q.port(),
        dst_port: pod.port(),
        if_index: answer.if_index,
        src_mac: answer.local_mac,
        dst_mac: answer.peer_mac,
        family: family(pod.ip()),
        direction: STEER_TO_POD,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    }
}

/// An address in the maps' 16-byte layout (IPv4 in the first 4 bytes).
fn addr16(ip: IpAddr) -> [u8; 16] {
    addr_bytes(ip).1
}

/// The maps' family value of an address.
fn family(ip: IpAddr) -> u8 {
    addr_bytes(ip).0
}

#[cfg(test)]
mod tests {
    use std::net::{SocketAddrV4, SocketAddrV6};

    use router_common::nat::{FAMILY_IPV4, PROTO_TCP};

    use super::*;

    const fn v4(a: u8, b: u8, c: u8, d: u8, port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(a, b, c, d), port))
    }

    const fn v6(net: u16, host: u16, port: u16) -> SocketAddr {
        SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::new(0xfd00, 0x211, net, 0, 0, 0, 0, host), port, 0, 0))
    }

    const CLIENT: SocketAddr = v4(10, 0, 0, 1, 40_000);
    /// What C connected to (a nodePort) and what R accepted on after the rewrite.
    const ARRIVAL: SocketAddr = v4(10, 0, 0, 2, 30_443);
    const Q: SocketAddr = v4(10, 1, 0, 1, 61_000);
    const POD: SocketAddr = v4(10, 1, 0, 2, 8443);

    fn syn() -> SteerSyn {
        let mut arrival_dst_addr = [0u8; 16];
        arrival_dst_addr[..4].copy_from_slice(&[10, 0, 0, 2]);
        SteerSyn {
            seen_ns: 1,
            isn: 0xffff_fffe,
            tsval: 1000,
            arrival_dst_addr,
            arrival_dst_port: ARRIVAL.port(),
            mss: 1460,
            wscale: 7,
            options: SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS,
            family: FAMILY_IPV4,
            _pad: 0,
            if_index: 3,
            peer_mac: [2, 0, 0, 0, 0, 1],
            local_mac: [2, 0, 0, 0, 0, 2],
        }
    }

    fn answer() -> SteerAnswer {
        SteerAnswer {
            seen_ns: 2,
            isn: 5000,
            ack: 0xffff_ffff,
            tsval: 77,
            tsecr: 1000,
            window: 65_160,
            mss: 1400,
            wscale: 9,
            options: SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS,
            flags: 1,
            _pad: 0,
            if_index: 4,
            peer_mac: [2, 0, 0, 0, 1, 1],
            local_mac: [2, 0, 0, 0, 1, 2],
        }
    }

    fn router() -> RouterSide {
        RouterSide {
            send_next: 0x1000_0001,
            receive_next: 0x0000_0200,
            ts_now: 900_000,
            wscale_router: 7,
            wscale_client: 7,
        }
    }

    #[test]
    fn offsets_match_steer_tcp_new_with_the_notes_names() {
        let tcp = offsets(&answer(), &router());
        assert_eq!(tcp, SteerTcp::new(0x1000_0000, 5000, 900_000, 77, 7, 9));
        assert_eq!(tcp.seq_offset, 5000u32.wrapping_sub(0x1000_0000), "D = Ip - Ir");
        assert_eq!(tcp.ts_offset, 900_001 - 77, "T = (Tr_last + 1) - Tp0");
        let unscaled = SteerAnswer { options: SYN_OPT_MSS, ..answer() };
        assert_eq!(offsets(&unscaled, &router()).wscale_pod, 0, "no option: no scaling");
    }

    #[test]
    fn the_two_directions_key_each_other() {
        let tcp = offsets(&answer(), &router());
        let to_client = to_client_entry(&syn(), CLIENT, tcp, 10);
        let to_pod = to_pod_entry(&answer(), Q, POD, tcp, 10);
        let pod_key = key(POD, Q);
        let client_key = key(CLIENT, ARRIVAL);
        assert_eq!(to_client.reply_key(), client_key, "P's packets leave as ARRIVAL -> C; C answers C -> ARRIVAL");
        assert_eq!(to_pod.reply_key(), pod_key, "C's packets leave as Q -> P; P answers P -> Q");
        assert_eq!(pod_key.protocol, PROTO_TCP);
        assert_eq!((to_client.direction, to_pod.direction), (STEER_TO_CLIENT, STEER_TO_POD));
        assert_eq!((to_client.state, to_pod.state), (STEER_STEERED, STEER_STEERED));
        assert_eq!((to_client.if_index, to_pod.if_index), (3, 4));
        assert_eq!(to_client.src_mac, syn().local_mac, "towards C: our MAC from the SYN's destination");
        assert_eq!(to_client.dst_mac, syn().peer_mac);
        assert_eq!(to_pod.src_mac, answer().local_mac);
        assert_eq!(to_pod.dst_mac, answer().peer_mac, "towards P: the answer's source MAC");
        assert_eq!(to_client.tcp, to_pod.tcp, "both directions carry the same offsets");
        assert_eq!(to_client.last_seen_ns, 10);
    }

    #[test]
    fn connecting_entry_is_the_pod_side_entry_in_state_connecting() {
        let entry = connecting_entry(&syn(), CLIENT, 5);
        assert_eq!(entry.state, STEER_CONNECTING);
        assert_eq!(entry.direction, STEER_TO_CLIENT);
        assert_eq!(entry.reply_key(), key(CLIENT, ARRIVAL));
    }

    #[test]
    fn leg_b_syn_repeats_the_clients_options() {
        let options = syn_options(&syn());
        assert_eq!(
            options,
            TcpOptions { mss: Some(1460), wscale: Some(7), sack_permitted: true, timestamps: Some((1000, 0)) }
        );
        let bare = SteerSyn { options: 0, ..syn() };
        assert_eq!(syn_options(&bare), TcpOptions::default());
    }

    #[test]
    fn answers_that_do_not_fit_leg_a_are_refused() {
        assert_eq!(check_answer(&syn(), &answer(), &router()), Ok(()));
        let wrong_ack = SteerAnswer { ack: 1, ..answer() };
        assert!(matches!(check_answer(&syn(), &wrong_ack, &router()), Err(AnswerMismatch::WrongAck { .. })));
        let no_timestamps = SteerAnswer { options: SYN_OPT_MSS | SYN_OPT_WSCALE, ..answer() };
        assert_eq!(check_answer(&syn(), &no_timestamps, &router()), Err(AnswerMismatch::Options));
        let no_scale = SteerAnswer { options: SYN_OPT_MSS | SYN_OPT_TIMESTAMPS, ..answer() };
        assert_eq!(check_answer(&syn(), &no_scale, &router()), Err(AnswerMismatch::Options));
        let other_scale = RouterSide { wscale_client: 6, ..router() };
        assert!(matches!(check_answer(&syn(), &answer(), &other_scale), Err(AnswerMismatch::ClientScale { .. })));
    }

    #[test]
    fn arrival_destination_reads_the_pre_rewrite_address() {
        assert_eq!(arrival_destination(&syn()), ARRIVAL);
    }

    #[test]
    fn ipv6_flows_key_and_address_each_other_in_sixteen_bytes() {
        let (client, arrival, q, pod) = (v6(0, 1, 40_000), v6(0, 2, 443), v6(1, 1, 61_000), v6(1, 2, 8443));
        let IpAddr::V6(arrival_ip) = arrival.ip() else { unreachable!("an IPv6 constant") };
        let syn6 = SteerSyn {
            arrival_dst_addr: arrival_ip.octets(),
            arrival_dst_port: arrival.port(),
            family: FAMILY_IPV6,
            ..syn()
        };
        assert_eq!(arrival_destination(&syn6), arrival, "all 16 bytes, not an IPv4 prefix");
        let tcp = offsets(&answer(), &router());
        let to_client = to_client_entry(&syn6, client, tcp, 10);
        let to_pod = to_pod_entry(&answer(), q, pod, tcp, 10);
        assert_eq!((to_client.family, to_pod.family), (FAMILY_IPV6, FAMILY_IPV6));
        assert_eq!(to_client.reply_key(), key(client, arrival));
        assert_eq!(to_pod.reply_key(), key(pod, q));
        assert_eq!(key(pod, q).family, FAMILY_IPV6);
        assert_eq!(to_pod.dst_addr, [0xfd, 0, 0x02, 0x11, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(connecting_entry(&syn6, client, 5).family, FAMILY_IPV6);
        assert_eq!(key(client, arrival).family, FAMILY_IPV6);
        assert_eq!(key(CLIENT, ARRIVAL).family, FAMILY_IPV4);
    }
}
