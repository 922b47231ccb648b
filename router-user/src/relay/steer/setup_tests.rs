//! The offload of one connection against an in-memory datapath, a scripted pod behind a fake raw
//! socket, and a fake router socket: the entries written, the segments sent, and every fallback's
//! clean-up.

use std::cell::Cell;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use router_common::nat::{FlowKey, FAMILY_IPV4, FAMILY_IPV6};
use router_common::steer::setup::{
    SteerAnswer, SteerSyn, ANSWER_RST, ANSWER_SYN_ACK, STEER_CONNECTING, SYN_OPT_MSS, SYN_OPT_SACK_OK,
    SYN_OPT_TIMESTAMPS, SYN_OPT_WSCALE,
};
use router_common::steer::{STEER_RST, STEER_STEERED, STEER_TO_CLIENT, STEER_TO_POD};

use super::datapath::fake::FakeDatapath;
use super::entries::{self, RouterSide};
use super::setup::{RouterLeg, SteerRequest};
use super::waiters::AnswerWaiters;
use super::{Fallback, PodInterfaces, SegmentSender, SetupTiming, SteerConfig, Steering};
use crate::metrics::Metrics;
use crate::xdp::{RouteTo, XdpError};

const CLIENT: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40_000));
const LOCAL: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 443));
const POD: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 1, 0, 2), 8443));
const NODE_TOWARDS_POD: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1));
/// The same flow over IPv6 (ULA addresses).
const fn v6(net: u16, host: u16, port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::new(0xfd00, 0x211, net, 0, 0, 0, 0, host), port, 0, 0))
}
const CLIENT6: SocketAddr = v6(0, 1, 40_000);
const LOCAL6: SocketAddr = v6(0, 2, 443);
const POD6: SocketAddr = v6(1, 2, 8443);
const NODE6_TOWARDS_POD: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0x211, 1, 0, 0, 0, 0, 1));
/// The interface the fake FIB reaches the pod by.
const POD_IF_INDEX: u32 = 7;
const IC: u32 = 0xffff_ff00;
const IP: u32 = 0x1234_5678;
const IR: u32 = 0x0abc_def0;

/// How the scripted pod answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pod {
    /// SYN-ACK, then acknowledges every byte it gets.
    Accepts,
    /// Answers the SYN with a RST.
    Refuses,
    /// Never answers.
    Silent,
    /// SYN-ACK, then never acknowledges; `packets` of its own reached the client meanwhile.
    NeverAcks { packets: u64 },
}

/// A decoded segment the setup sent.
#[derive(Clone, Debug)]
struct Sent {
    src: IpAddr,
    dst: IpAddr,
    src_port: u16,
    dst_port: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: Vec<u8>,
}

fn decode(packet: &[u8]) -> Sent {
    let (src, dst, tcp) = if packet[0] >> 4 == 6 {
        let ip = |o: usize| IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&packet[o..o + 16]).expect("16 bytes")));
        (ip(8), ip(24), &packet[40..])
    } else {
        let ip = |o: usize| IpAddr::V4(Ipv4Addr::new(packet[o], packet[o + 1], packet[o + 2], packet[o + 3]));
        (ip(12), ip(16), &packet[20..])
    };
    let u32_at = |o: usize| u32::from_be_bytes([tcp[o], tcp[o + 1], tcp[o + 2], tcp[o + 3]]);
    let header = usize::from(tcp[12] >> 4) * 4;
    Sent {
        src,
        dst,
        src_port: u16::from_be_bytes([tcp[0], tcp[1]]),
        dst_port: u16::from_be_bytes([tcp[2], tcp[3]]),
        seq: u32_at(4),
        ack: u32_at(8),
        flags: tcp[13],
        payload: tcp[header..].to_vec(),
    }
}

/// The raw socket and the pod behind it, writing into the fake maps what the datapath would.
struct ScriptedPod {
    behaviour: Pod,
    maps: Arc<FakeDatapath>,
    waiters: OnceLock<Arc<AnswerWaiters>>,
    sent: Mutex<Vec<Sent>>,
}

