//! Packet fixtures run through the real `xdp_front` and `nat_reverse` with `BPF_PROG_TEST_RUN`
//! (root only; no interface, no pins). The nodePort maps are filled by the same `Desired`/`apply`
//! code the router runs; rewritten packets are checked field by field and their checksums
//! recomputed from scratch.

#![allow(unsafe_code)]

use std::{
    collections::BTreeSet,
    net::{IpAddr, SocketAddr},
};

use aya::{
    programs::{TestRun, TestRunOptions, TestRunResult},
    Ebpf,
};
use router_common::{
    checksum::{fold, sum_bytes},
    hash::flow_hash,
    maps::{RING_SIZE, XDP_STATS},
    nat::{FlowKey, NodePortKey, FAMILY_IPV4, FAMILY_IPV6},
    stats::*,
};

use super::{
    conntrack::{monotonic_ns, ConntrackTimeouts},
    counters::StatsMap,
    loader,
    maps::NatMaps,
    Desired, XdpCounters, XdpError,
};
use crate::model::{Family, LocalService, NodePortSpec, ObjectKey};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const TC_ACT_OK: u32 = 0;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_ARP: u16 = 0x0806;
const ETH_P_8021Q: u16 = 0x8100;
const TCP: u8 = 6;
const UDP: u8 = 17;
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const NODE_PORT: u16 = 30080;
const NODE4: &str = "10.0.0.2";
const NODE6: &str = "fd00::2";
const CLIENT4: &str = "10.0.0.1";
const CLIENT6: &str = "fd00::1";

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
            return;
        }
    };
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("ip literal")
}

// ---------- packet building ----------

fn eth(ether_type: u16) -> Vec<u8> {
    let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    frame.extend_from_slice(&ether_type.to_be_bytes());
    frame
}

/// A TCP segment (20-byte header, `flags`, a 5-byte payload) with a zero checksum.
fn tcp_segment(src_port: u16, dst_port: u16, flags: u8, data_offset: u8) -> Vec<u8> {
    let mut seg = Vec::new();
    seg.extend_from_slice(&src_port.to_be_bytes());
    seg.extend_from_slice(&dst_port.to_be_bytes());
    seg.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, data_offset << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    seg.resize(usize::from(data_offset.max(5)) * 4, 0);
    seg.extend_from_slice(b"hello");
    seg
}

fn pseudo_sum(src: &[u8], dst: &[u8], len: usize) -> u32 {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(src);
    pseudo.extend_from_slice(dst);
    if src.len() == 4 {
        pseudo.extend_from_slice(&[0, TCP]);
        pseudo.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        pseudo.extend_from_slice(&(len as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, TCP]);
    }
    sum_bytes(&pseudo)
}

fn set_tcp_checksum(seg: &mut [u8], src: &[u8], dst: &[u8]) {
    seg[16..18].copy_from_slice(&[0, 0]);
    let check = !fold(pseudo_sum(src, dst, seg.len()) + sum_bytes(seg));
    seg[16..18].copy_from_slice(&check.to_be_bytes());
}

/// Ethernet + IPv4 (`options` extra words, fragment field `frag_off`) + TCP, checksums valid.
fn ipv4_tcp(src: &str, src_port: u16, dst: &str, dst_port: u16, flags: u8, options: u8, frag_off: u16) -> Vec<u8> {
    let (IpAddr::V4(src), IpAddr::V4(dst)) = (ip(src), ip(dst)) else { panic!("ipv4 literals") };
    let mut seg = tcp_segment(src_port, dst_port, flags, 5);
    set_tcp_checksum(&mut seg, &src.octets(), &dst.octets());
    let ihl = 5 + options;
    let total = usize::from(ihl) * 4 + seg.len();
    let mut header = vec![0x40 | ihl, 0];
    header.extend_from_slice(&(total as u16).to_be_bytes());
    header.extend_from_slice(&[0x12, 0x34]);
    header.extend_from_slice(&frag_off.to_be_bytes());
    header.extend_from_slice(&[64, TCP, 0, 0]);
    header.extend_from_slice(&src.octets());
    header.extend_from_slice(&dst.octets());
    header.resize(usize::from(ihl) * 4, 1); // options: NOPs
    let check = !fold(sum_bytes(&header));
    header[10..12].copy_from_slice(&check.to_be_bytes());
    [eth(ETH_P_IP), header, seg].concat()
}

