//! `steer_ingress` (the TC half of the steering datapath) run with `BPF_PROG_TEST_RUN` on the frames
//! of `steer_packet_tests` (root only). A test-run skb carries no checksum state of its own
//! (`CHECKSUM_NONE`), so the kernel's helpers update the checksum field in full: both checksums must
//! then equal a full recomputation, which proves the differences reach the helpers in the byte order
//! they sum in (a partial checksum takes the same pseudo-header difference).

use aya::{
    maps::{HashMap, MapData},
    programs::SchedClassifier,
    Ebpf,
};
use router_common::{
    nat::{FlowKey, FAMILY_IPV4},
    stats::{STATS_STEER_ANSWER, STATS_TC_STEERED, STATS_TC_STEER_DROP},
    steer::{
        setup::{SteerAnswer, STEER_ANSWERS, STEER_CONNECTING},
        SteerFlow, SteerTcp, STEER_FLOWS,
    },
};

use super::{
    counters::StatsMap,
    loader,
    packet_tests::{is_root, run},
    steer_packet_tests::{
        addr, flow_entries, inspect, key, pod_syn_ack, sack, timestamps, Segment, ACK, CLIENT, CLIENT_MAC, NODE_MAC,
        NODE_POD_SIDE_MAC, NODE_Q, PAYLOAD, POD, POD_IF_INDEX, POD_MAC, PSH_ACK, ROUTER, SYN,
    },
};

const PROGRAM: &str = "steer_ingress";
const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
            return;
        }
    };
}

struct Harness {
    ebpf: Ebpf,
    flows: HashMap<MapData, FlowKey, SteerFlow>,
    stats: StatsMap,
}

impl Harness {
    /// The object loaded (the verifier accepts `steer_ingress` there), with both directions of one
    /// flow steered with offsets `tcp`.
    fn steered(tcp: SteerTcp) -> Harness {
        let mut ebpf = loader::load(1024).expect("the object loads");
        let map = ebpf.take_map(STEER_FLOWS).expect("STEER_FLOWS in the object");
        let mut flows: HashMap<MapData, FlowKey, SteerFlow> = HashMap::try_from(map).expect("a hash map");
        for (key, flow) in flow_entries(tcp) {
            flows.insert(key, flow, 0).expect("insert entry");
        }
        let stats = StatsMap::new(ebpf.take_map(router_common::maps::XDP_STATS).expect("stats")).expect("stats map");
        Harness { ebpf, flows, stats }
    }

    fn run(&self, frame: &[u8]) -> (u32, Vec<u8>) {
        let program: &SchedClassifier =
            self.ebpf.program(PROGRAM).expect("steer_ingress").try_into().expect("a classifier");
        run(program, frame)
    }

    fn entry(&self, key: &FlowKey) -> SteerFlow {
        self.flows.get(key, 0).expect("entry")
    }
}