impl SegmentSender for ScriptedPod {
    fn send(&self, dst: IpAddr, packet: &[u8]) -> io::Result<()> {
        let segment = decode(packet);
        assert_eq!(segment.dst, dst, "sent to the packet's own destination");
        self.sent.lock().expect("sent").push(segment.clone());
        let key = FlowKey::tcp(segment.dst, segment.dst_port, segment.src, segment.src_port);
        let mut maps = self.maps.lock();
        let answer_flags = match self.behaviour {
            Pod::Silent => return Ok(()),
            Pod::Refuses => ANSWER_RST,
            _ => ANSWER_SYN_ACK,
        };
        if segment.flags == super::segment::TCP_SYN {
            let entry = maps.flows.get(&key).copied().expect("the SYN goes out after the connecting entry");
            assert_eq!(entry.state, STEER_CONNECTING, "the pod-side entry is connecting while the SYN is out");
            maps.answers.insert(key, answer(segment.seq.wrapping_add(1), answer_flags));
            drop(maps);
            if let Some(waiters) = self.waiters.get() {
                waiters.wake(&key);
            }
            return Ok(());
        }
        if let Some(entry) = maps.flows.get_mut(&key) {
            match self.behaviour {
                Pod::Accepts if !segment.payload.is_empty() => {
                    let end = segment.seq.wrapping_add(segment.payload.len() as u32);
                    if end.wrapping_sub(entry.acked) as i32 > 0 {
                        entry.acked = end;
                    }
                }
                Pod::NeverAcks { packets } => entry.packets = packets,
                _ => {}
            }
        }
        Ok(())
    }

    fn route_towards(&self, pod: IpAddr) -> io::Result<RouteTo> {
        let source = if pod.is_ipv4() { NODE_TOWARDS_POD } else { NODE6_TOWARDS_POD };
        Ok(RouteTo { source, if_index: POD_IF_INDEX })
    }
}

fn syn() -> SteerSyn {
    let mut arrival_dst_addr = [0u8; 16];
    arrival_dst_addr[..4].copy_from_slice(&[10, 0, 0, 2]);
    SteerSyn {
        seen_ns: 1,
        isn: IC,
        tsval: 4242,
        arrival_dst_addr,
        arrival_dst_port: LOCAL.port(),
        mss: 1460,
        wscale: 7,
        options: SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS,
        family: FAMILY_IPV4,
        _pad: 0,
        if_index: 2,
        peer_mac: [2, 0, 0, 0, 0, 1],
        local_mac: [2, 0, 0, 0, 0, 2],
    }
}

/// C's SYN to `LOCAL6`, as `xdp_front` records an IPv6 one.
fn syn6() -> SteerSyn {
    let IpAddr::V6(local) = LOCAL6.ip() else { unreachable!("an IPv6 constant") };
    SteerSyn { arrival_dst_addr: local.octets(), family: FAMILY_IPV6, ..syn() }
}

fn answer(ack: u32, flags: u8) -> SteerAnswer {
    SteerAnswer {
        seen_ns: 2,
        isn: IP,
        ack,
        tsval: 99,
        tsecr: 4242,
        window: 65_160,
        mss: 1400,
        wscale: 9,
        options: SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS,
        flags,
        _pad: 0,
        if_index: 3,
        peer_mac: [2, 0, 0, 0, 1, 1],
        local_mac: [2, 0, 0, 0, 1, 2],
    }
}

/// R: repair calls recorded, its numbers as given.
struct FakeLeg {
    side: RouterSide,
    repair: Cell<bool>,
    repair_offs: Cell<u32>,
    /// Bytes that arrive at R after its first look (a late segment of C's).
    late_bytes: u32,
    looks: Cell<u32>,
}

impl FakeLeg {
    fn new(hello_len: u32) -> FakeLeg {
        let side = RouterSide {
            send_next: IR.wrapping_add(1),
            receive_next: IC.wrapping_add(1).wrapping_add(hello_len),
            ts_now: 777_000,
            wscale_router: 7,
            wscale_client: 7,
        };
        FakeLeg { side, repair: Cell::new(false), repair_offs: Cell::new(0), late_bytes: 0, looks: Cell::new(0) }
    }
}

impl RouterLeg for FakeLeg {
    fn repair_on(&self) -> io::Result<()> {
        self.repair.set(true);
        Ok(())
    }
    fn repair_off(&self) -> io::Result<()> {
        self.repair.set(false);
        self.repair_offs.set(self.repair_offs.get() + 1);
        Ok(())
    }
    fn side(&self) -> io::Result<RouterSide> {
        let looks = self.looks.get();
        self.looks.set(looks + 1);
        let late = if looks == 0 { 0 } else { self.late_bytes };
        Ok(RouterSide { receive_next: self.side.receive_next.wrapping_add(late), ..self.side })
    }
}