fn ipv4_syn(src_port: u16, dst: &str, dst_port: u16) -> Vec<u8> {
    ipv4_tcp(CLIENT4, src_port, dst, dst_port, SYN, 0, 0)
}

/// Ethernet + IPv6 (next header `next`) + TCP, checksum valid.
fn ipv6_tcp(src: &str, src_port: u16, dst: &str, dst_port: u16, flags: u8, next: u8) -> Vec<u8> {
    let (IpAddr::V6(src), IpAddr::V6(dst)) = (ip(src), ip(dst)) else { panic!("ipv6 literals") };
    let mut seg = tcp_segment(src_port, dst_port, flags, 5);
    set_tcp_checksum(&mut seg, &src.octets(), &dst.octets());
    let mut header = vec![0x60, 0, 0, 0];
    header.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    header.extend_from_slice(&[next, 64]);
    header.extend_from_slice(&src.octets());
    header.extend_from_slice(&dst.octets());
    [eth(ETH_P_IPV6), header, seg].concat()
}

/// Addresses, ports and checksum validity of an Ethernet + IPv4/IPv6 + TCP frame.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    src: SocketAddr,
    dst: SocketAddr,
    checksums_ok: bool,
}

fn inspect(frame: &[u8]) -> Seen {
    let ether_type = u16::from_be_bytes([frame[12], frame[13]]);
    let (src, dst, l4, ip_ok, pseudo) = if ether_type == ETH_P_IP {
        let ihl = usize::from(frame[14] & 0x0f) * 4;
        let header = &frame[14..14 + ihl];
        let src: [u8; 4] = header[12..16].try_into().expect("4");
        let dst: [u8; 4] = header[16..20].try_into().expect("4");
        let l4 = &frame[14 + ihl..];
        (IpAddr::from(src), IpAddr::from(dst), l4, fold(sum_bytes(header)) == 0xffff, pseudo_sum(&src, &dst, l4.len()))
    } else {
        let src: [u8; 16] = frame[22..38].try_into().expect("16");
        let dst: [u8; 16] = frame[38..54].try_into().expect("16");
        let l4 = &frame[54..];
        (IpAddr::from(src), IpAddr::from(dst), l4, true, pseudo_sum(&src, &dst, l4.len()))
    };
    let tcp_ok = fold(pseudo + sum_bytes(l4)) == 0xffff;
    Seen {
        src: SocketAddr::new(src, u16::from_be_bytes([l4[0], l4[1]])),
        dst: SocketAddr::new(dst, u16::from_be_bytes([l4[2], l4[3]])),
        checksums_ok: ip_ok && tcp_ok,
    }
}

fn sock(text: &str) -> SocketAddr {
    text.parse().expect("socket address literal")
}

// ---------- the programs and maps ----------

struct Harness {
    ebpf: Ebpf,
    stats: StatsMap,
    nat: NatMaps,
}

impl Harness {
    fn new(conntrack_size: u32) -> Harness {
        let mut ebpf = loader::load(conntrack_size).expect("the verifier accepts both programs");
        let stats = StatsMap::new(ebpf.take_map(XDP_STATS).expect("stats map")).expect("typed stats map");
        let nat =
            NatMaps::new(|name| ebpf.take_map(name).ok_or(XdpError::Missing { kind: "map", name })).expect("nat maps");
        Harness { ebpf, stats, nat }
    }