#[test]
fn both_directions_are_translated_with_checksums_a_receiver_accepts() {
    require_root!();
    // D = 0x200 across the wrap, T moves the pod's clock past the router's, scales differ.
    let h = Harness::steered(SteerTcp::new(0xffff_ff00, 0x0000_0100, 0x8000_0000, 0x0000_1000, 3, 11));
    let layouts = [
        vec![],
        timestamps(0xdead_beef, 0x7fff_fff0),
        [vec![1], timestamps(9, 8), vec![1], sack(&[(0xffff_ff10, 0xffff_ff80)])].concat(),
    ];
    for options in layouts {
        let to_pod =
            Segment { ack: 0xffff_ff01, flags: PSH_ACK, options: options.clone(), ..Segment::new(CLIENT, ROUTER) };
        let (verdict, out) = h.run(&to_pod.frame());
        let seen = inspect(&out);
        assert_eq!(verdict, TC_ACT_REDIRECT, "towards the pod: redirected ({options:?})");
        assert_eq!((seen.src, seen.dst), (addr(NODE_Q), addr(POD)));
        assert_eq!((seen.src_mac, seen.dst_mac), (NODE_POD_SIDE_MAC, POD_MAC));
        assert_eq!(seen.ack, 0x0000_0101, "ack + D");
        assert!(seen.ip_checksum_ok && seen.tcp_checksum_ok, "checksums a receiver accepts: {seen:?}");
        assert_eq!(seen.payload, PAYLOAD);

        let to_client =
            Segment { seq: 0x0000_0105, window: 1000, options: options.clone(), ..Segment::new(POD, NODE_Q) };
        let (verdict, out) = h.run(&to_client.frame());
        let seen = inspect(&out);
        assert_eq!(verdict, TC_ACT_REDIRECT, "towards the client: redirected ({options:?})");
        assert_eq!((seen.src, seen.dst), (addr(ROUTER), addr(CLIENT)));
        assert_eq!((seen.src_mac, seen.dst_mac), (NODE_MAC, CLIENT_MAC));
        assert_eq!(seen.seq, 0xffff_ff05, "seq - D");
        assert_eq!(seen.window, 65_535, "(1000 << 11) >> 3, clamped");
        assert!(seen.ip_checksum_ok && seen.tcp_checksum_ok, "checksums a receiver accepts: {seen:?}");
    }
    let to_pod = h.entry(&key(CLIENT, ROUTER));
    assert_eq!((to_pod.packets, to_pod.dropped, to_pod.if_index), (3, 0, POD_IF_INDEX));
    assert_eq!(h.stats.read().expect("stats").get(STATS_TC_STEERED), 6);
}

#[test]
fn a_steered_flows_syn_is_dropped_and_other_packets_are_left_alone() {
    require_root!();
    let h = Harness::steered(SteerTcp::new(1, 2, 3, 4, 7, 7));
    let syn = Segment { flags: SYN | ACK, ..Segment::new(POD, NODE_Q) }.frame();
    let (verdict, out) = h.run(&syn);
    assert_eq!((verdict, out == syn), (TC_ACT_SHOT, true), "a steered flow's SYN: dropped unchanged");
    assert_eq!(h.entry(&key(POD, NODE_Q)).dropped, 1);
    let other = Segment { flags: ACK, ..Segment::new(([192, 0, 2, 99], 4000), ROUTER) }.frame();
    let (verdict, out) = h.run(&other);
    assert_eq!((verdict, out == other), (TC_ACT_OK, true), "no steered flow: unchanged, on its way");
    let stats = h.stats.read().expect("stats");
    assert_eq!((stats.get(STATS_TC_STEER_DROP), stats.get(STATS_TC_STEERED)), (1, 0));
}

#[test]
fn the_pods_syn_ack_to_a_connecting_leg_is_recorded_and_dropped() {
    require_root!();
    let mut h = Harness::steered(SteerTcp::new(1, 2, 3, 4, 7, 7));
    let pod_side = key(POD, NODE_Q);
    let connecting = SteerFlow { state: STEER_CONNECTING, family: FAMILY_IPV4, ..SteerFlow::default() };
    h.flows.insert(pod_side, connecting, 0).expect("insert connecting entry");
    let (frame, expected) = pod_syn_ack();
    let (verdict, out) = h.run(&frame);
    assert_eq!((verdict, out == frame), (TC_ACT_SHOT, true), "dropped unchanged: no socket owns Q");
    let answers: HashMap<MapData, FlowKey, SteerAnswer> =
        HashMap::try_from(h.ebpf.take_map(STEER_ANSWERS).expect("STEER_ANSWERS")).expect("a hash map");
    let recorded = answers.get(&pod_side, 0).expect("the answer recorded");
    assert!(recorded.seen_ns > 0, "a kernel time");
    assert_eq!(recorded, SteerAnswer { seen_ns: recorded.seen_ns, if_index: recorded.if_index, ..expected });
    let stats = h.stats.read().expect("stats");
    assert_eq!((stats.get(STATS_STEER_ANSWER), stats.get(STATS_TC_STEER_DROP)), (1, 1));
}