/// The pod-facing interfaces: records each interface asked for with how many segments had left by then,
/// and refuses to attach when told to.
struct Interfaces {
    pod: Arc<ScriptedPod>,
    refuse: bool,
    watched: Mutex<Vec<(u32, usize)>>,
}

impl PodInterfaces for Interfaces {
    fn watch(&self, if_index: u32) -> Result<(), XdpError> {
        let sent = self.pod.sent.lock().expect("sent").len();
        self.watched.lock().expect("watched").push((if_index, sent));
        if self.refuse {
            return Err(XdpError::UnknownInterface { iface: format!("#{if_index}") });
        }
        Ok(())
    }

    fn prune(&self) {}
}

struct Harness {
    steering: Steering,
    maps: Arc<FakeDatapath>,
    pod: Arc<ScriptedPod>,
    interfaces: Arc<Interfaces>,
}

fn harness(behaviour: Pod, flow_capacity: usize, ports: std::ops::RangeInclusive<u16>) -> Harness {
    harness_with(behaviour, flow_capacity, ports, false)
}

fn harness_with(
    behaviour: Pod,
    flow_capacity: usize,
    ports: std::ops::RangeInclusive<u16>,
    refuse_interface: bool,
) -> Harness {
    let maps = Arc::new(FakeDatapath::with_capacity(flow_capacity));
    maps.lock().syns.insert(entries::key(CLIENT, LOCAL), syn());
    maps.lock().syns.insert(entries::key(CLIENT6, LOCAL6), syn6());
    let pod =
        Arc::new(ScriptedPod { behaviour, maps: maps.clone(), waiters: OnceLock::new(), sent: Mutex::new(vec![]) });
    let interfaces = Arc::new(Interfaces { pod: pod.clone(), refuse: refuse_interface, watched: Mutex::new(vec![]) });
    let config = SteerConfig { ports, https_port: 443, proxy_protocol: false };
    let timing = SetupTiming {
        syn_wait: Duration::from_millis(30),
        syn_tries: 2,
        replay_wait: Duration::from_millis(20),
        replay_tries: 2,
    };
    let steering =
        Steering::new(maps.clone(), pod.clone(), interfaces.clone(), &config, Arc::new(Metrics::default()), timing);
    let _ = pod.waiters.set(steering.waiters.clone());
    Harness { steering, maps, pod, interfaces }
}

fn request(hello: &[u8]) -> SteerRequest<'_> {
    SteerRequest { client: CLIENT, local: LOCAL, pod: POD, hello, tunnel_timeout: Duration::from_secs(3600) }
}

fn q(port: u16) -> SocketAddr {
    SocketAddr::new(NODE_TOWARDS_POD, port)
}

#[tokio::test]
async fn an_accepting_pod_gets_the_hello_and_both_entries_are_steered() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let hello: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let leg = FakeLeg::new(3000);
    h.steering.offload(&leg, &request(&hello)).await.expect("steered");

    let pod_key = entries::key(POD, q(61_000));
    let client_key = entries::key(CLIENT, LOCAL);
    let maps = h.maps.lock();
    let to_client = maps.flows.get(&pod_key).copied().expect("TO_CLIENT entry");
    let to_pod = maps.flows.get(&client_key).copied().expect("TO_POD entry");
    assert_eq!((to_client.state, to_client.direction), (STEER_STEERED, STEER_TO_CLIENT));
    assert_eq!((to_pod.state, to_pod.direction), (STEER_STEERED, STEER_TO_POD));
    assert_eq!(to_client.reply_key(), client_key);
    assert_eq!(to_pod.reply_key(), pod_key);
    assert_eq!(to_client.tcp.seq_offset, IP.wrapping_sub(IR), "D = Ip - Ir");
    assert_eq!(to_client.tcp.ts_offset, 777_001 - 99, "T = (Tr_last + 1) - Tp0");
    assert!(!maps.syns.contains_key(&client_key), "the SYN record is consumed");
    assert!(maps.answers.is_empty(), "the answer is consumed");
    drop(maps);
    assert!(leg.repair.get(), "R stays in repair mode, so its close is silent");
    assert_eq!(leg.repair_offs.get(), 0);

    let sent = h.pod.sent.lock().expect("sent").clone();
    let syn = &sent[0];
    assert_eq!(syn.flags, super::segment::TCP_SYN);
    assert_eq!((syn.src, syn.src_port, syn.dst, syn.dst_port), (NODE_TOWARDS_POD, 61_000, POD.ip(), POD.port()));
    assert_eq!(syn.seq, IC, "leg B opens with the client's ISN");
    let data: Vec<&Sent> = sent.iter().filter(|s| !s.payload.is_empty()).collect();
    assert_eq!(data.len(), 3, "3000 bytes at 1400 - 12 per segment");
    assert!(data.iter().all(|s| s.payload.len() <= 1388));
    assert!(data.iter().all(|s| s.ack == IP.wrapping_add(1)));
    assert_eq!(data[0].seq, IC.wrapping_add(1));
    assert_eq!(data[1].seq, IC.wrapping_add(1).wrapping_add(1388), "sequence wraps past 2^32");
    let replayed: Vec<u8> = data.iter().flat_map(|s| s.payload.clone()).collect();
    assert_eq!(replayed, hello, "the held bytes, in order");
    assert_eq!(h.steering.flows.lock().expect("flows").len(), 1, "watched by the sweep");
}