    /// A harness whose router Service has nodePort 30080 (v4 and v6) with `endpoints`, on node
    /// addresses 10.0.0.2 and fd00::2.
    fn with_endpoints(endpoints: &[&str]) -> (Harness, Desired) {
        let mut h = Harness::new(1024);
        let desired = h.set_endpoints(endpoints);
        (h, desired)
    }

    fn set_endpoints(&mut self, endpoints: &[&str]) -> Desired {
        let endpoints: BTreeSet<SocketAddr> = endpoints.iter().map(|e| sock(e)).collect();
        let service = LocalService {
            service: ObjectKey::new("ns", "router"),
            found: true,
            families: BTreeSet::from([Family::V4, Family::V6]),
            node_ports: vec![NodePortSpec { name: "http".into(), node_port: NODE_PORT, endpoints: endpoints.clone() }],
            health_check_node_port: None,
            local_addresses: endpoints.iter().map(SocketAddr::ip).collect(),
        };
        let desired = Desired::new(Some(&service), &[(ip(NODE4), 1), (ip(NODE6), 1)]);
        self.nat.apply(&desired).expect("apply desired maps");
        desired
    }

    fn counters(&self) -> XdpCounters {
        self.stats.read().expect("read counters")
    }

    /// Runs `frame` through `xdp_front`; returns the verdict, the frame it left, and the counters
    /// it moved.
    fn xdp(&self, frame: &[u8]) -> (u32, Vec<u8>, XdpCounters) {
        let before = self.counters();
        let program = self.ebpf.program("xdp_front").expect("xdp_front");
        let program: &aya::programs::Xdp = program.try_into().expect("an XDP program");
        let (ret, out) = run(program, frame);
        (ret, out, self.counters().since(&before))
    }

    /// Runs `frame` through `nat_reverse`.
    fn tc(&self, frame: &[u8]) -> (u32, Vec<u8>, XdpCounters) {
        let before = self.counters();
        let program = self.ebpf.program("nat_reverse").expect("nat_reverse");
        let program: &aya::programs::SchedClassifier = program.try_into().expect("a TC program");
        let (ret, out) = run(program, frame);
        (ret, out, self.counters().since(&before))
    }

    fn conntrack_len(&self) -> (usize, usize) {
        (self.nat.conntrack.keys().count(), self.nat.conntrack_rev.keys().count())
    }
}

pub(super) fn run<P>(program: &P, frame: &[u8]) -> (u32, Vec<u8>)
where
    P: for<'a> TestRun<Opts<'a> = TestRunOptions<'a>, Result = TestRunResult>,
{
    let mut out = vec![0u8; frame.len() + 256];
    let result = program
        .test_run(TestRunOptions { data_in: Some(frame), data_out: Some(&mut out), ..TestRunOptions::default() })
        .expect("BPF_PROG_TEST_RUN");
    out.truncate(result.data_size_out as usize);
    (result.return_value, out)
}

/// Only the listed counters moved, by the listed amounts (packets).
fn assert_moved(name: &str, got: &XdpCounters, want: &[(u32, u64)]) {
    for index in STATS_INDICES {
        let expected = want.iter().find(|(i, _)| *i == index).map_or(0, |(_, n)| *n);
        assert_eq!(got.get(index), expected, "{name}: counter {} in {got:?}", STATS_NAMES[index as usize]);
    }
}

// ---------- cases ----------