#[tokio::test]
async fn steer_ingress_is_asked_for_on_the_pods_interface_before_leg_b_opens() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    h.steering.offload(&leg, &request(&[1; 10])).await.expect("steered");
    assert_eq!(*h.interfaces.watched.lock().expect("watched"), [(POD_IF_INDEX, 0)], "once, before any segment");
}

#[tokio::test]
async fn an_interface_steer_ingress_cannot_reach_falls_back_before_anything_is_sent() {
    let h = harness_with(Pod::Accepts, 16, 61_000..=61_009, true);
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::PodInterface));
    assert!(h.pod.sent.lock().expect("sent").is_empty(), "no SYN sent");
    assert!(h.maps.lock().flows.is_empty());
    assert_eq!(h.steering.ports.lock().expect("ports").in_use(), 0, "port freed");
    assert!(!leg.repair.get());
    assert_eq!(Fallback::PodInterface.label(), "pod_interface");
}

#[tokio::test]
async fn no_recorded_syn_falls_back_without_writing_anything() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    h.maps.lock().syns.clear();
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::NoSyn));
    assert!(h.maps.lock().flows.is_empty());
    assert!(h.pod.sent.lock().expect("sent").is_empty(), "no SYN sent");
    assert!(!leg.repair.get());
}

#[tokio::test]
async fn a_full_flow_map_falls_back_and_frees_the_port() {
    let h = harness(Pod::Accepts, 0, 61_000..=61_000);
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::MapFull));
    assert_eq!(h.steering.ports.lock().expect("ports").in_use(), 0, "port freed");
}

#[tokio::test]
async fn an_exhausted_port_range_falls_back_no_port() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_000);
    assert_eq!(h.steering.take_port(), Some(61_000));
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::NoPort));
    assert_eq!(Fallback::NoPort.label(), "no_port");
}

#[tokio::test]
async fn a_refusing_pod_falls_back_and_r_is_untouched() {
    let h = harness(Pod::Refuses, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::PodRst));
    assert!(h.maps.lock().flows.is_empty(), "the connecting entry is removed");
    assert!(h.maps.lock().answers.is_empty());
    assert!(!leg.repair.get());
    assert_eq!(h.steering.ports.lock().expect("ports").in_use(), 0);
}

#[tokio::test]
async fn a_silent_pod_gets_two_syns_then_falls_back() {
    let h = harness(Pod::Silent, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::NoAnswer));
    let sent = h.pod.sent.lock().expect("sent").clone();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|s| s.flags == super::segment::TCP_SYN && s.seq == IC));
    assert!(h.maps.lock().flows.is_empty());
}

#[tokio::test]
async fn bytes_beyond_the_hello_in_r_fall_back_and_reset_the_pod() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(15);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::LeftoverBytes));
    assert!(!leg.repair.get(), "repair mode turned off again");
    assert_eq!(leg.repair_offs.get(), 1);
    let sent = h.pod.sent.lock().expect("sent").clone();
    let rst = sent.last().expect("a RST");
    assert_eq!(rst.flags & super::segment::TCP_RST, super::segment::TCP_RST);
    assert_eq!(rst.seq, IC.wrapping_add(1), "at the sequence number the pod expects");
    assert!(h.maps.lock().flows.is_empty());
}

#[tokio::test]
async fn a_hello_never_acknowledged_falls_back_while_nothing_reached_the_client() {
    let h = harness(Pod::NeverAcks { packets: 0 }, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::NotAcked));
    assert!(h.maps.lock().flows.is_empty(), "both entries removed");
    assert!(!leg.repair.get());
    assert!(h.steering.flows.lock().expect("flows").is_empty());
}

#[tokio::test]
async fn a_hello_never_acknowledged_after_pod_packets_reached_the_client_is_lost() {
    let h = harness(Pod::NeverAcks { packets: 2 }, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    let result = h.steering.offload(&leg, &request(&[1; 10])).await;
    assert_eq!(result, Err(Fallback::ReplayUnacked));
    assert!(Fallback::ReplayUnacked.is_fatal());
    assert!(leg.repair.get(), "left in repair mode for the caller's reset");
    assert!(h.maps.lock().flows.is_empty());
}

#[tokio::test]
async fn mixed_families_are_not_steered_and_v4_mapped_addresses_are_ipv4() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    let mut to_v6_pod = request(&[1; 10]);
    to_v6_pod.pod = POD6;
    assert_eq!(h.steering.offload(&leg, &to_v6_pod).await, Err(Fallback::MixedFamily));
    let from_v6_client = SteerRequest { client: CLIENT6, local: LOCAL6, ..request(&[1; 10]) };
    assert_eq!(h.steering.offload(&leg, &from_v6_client).await, Err(Fallback::MixedFamily));
    assert!(h.pod.sent.lock().expect("sent").is_empty(), "nothing sent for either");
    let mut mapped = request(&[1; 10]);
    mapped.client = "[::ffff:10.0.0.1]:40000".parse().expect("v4-mapped");
    mapped.local = "[::ffff:10.0.0.2]:443".parse().expect("v4-mapped");
    assert!(h.steering.offload(&leg, &mapped).await.is_ok(), "a dual-stack listener's v4-mapped addresses are IPv4");
}

#[tokio::test]
async fn an_ipv6_flow_is_steered_from_the_nodes_ipv6_address() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let hello: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let leg = FakeLeg::new(3000);
    let request = SteerRequest { client: CLIENT6, local: LOCAL6, pod: POD6, ..request(&hello) };
    h.steering.offload(&leg, &request).await.expect("steered");

    let q6 = SocketAddr::new(NODE6_TOWARDS_POD, 61_000);
    let pod_key = entries::key(POD6, q6);
    let client_key = entries::key(CLIENT6, LOCAL6);
    let maps = h.maps.lock();
    let to_client = maps.flows.get(&pod_key).copied().expect("TO_CLIENT entry under P -> Q, both IPv6");
    let to_pod = maps.flows.get(&client_key).copied().expect("TO_POD entry under C -> the address C dialled");
    assert_eq!((to_client.family, to_pod.family), (FAMILY_IPV6, FAMILY_IPV6));
    assert_eq!((to_client.state, to_pod.state), (STEER_STEERED, STEER_STEERED));
    assert_eq!(to_client.reply_key(), client_key);
    assert_eq!(to_pod.reply_key(), pod_key);
    assert!(!maps.syns.contains_key(&client_key), "the IPv6 SYN record is consumed");
    drop(maps);
    let sent = h.pod.sent.lock().expect("sent").clone();
    assert!(sent.len() >= 4, "SYN and the replayed hello: {sent:?}");
    for segment in &sent {
        assert_eq!((segment.src, segment.dst), (q6.ip(), POD6.ip()), "every segment from Q6 to P6");
        assert_eq!((segment.src_port, segment.dst_port), (61_000, 8443));
    }
    assert_eq!(sent[0].flags, super::segment::TCP_SYN);
    assert_eq!(sent[0].seq, IC, "leg B starts at Ic");
    let replayed: Vec<u8> = sent[1..].iter().flat_map(|s| s.payload.clone()).collect();
    assert_eq!(replayed, hello, "the whole hello replayed once");
}

#[tokio::test]
async fn the_sweep_removes_a_reset_flow_and_frees_its_port() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    h.steering.offload(&leg, &request(&[1; 10])).await.expect("steered");
    let pod_key = entries::key(POD, q(61_000));
    let last_seen = h.maps.lock().flows[&pod_key].last_seen_ns;
    assert_eq!(h.steering.sweep(last_seen + 1_000_000), 0, "a live flow stays");
    h.maps.lock().flows.get_mut(&pod_key).expect("entry").seen |= STEER_RST;
    assert_eq!(h.steering.sweep(last_seen + 2_000_000_000), 1);
    assert!(h.maps.lock().flows.is_empty(), "both entries gone");
    assert_eq!(h.steering.ports.lock().expect("ports").in_use(), 0, "port freed");
    assert_eq!(h.steering.metrics.xdp_steered_flows.get(), 0, "gauge back to 0");
}