/// A fixture's name, frame, and the counters (besides total and pass) it must move by one each.
type Case = (&'static str, Vec<u8>, Vec<(u32, u64)>);

#[test]
fn traffic_that_is_not_for_a_node_port_is_passed_unchanged() {
    require_root!();
    let (h, _) = Harness::with_endpoints(&["10.0.0.2:80", "[fd00::2]:80"]);
    let mut short_options = ipv4_syn(40000, NODE4, NODE_PORT);
    short_options[14] = 0x4f; // IHL 15 (60 bytes), fewer present
    short_options.truncate(14 + 40);
    let mut short_tcp = ipv4_syn(40000, NODE4, NODE_PORT);
    short_tcp.truncate(14 + 20 + 10);
    let mut bad_ipv6 = ipv6_tcp(CLIENT6, 40000, NODE6, NODE_PORT, SYN, TCP);
    bad_ipv6[14] = 0x40;
    let mut udp = ipv4_syn(40000, NODE4, NODE_PORT);
    udp[14 + 9] = UDP;
    let mut ihl4 = ipv4_syn(40000, NODE4, NODE_PORT);
    ihl4[14] = 0x44;
    let mut offset4 = ipv4_syn(40000, NODE4, NODE_PORT);
    offset4[14 + 20 + 12] = 4 << 4;
    let cases: Vec<Case> = vec![
        ("another port", ipv4_syn(40000, NODE4, 8080), vec![(STATS_IPV4, 1), (STATS_TCP, 1)]),
        ("nodePort on another address", ipv4_syn(40000, "10.0.0.9", NODE_PORT), vec![(STATS_IPV4, 1), (STATS_TCP, 1)]),
        (
            "ipv6 nodePort on another address",
            ipv6_tcp(CLIENT6, 40000, "fd00::9", NODE_PORT, SYN, TCP),
            vec![(STATS_IPV6, 1), (STATS_TCP, 1)],
        ),
        ("udp to the nodePort", udp, vec![(STATS_IPV4, 1)]),
        (
            "first fragment (more fragments set)",
            ipv4_tcp(CLIENT4, 40000, NODE4, NODE_PORT, SYN, 0, 0x2000),
            vec![(STATS_IPV4, 1), (STATS_TCP, 1), (STATS_FRAGMENT, 1)],
        ),
        (
            "non-first fragment",
            ipv4_tcp(CLIENT4, 40000, NODE4, NODE_PORT, SYN, 0, 0x00b9),
            vec![(STATS_IPV4, 1), (STATS_FRAGMENT, 1)],
        ),
        (
            "ipv6 fragment header",
            ipv6_tcp(CLIENT6, 40000, NODE6, NODE_PORT, SYN, 44),
            vec![(STATS_IPV6, 1), (STATS_FRAGMENT, 1)],
        ),
        ("arp", [eth(ETH_P_ARP), vec![0; 28]].concat(), vec![(STATS_OTHER, 1)]),
        (
            "vlan-tagged ipv4",
            [eth(ETH_P_8021Q), vec![0, 1, 0x08, 0], ipv4_syn(40000, NODE4, NODE_PORT)[14..].to_vec()].concat(),
            vec![(STATS_OTHER, 1)],
        ),
        ("ipv4 cut inside its options", short_options, vec![(STATS_UNPARSED, 1)]),
        ("tcp cut short", short_tcp, vec![(STATS_UNPARSED, 1)]),
        ("ipv4 ihl < 5", ihl4, vec![(STATS_UNPARSED, 1)]),
        ("tcp data offset < 5", offset4, vec![(STATS_UNPARSED, 1)]),
        ("ipv6 ethertype, version 4", bad_ipv6, vec![(STATS_UNPARSED, 1)]),
        ("ipv6 cut inside the header", [eth(ETH_P_IPV6), vec![0x60; 20]].concat(), vec![(STATS_UNPARSED, 1)]),
    ];
    for (name, frame, mut moved) in cases {
        let (verdict, out, counters) = h.xdp(&frame);
        assert_eq!(verdict, XDP_PASS, "{name}: verdict");
        assert_eq!(out, frame, "{name}: the packet must not change");
        moved.extend([(STATS_TOTAL, 1), (STATS_PASS, 1)]);
        assert_moved(name, &counters, &moved);
        assert_eq!(counters.bytes[STATS_TOTAL as usize], frame.len() as u64, "{name}: bytes");
    }
    assert_eq!(h.conntrack_len(), (0, 0), "no flow recorded");
}

#[test]
fn node_port_flows_go_to_the_local_endpoint_and_stay_there() {
    require_root!();
    // Same address, other port (the router's own listener), and another address.
    for endpoint in ["10.0.0.2:80", "10.0.1.5:8080"] {
        let (h, _) = Harness::with_endpoints(&[endpoint, "[fd00::2]:80"]);
        for options in [0u8, 3] {
            let syn = ipv4_tcp(CLIENT4, 40000 + u16::from(options), NODE4, NODE_PORT, SYN, options, 0x4000);
            let (verdict, out, counters) = h.xdp(&syn);
            assert_eq!(verdict, XDP_PASS, "{endpoint}, {options} option words: verdict");
            let seen = inspect(&out);
            assert_eq!(seen.dst, sock(endpoint), "destination rewritten");
            assert_eq!(seen.src.ip(), ip(CLIENT4), "the client's address is kept");
            assert!(seen.checksums_ok, "{endpoint}, {options} option words: checksums after the rewrite");
            let tcp = (STATS_TCP, 1);
            assert_moved(
                "first packet",
                &counters,
                &[(STATS_TOTAL, 1), (STATS_IPV4, 1), tcp, (STATS_NAT, 1), (STATS_CT_MISS, 1)],
            );

            let ack = ipv4_tcp(CLIENT4, 40000 + u16::from(options), NODE4, NODE_PORT, ACK, options, 0x4000);
            let (verdict, out, counters) = h.xdp(&ack);
            assert_eq!(verdict, XDP_PASS);
            assert_eq!(inspect(&out).dst, sock(endpoint), "the flow keeps its endpoint");
            assert_moved(
                "next packet",
                &counters,
                &[(STATS_TOTAL, 1), (STATS_IPV4, 1), tcp, (STATS_NAT, 1), (STATS_CT_HIT, 1)],
            );
        }
        assert_eq!(h.conntrack_len(), (2, 2), "two flows, both directions");
        let key = FlowKey::tcp(ip(CLIENT4), 40000, ip(NODE4), NODE_PORT);
        let entry = h.nat.conntrack.get(&key, 0).expect("forward entry");
        assert_eq!(router_common::nat::ip_from_bytes(FAMILY_IPV4, entry.addr), Some(sock(endpoint).ip()));
        assert!(entry.last_seen_ns > 0 && entry.last_seen_ns <= monotonic_ns(), "kernel and userspace share the clock");
    }
}

#[test]
fn ipv6_node_port_flow_is_rewritten() {
    require_root!();
    let (h, _) = Harness::with_endpoints(&["10.0.0.2:80", "[fd00::5]:8443"]);
    let syn = ipv6_tcp(CLIENT6, 41000, NODE6, NODE_PORT, SYN, TCP);
    let (verdict, out, counters) = h.xdp(&syn);
    assert_eq!(verdict, XDP_PASS);
    let seen = inspect(&out);
    assert_eq!(seen.dst, sock("[fd00::5]:8443"));
    assert_eq!(seen.src, sock("[fd00::1]:41000"));
    assert!(seen.checksums_ok, "TCP checksum after the IPv6 rewrite");
    assert_eq!(counters.get(STATS_NAT), 1);
    assert_eq!(counters.get(STATS_IPV6), 1);
}

#[test]
fn no_local_endpoint_drops_new_flows() {
    require_root!();
    let (h, _) = Harness::with_endpoints(&[]);
    for frame in [ipv4_syn(40000, NODE4, NODE_PORT), ipv6_tcp(CLIENT6, 40000, NODE6, NODE_PORT, SYN, TCP)] {
        let (verdict, _, counters) = h.xdp(&frame);
        assert_eq!(verdict, XDP_DROP);
        assert_eq!(counters.get(STATS_DROP_NO_ENDPOINT), 1);
        assert_eq!(counters.get(STATS_CT_MISS), 1);
        assert_eq!(counters.get(STATS_PASS), 0);
    }
    assert_eq!(h.conntrack_len(), (0, 0));
}

/// The golden test: the endpoint the kernel picks for a new flow is the one userspace computes
/// with `router_common::hash::flow_hash` and the Maglev table it wrote.
#[test]
fn kernel_and_userspace_agree_on_each_flows_endpoint() {
    require_root!();
    let (h, desired) =
        Harness::with_endpoints(&["10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80", "[fd00::2]:80", "[fd00::3]:80"]);
    let mut chosen = BTreeSet::new();
    for port in 0..64u16 {
        for (client, node, family) in [(CLIENT4, NODE4, FAMILY_IPV4), (CLIENT6, NODE6, FAMILY_IPV6)] {
            let src_port = 20000 + port * 7;
            let frame = if family == FAMILY_IPV4 {
                ipv4_syn(src_port, node, NODE_PORT)
            } else {
                ipv6_tcp(client, src_port, node, NODE_PORT, SYN, TCP)
            };
            let (_, out, _) = h.xdp(&frame);
            let key = FlowKey::tcp(ip(client), src_port, ip(node), NODE_PORT);
            let slot = NodePortKey::tcp(NODE_PORT, family).slot(flow_hash(&key) % RING_SIZE);
            let expected = desired.slots[&slot];
            let expected = SocketAddr::new(
                router_common::nat::ip_from_bytes(family, expected.addr).expect("family"),
                expected.port,
            );
            assert_eq!(inspect(&out).dst, expected, "flow from port {src_port}");
            chosen.insert(expected);
        }
    }
    assert_eq!(chosen.len(), 5, "every endpoint got flows: {chosen:?}");
}

#[test]
fn replies_get_the_node_port_address_back() {
    require_root!();
    let (h, _) = Harness::with_endpoints(&["10.0.1.5:8080", "[fd00::5]:8080"]);
    let cases = [
        (
            ipv4_syn(40000, NODE4, NODE_PORT),
            ipv4_tcp("10.0.1.5", 8080, CLIENT4, 40000, SYN | ACK, 0, 0),
            "10.0.0.2:30080",
        ),
        (
            ipv6_tcp(CLIENT6, 40000, NODE6, NODE_PORT, SYN, TCP),
            ipv6_tcp("fd00::5", 8080, CLIENT6, 40000, SYN | ACK, TCP),
            "[fd00::2]:30080",
        ),
    ];
    for (syn, reply, node_port) in cases {
        let (verdict, _, _) = h.xdp(&syn);
        assert_eq!(verdict, XDP_PASS);
        let (ret, out, counters) = h.tc(&reply);
        assert_eq!(ret, TC_ACT_OK);
        let seen = inspect(&out);
        assert_eq!(seen.src, sock(node_port), "the client sees the nodePort address");
        assert!(seen.checksums_ok, "checksums after the reverse rewrite");
        assert_eq!(counters.get(STATS_REV_NAT), 1);
    }
    // A packet of no recorded flow leaves unchanged.
    let other = ipv4_tcp("10.0.1.5", 8080, CLIENT4, 40999, ACK, 0, 0);
    let (ret, out, counters) = h.tc(&other);
    assert_eq!((ret, out == other, counters.get(STATS_REV_NAT)), (TC_ACT_OK, true, 0));
}

#[test]
fn direct_syn_clears_a_stale_reverse_entry() {
    require_root!();
    let (h, _) = Harness::with_endpoints(&["10.0.0.2:80"]);
    let (verdict, _, _) = h.xdp(&ipv4_syn(40000, NODE4, NODE_PORT));
    assert_eq!(verdict, XDP_PASS);
    assert_eq!(h.conntrack_len(), (1, 1));
    // The same client port now connects straight to the endpoint (10.0.0.2:80).
    let (verdict, out, counters) = h.xdp(&ipv4_syn(40000, NODE4, 80));
    assert_eq!(verdict, XDP_PASS);
    assert_eq!(inspect(&out).dst, sock("10.0.0.2:80"));
    assert_eq!(counters.get(STATS_CT_STALE), 1);
    assert_eq!(h.conntrack_len(), (1, 0), "reverse entry removed");
}

#[test]
fn conntrack_evicts_the_least_recently_used_flows_when_full() {
    require_root!();
    let mut h = Harness::new(32);
    h.set_endpoints(&["10.0.0.2:80"]);
    let flows = 256u16;
    let mut nat = 0;
    for port in 0..flows {
        let (verdict, out, counters) = h.xdp(&ipv4_syn(30000 + port, NODE4, NODE_PORT));
        if verdict == XDP_PASS {
            assert_eq!(inspect(&out).dst, sock("10.0.0.2:80"));
            nat += counters.get(STATS_NAT);
        }
    }
    let (forward, reverse) = h.conntrack_len();
    eprintln!("lru: {nat} of {flows} flows rewritten; {forward} forward / {reverse} reverse entries left");
    assert!(forward <= 32 && reverse <= 32, "LRU maps stay within max_entries: {forward}/{reverse}");
    assert!(nat >= u64::from(flows) * 9 / 10, "evicting old flows makes room for new ones: {nat} of {flows}");
    let total = h.counters();
    assert_eq!(total.get(STATS_NAT) + total.get(STATS_DROP_CT_FULL), u64::from(flows));
}

#[test]
fn sync_writes_only_differences_and_the_conntrack_sweep_expires_flows() {
    require_root!();
    let (mut h, desired) = Harness::with_endpoints(&["10.0.0.2:80", "10.0.0.3:80"]);
    assert_eq!(h.nat.apply(&desired).expect("reapply"), Default::default(), "nothing to change");
    let fill = h.nat.fill().expect("fill levels");
    let slots = fill.iter().find(|f| f.name == "EP_SLOTS").expect("EP_SLOTS");
    assert_eq!(slots.entries, RING_SIZE, "one v4 table (no v6 endpoint, no v6 slots)");

    // Removing one endpoint rewrites only the slots it had, plus the count.
    let shrunk = h.set_endpoints(&["10.0.0.2:80"]);
    let moved = desired.slots.iter().filter(|(k, v)| shrunk.slots.get(k) != Some(v)).count();
    assert!(moved < RING_SIZE as usize * 2 / 3, "Maglev keeps the other endpoint's slots: {moved} moved");
    let grown = h.set_endpoints(&["10.0.0.2:80", "10.0.0.3:80"]);
    assert_eq!(grown, desired, "the same endpoints give the same tables");
    assert_eq!(h.nat.apply(&grown).expect("apply"), Default::default(), "set_endpoints already applied it");

    for port in [40000, 40001] {
        assert_eq!(h.xdp(&ipv4_syn(port, NODE4, NODE_PORT)).0, XDP_PASS);
    }
    assert_eq!(h.conntrack_len(), (2, 2));
    let timeouts =
        ConntrackTimeouts { idle: std::time::Duration::from_secs(3600), closing: std::time::Duration::from_secs(60) };
    let current = h.set_endpoints(&["10.0.0.2:80", "10.0.0.3:80"]);
    let now = monotonic_ns();
    assert_eq!(h.nat.sweep_conntrack(&current, now, &timeouts).expect("sweep").expired, 0, "fresh flows stay");
    let later = now + 3601 * 1_000_000_000;
    let report = h.nat.sweep_conntrack(&current, later, &timeouts).expect("sweep");
    assert_eq!(report.expired, 2);
    assert_eq!(h.conntrack_len(), (0, 0), "idle flows expire both ways");

    // A flow whose endpoint is no longer local goes at once.
    assert_eq!(h.xdp(&ipv4_syn(40002, NODE4, NODE_PORT)).0, XDP_PASS);
    let none = h.set_endpoints(&[]);
    assert_eq!(h.nat.sweep_conntrack(&none, monotonic_ns(), &timeouts).expect("sweep").expired, 1);
    assert_eq!(h.conntrack_len(), (0, 0));
}