/// Sets its flag when dropped.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn what_the_caller_holds_for_a_steered_flow_lives_until_the_sweep_removes_it() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    let pod_key = h.steering.offload(&leg, &request(&[1; 10])).await.expect("steered");
    assert_eq!(pod_key, entries::key(POD, q(61_000)), "watched under P -> Q");
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    h.steering.hold_while_watched(&pod_key, Box::new(DropFlag(dropped.clone())));
    let last_seen = h.maps.lock().flows[&pod_key].last_seen_ns;
    assert_eq!(h.steering.sweep(last_seen + 1_000_000), 0, "a live flow stays");
    assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst), "held while the flow lives");
    h.maps.lock().flows.get_mut(&pod_key).expect("entry").seen |= STEER_RST;
    assert_eq!(h.steering.sweep(last_seen + 2_000_000_000), 1);
    assert!(dropped.load(std::sync::atomic::Ordering::SeqCst), "dropped with the flow");

    // A flow the sweep removed already: the hold is dropped at once.
    let late = Arc::new(std::sync::atomic::AtomicBool::new(false));
    h.steering.hold_while_watched(&pod_key, Box::new(DropFlag(late.clone())));
    assert!(late.load(std::sync::atomic::Ordering::SeqCst), "nothing to hold it for");
}

#[tokio::test]
async fn an_idle_flow_is_removed_and_reset_at_the_pod() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    let idle = SteerRequest { tunnel_timeout: Duration::from_secs(30), ..request(&[1; 10]) };
    h.steering.offload(&leg, &idle).await.expect("steered");
    let pod_key = entries::key(POD, q(61_000));
    let entry = h.maps.lock().flows[&pod_key];
    let sent_before = h.pod.sent.lock().expect("sent").len();
    assert_eq!(h.steering.sweep(entry.last_seen_ns + 29_000_000_000), 0, "not idle long enough");
    assert_eq!(h.steering.sweep(entry.last_seen_ns + 30_000_000_000), 1);
    assert!(h.maps.lock().flows.is_empty(), "both entries gone");
    let sent = h.pod.sent.lock().expect("sent");
    assert_eq!(sent.len(), sent_before + 1, "one segment more: the RST");
    let rst = sent.last().expect("the RST");
    assert_eq!((rst.src, rst.src_port, rst.dst, rst.dst_port), (q(61_000).ip(), 61_000, POD.ip(), POD.port()));
    assert_eq!(rst.flags, super::segment::TCP_RST);
    assert_eq!(rst.seq, entry.acked, "at the sequence number P acknowledged last");
    assert_eq!(rst.seq, IC.wrapping_add(1 + 10), "after the whole ClientHello");
}

#[tokio::test]
async fn a_closed_flow_is_removed_without_a_reset() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg::new(10);
    h.steering.offload(&leg, &request(&[1; 10])).await.expect("steered");
    let pod_key = entries::key(POD, q(61_000));
    let client_key = entries::key(CLIENT, LOCAL);
    let last_seen = {
        let mut maps = h.maps.lock();
        for key in [pod_key, client_key] {
            maps.flows.get_mut(&key).expect("entry").seen |= router_common::steer::STEER_FIN;
        }
        maps.flows[&pod_key].last_seen_ns
    };
    let sent_before = h.pod.sent.lock().expect("sent").len();
    assert_eq!(h.steering.sweep(last_seen + 6_000_000_000), 1);
    assert_eq!(h.pod.sent.lock().expect("sent").len(), sent_before, "nothing sent: both sides closed");
}

#[tokio::test]
async fn bytes_reaching_r_while_the_entries_are_written_fall_back() {
    let h = harness(Pod::Accepts, 16, 61_000..=61_009);
    let leg = FakeLeg { late_bytes: 5, ..FakeLeg::new(10) };
    assert_eq!(h.steering.offload(&leg, &request(&[1; 10])).await, Err(Fallback::LeftoverBytes));
    assert!(h.maps.lock().flows.is_empty(), "both entries removed: C's packets go to R again");
    assert!(!leg.repair.get());
    assert!(h.pod.sent.lock().expect("sent").iter().all(|s| s.payload.is_empty()), "nothing replayed");
}
