//! IPv6 steered flows through the real programs with `BPF_PROG_TEST_RUN` (root only; no interface,
//! no pins): `steer_translate` (the XDP translation stage) and `steer_ingress` (its TC half) on
//! Ethernet/IPv6/TCP frames, both directions, with the TCP checksum recomputed from scratch over the
//! IPv6 pseudo-header (RFC 8200 section 8.1); the XDP hand-off of a segment whose checksum field holds
//! only the pseudo-header sum (what a sender with TX checksum offload leaves there) and of a long
//! frame; packets with an extension header before TCP left alone by both; and `xdp_front`'s records
//! of an IPv6 client SYN and of the pod's IPv6 SYN-ACK. Expected values are written out as numbers.

use std::net::Ipv6Addr;

use aya::{
    maps::{HashMap, MapData},
    programs::{SchedClassifier, Xdp},
    Ebpf,
};
use router_common::{
    checksum::{fold, sum_bytes},
    nat::{FlowKey, FAMILY_IPV6, PROTO_TCP},
    steer::{
        options::walk,
        setup::{
            SteerAnswer, SteerPortKey, SteerSyn, ANSWER_SYN_ACK, STEER_ANSWERS, STEER_CONNECTING, STEER_PORTS,
            STEER_SYNS, SYN_OPT_MSS, SYN_OPT_SACK_OK, SYN_OPT_TIMESTAMPS, SYN_OPT_WSCALE,
        },
        SteerFlow, SteerTcp, STEER_FLOWS, STEER_STEERED, STEER_TO_CLIENT, STEER_TO_POD,
    },
};

use super::{
    loader,
    packet_tests::{is_root, run},
    steer_packet_tests::{
        sack, tcp_segment, timestamps, ACK, ARRIVAL_IF_INDEX, CLIENT_MAC, NODE_MAC, NODE_POD_SIDE_MAC, NOP, PAYLOAD,
        POD_IF_INDEX, POD_MAC, PSH_ACK, SYN, XDP_DROP, XDP_PASS, XDP_REDIRECT, XDP_TX,
    },
};

const TC_ACT_OK: u32 = 0;
const TC_ACT_REDIRECT: u32 = 7;
const HOP_LIMIT: u8 = 61;
/// IPv6 next-header value of the hop-by-hop options header.
const HOP_BY_HOP: u8 = 0;

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
            return;
        }
    };
}

/// An IPv6 address in the ULA test prefix fd00:211::/32.
const fn ula(net: u16, host: u16) -> [u8; 16] {
    Ipv6Addr::new(0xfd00, 0x211, net, 0, 0, 0, 0, host).octets()
}

/// C, the address and port it dialled (R), Q (node address and reserved port towards the pod), P.
const CLIENT: ([u8; 16], u16) = (ula(0, 1), 51_000);
const ROUTER: ([u8; 16], u16) = (ula(0, 2), 443);
const NODE_Q: ([u8; 16], u16) = (ula(1, 1), 61_001);
const POD: ([u8; 16], u16) = (ula(1, 2), 8443);

fn key(src: ([u8; 16], u16), dst: ([u8; 16], u16)) -> FlowKey {
    FlowKey {
        src_addr: src.0,
        dst_addr: dst.0,
        src_port: src.1,
        dst_port: dst.1,
        family: FAMILY_IPV6,
        protocol: PROTO_TCP,
        _pad: [0; 2],
    }
}

/// Both directions' entries of one steered IPv6 flow with offsets `tcp`.
fn flow_entries(tcp: SteerTcp) -> [(FlowKey, SteerFlow); 2] {
    let entry = |to: FlowKey, if_index, (src_mac, dst_mac), direction| SteerFlow {
        src_addr: to.src_addr,
        dst_addr: to.dst_addr,
        src_port: to.src_port,
        dst_port: to.dst_port,
        if_index,
        src_mac,
        dst_mac,
        family: FAMILY_IPV6,
        direction,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    };
    [
        (key(CLIENT, ROUTER), entry(key(NODE_Q, POD), POD_IF_INDEX, (NODE_POD_SIDE_MAC, POD_MAC), STEER_TO_POD)),
        (key(POD, NODE_Q), entry(key(ROUTER, CLIENT), ARRIVAL_IF_INDEX, (NODE_MAC, CLIENT_MAC), STEER_TO_CLIENT)),
    ]
}

/// One Ethernet/IPv6/TCP frame to build.
#[derive(Clone)]
struct Segment6 {
    src: ([u8; 16], u16),
    dst: ([u8; 16], u16),
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    options: Vec<u8>,
    /// A hop-by-hop options header (8 bytes of padding) before TCP.
    hop_by_hop: bool,
    /// Payload bytes after the standard one, to make long frames.
    padding: usize,
}

impl Segment6 {
    fn new(src: ([u8; 16], u16), dst: ([u8; 16], u16)) -> Segment6 {
        Segment6 {
            src,
            dst,
            seq: 1000,
            ack: 2000,
            flags: ACK,
            window: 512,
            options: vec![],
            hop_by_hop: false,
            padding: 0,
        }
    }

    /// The TCP segment alone, with a complete checksum.
    fn segment(&self) -> Vec<u8> {
        let mut seg =
            tcp_segment((self.src.1, self.dst.1), (self.seq, self.ack), self.flags, self.window, &self.options);
        seg.resize(seg.len() + self.padding, 0xab);
        let check = tcp6_checksum(&seg, &self.src.0, &self.dst.0);
        seg[16..18].copy_from_slice(&check.to_be_bytes());
        seg
    }

    fn frame_of(&self, seg: &[u8]) -> Vec<u8> {
        let ext: &[u8] = if self.hop_by_hop { &[PROTO_TCP, 0, 1, 4, 0, 0, 0, 0] } else { &[] };
        let mut frame = NODE_MAC.to_vec();
        frame.extend_from_slice(&CLIENT_MAC);
        frame.extend_from_slice(&0x86ddu16.to_be_bytes());
        frame.extend_from_slice(&[0x60, 0, 0, 0]);
        frame.extend_from_slice(&((ext.len() + seg.len()) as u16).to_be_bytes());
        frame.extend_from_slice(&[if self.hop_by_hop { HOP_BY_HOP } else { PROTO_TCP }, HOP_LIMIT]);
        frame.extend_from_slice(&self.src.0);
        frame.extend_from_slice(&self.dst.0);
        frame.extend_from_slice(ext);
        frame.extend_from_slice(seg);
        frame
    }

    fn frame(&self) -> Vec<u8> {
        self.frame_of(&self.segment())
    }

    /// The frame with the checksum field holding only the pseudo-header sum, uncomplemented, as a
    /// sender with TX checksum offload leaves it (`CHECKSUM_PARTIAL`).
    fn partial_frame(&self) -> Vec<u8> {
        let mut seg = self.segment();
        let field = fold(pseudo_sum(&self.src.0, &self.dst.0, seg.len()));
        seg[16..18].copy_from_slice(&field.to_be_bytes());
        self.frame_of(&seg)
    }
}

/// The unfolded sum of the IPv6 pseudo-header: both addresses, the 32-bit upper-layer length, three
/// zero bytes and next header 6.
fn pseudo_sum(src: &[u8; 16], dst: &[u8; 16], len: usize) -> u32 {
    let mut pseudo = [src.as_slice(), dst.as_slice()].concat();
    pseudo.extend_from_slice(&(len as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, PROTO_TCP]);
    sum_bytes(&pseudo)
}

/// The TCP checksum of `seg` over the IPv6 pseudo-header, from scratch (its field taken as zero).
fn tcp6_checksum(seg: &[u8], src: &[u8; 16], dst: &[u8; 16]) -> u16 {
    let mut copy = seg.to_vec();
    copy[16..18].copy_from_slice(&[0, 0]);
    !fold(pseudo_sum(src, dst, seg.len()) + sum_bytes(&copy))
}

fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn half(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// Every field of an IPv6 frame a program left.
#[derive(Debug)]
struct Seen {
    macs: ([u8; 6], [u8; 6]),
    src: ([u8; 16], u16),
    dst: ([u8; 16], u16),
    hop_limit: u8,
    payload_len: u16,
    /// The TCP segment's length in the frame.
    segment_len: usize,
    seq: u32,
    ack: u32,
    window: u16,
    timestamps: Option<(u32, u32)>,
    sack: Vec<(u32, u32)>,
    payload: Vec<u8>,
    tcp_checksum_ok: bool,
}

fn inspect(frame: &[u8]) -> Seen {
    assert_eq!(half(frame, 12), 0x86dd, "still IPv6");
    assert_eq!(frame[20], PROTO_TCP, "TCP right after the fixed header");
    let src: [u8; 16] = frame[22..38].try_into().expect("16");
    let dst: [u8; 16] = frame[38..54].try_into().expect("16");
    let seg = &frame[54..];
    let header_len = usize::from(seg[12] >> 4) * 4;
    let layout = walk(seg, header_len).expect("the options still parse");
    Seen {
        macs: (frame[6..12].try_into().expect("6"), frame[0..6].try_into().expect("6")),
        src: (src, half(seg, 0)),
        dst: (dst, half(seg, 2)),
        hop_limit: frame[21],
        payload_len: half(frame, 18),
        segment_len: seg.len(),
        seq: word(seg, 4),
        ack: word(seg, 8),
        window: half(seg, 14),
        timestamps: layout.tsval().map(|at| (word(seg, at), word(seg, at + 4))),
        sack: (0..layout.sack_blocks)
            .map(|i| (word(seg, layout.sack + 2 + 8 * i), word(seg, layout.sack + 6 + 8 * i)))
            .collect(),
        payload: seg[header_len..].to_vec(),
        tcp_checksum_ok: half(seg, 16) == tcp6_checksum(seg, &src, &dst),
    }
}

/// The object loaded with the entries of one steered IPv6 flow (offsets `tcp`) in `STEER_FLOWS`.
struct Harness {
    ebpf: Ebpf,
    flows: HashMap<MapData, FlowKey, SteerFlow>,
}

impl Harness {
    fn steered(tcp: SteerTcp) -> Harness {
        let mut ebpf = loader::load(1024).expect("the object loads");
        let program: &mut Xdp =
            ebpf.program_mut("steer_translate").expect("steer_translate").try_into().expect("an XDP program");
        program.load().expect("the verifier accepts steer_translate");
        let mut flows: HashMap<MapData, FlowKey, SteerFlow> =
            HashMap::try_from(ebpf.take_map(STEER_FLOWS).expect("STEER_FLOWS")).expect("a hash map");
        for (key, flow) in flow_entries(tcp) {
            flows.insert(key, flow, 0).expect("insert entry");
        }
        Harness { ebpf, flows }
    }

    fn xdp(&self, frame: &[u8]) -> (u32, Vec<u8>) {
        let program: &Xdp = self.ebpf.program("steer_translate").expect("program").try_into().expect("XDP");
        run(program, frame)
    }

    fn tc(&self, frame: &[u8]) -> (u32, Vec<u8>) {
        let program: &SchedClassifier =
            self.ebpf.program("steer_ingress").expect("steer_ingress").try_into().expect("a classifier");
        run(program, frame)
    }

    fn entry(&self, key: &FlowKey) -> SteerFlow {
        self.flows.get(key, 0).expect("entry")
    }
}

/// C -> P with timestamps (echoing one of P's translated TSvals) and SACK; P -> C with timestamps.
fn both_directions() -> (Segment6, Segment6) {
    let options =
        [vec![NOP, NOP], timestamps(0xdead_beef, 0x8000_1000), vec![NOP, NOP], sack(&[(0xffff_ff10, 0xffff_ff80)])]
            .concat();
    let to_pod = Segment6 { ack: 0xffff_ff01, flags: PSH_ACK, options, ..Segment6::new(CLIENT, ROUTER) };
    let options = [vec![NOP, NOP], timestamps(0x0000_2000, 0xdead_beef)].concat();
    let to_client = Segment6 { seq: 0x0000_0105, window: 1000, options, ..Segment6::new(POD, NODE_Q) };
    (to_pod, to_client)
}

/// D = Ip - Ir = 0x200 across the wrap; T = (Tr_last + 1) - Tp0 = 0x8000_0001 - 0x1000; Wr 3, Wp 11.
fn offsets() -> SteerTcp {
    SteerTcp::new(0xffff_ff00, 0x0000_0100, 0x8000_0000, 0x0000_1000, 3, 11)
}

/// What both hooks must make of [`both_directions`], whichever translated it.
fn assert_translated(to_pod: &Seen, to_client: &Seen, hook: &str) {
    assert_eq!((to_pod.src, to_pod.dst), (NODE_Q, POD), "{hook}: C -> P leaves as Q -> P");
    assert_eq!(to_pod.macs, (NODE_POD_SIDE_MAC, POD_MAC), "{hook}");
    assert_eq!(to_pod.ack, 0x0000_0101, "{hook}: ack + D across the wrap");
    assert_eq!(to_pod.timestamps, Some((0xdead_beef, 0x1fff)), "{hook}: TSecr - T (T = 0x7fff_f001)");
    assert_eq!(to_pod.sack, vec![(0x0000_0110, 0x0000_0180)], "{hook}: SACK edges + D");
    assert!(to_pod.tcp_checksum_ok, "{hook}: TCP checksum over the new 128-bit addresses: {to_pod:?}");
    assert_eq!((to_client.src, to_client.dst), (ROUTER, CLIENT), "{hook}: P -> Q leaves as R -> C");
    assert_eq!(to_client.macs, (NODE_MAC, CLIENT_MAC), "{hook}");
    assert_eq!(to_client.seq, 0xffff_ff05, "{hook}: seq - D");
    assert_eq!(to_client.window, 65_535, "{hook}: (1000 << 11) >> 3, clamped");
    assert_eq!(to_client.timestamps, Some((0x8000_1001, 0xdead_beef)), "{hook}: TSval + T");
    assert!(to_client.tcp_checksum_ok, "{hook}: {to_client:?}");
    for seen in [to_pod, to_client] {
        assert_eq!(seen.payload, PAYLOAD, "{hook}: payload untouched");
        assert_eq!(seen.hop_limit, HOP_LIMIT, "{hook}: hop limit untouched");
        assert_eq!(usize::from(seen.payload_len), seen.segment_len, "{hook}: payload length untouched");
    }
}

#[test]
fn xdp_translates_ipv6_both_ways_with_the_pseudo_header_over_128_bit_addresses() {
    require_root!();
    let h = Harness::steered(offsets());
    let (to_pod, to_client) = both_directions();
    let (verdict, out_pod) = h.xdp(&to_pod.frame());
    assert_eq!(verdict, XDP_REDIRECT, "towards the pod, by another interface");
    let (verdict, out_client) = h.xdp(&to_client.frame());
    assert_eq!(verdict, XDP_TX, "towards the client, back out of the arrival interface");
    assert_eq!((out_pod.len(), out_client.len()), (to_pod.frame().len(), to_client.frame().len()), "same lengths");
    assert_translated(&inspect(&out_pod), &inspect(&out_client), "XDP");
    let entry = h.entry(&key(CLIENT, ROUTER));
    assert_eq!((entry.packets, entry.dropped), (1, 0));
    assert_eq!(h.entry(&key(POD, NODE_Q)).acked, 2000, "P's ack kept as the newest");
}

#[test]
fn steer_ingress_translates_ipv6_both_ways_with_checksums_a_receiver_accepts() {
    require_root!();
    let h = Harness::steered(offsets());
    let (to_pod, to_client) = both_directions();
    let (verdict, out_pod) = h.tc(&to_pod.frame());
    assert_eq!(verdict, TC_ACT_REDIRECT);
    let (verdict, out_client) = h.tc(&to_client.frame());
    assert_eq!(verdict, TC_ACT_REDIRECT);
    assert_translated(&inspect(&out_pod), &inspect(&out_client), "TC");
    assert_eq!(h.entry(&key(POD, NODE_Q)).packets, 1);
}

#[test]
fn ipv6_partial_checksums_and_long_frames_are_left_to_steer_ingress_unchanged() {
    require_root!();
    let h = Harness::steered(offsets());
    let (to_pod, _) = both_directions();
    let partial = to_pod.partial_frame();
    let (verdict, out) = h.xdp(&partial);
    assert_eq!((verdict, out == partial), (XDP_PASS, true), "a bare pseudo-header sum: passed up unchanged");
    let long = Segment6 { padding: 1514 + 1 - to_pod.frame().len(), ..to_pod.clone() }.frame();
    assert_eq!(long.len(), 1515);
    let (verdict, out) = h.xdp(&long);
    assert_eq!((verdict, out == long), (XDP_PASS, true), "past 1,514 bytes: passed up unchanged");
    let fits = Segment6 { padding: 1514 - to_pod.frame().len(), ..to_pod.clone() }.frame();
    assert_eq!(h.xdp(&fits).0, XDP_REDIRECT, "1,514 bytes still fit");
    assert_eq!(h.entry(&key(CLIENT, ROUTER)).packets, 1, "the two hand-offs were not counted as translated");

    // What steer_ingress then makes of the hand-off: under BPF_PROG_TEST_RUN the skb has no checksum
    // state, so the kernel updates the field in full and the result is the pseudo-header sum moved by
    // every change, not a checksum; the checksum a NIC completes from the partial field is checked on
    // the host (`partial_checksum_tests`). Here: translated, addresses and numbers as in XDP.
    let (verdict, out) = h.tc(&long);
    assert_eq!(verdict, TC_ACT_REDIRECT, "the long frame through steer_ingress");
    let seen = inspect(&out);
    assert_eq!((seen.src, seen.dst, seen.ack), (NODE_Q, POD, 0x0000_0101));
    assert!(seen.tcp_checksum_ok, "a complete checksum updated in full: {seen:?}");
}

#[test]
fn ipv6_packets_with_an_extension_header_are_left_to_the_kernel() {
    require_root!();
    let h = Harness::steered(offsets());
    let (to_pod, to_client) = both_directions();
    for segment in [to_pod, to_client] {
        let frame = Segment6 { hop_by_hop: true, ..segment }.frame();
        let (verdict, out) = h.xdp(&frame);
        assert_eq!((verdict, out == frame), (XDP_PASS, true), "XDP: a hop-by-hop header before TCP");
        let (verdict, out) = h.tc(&frame);
        assert_eq!((verdict, out == frame), (TC_ACT_OK, true), "TC: a hop-by-hop header before TCP");
    }
    assert_eq!(h.entry(&key(CLIENT, ROUTER)).packets, 0);
    assert_eq!(h.entry(&key(POD, NODE_Q)).packets, 0);
}

#[test]
fn an_ipv6_syn_on_a_steered_flow_is_dropped_unchanged() {
    require_root!();
    let h = Harness::steered(offsets());
    let syn = Segment6 { flags: SYN, ..Segment6::new(CLIENT, ROUTER) }.frame();
    let (verdict, out) = h.xdp(&syn);
    assert_eq!((verdict, out == syn), (XDP_DROP, true));
    assert_eq!(h.entry(&key(CLIENT, ROUTER)).dropped, 1);
}

/// `xdp_front` with its steering maps, for the records.
struct Front {
    ebpf: Ebpf,
    ports: HashMap<MapData, SteerPortKey, u8>,
    syns: HashMap<MapData, FlowKey, SteerSyn>,
    flows: HashMap<MapData, FlowKey, SteerFlow>,
}

impl Front {
    fn new() -> Front {
        let mut ebpf = loader::load(1024).expect("the verifier accepts xdp_front");
        let mut take = |name| ebpf.take_map(name).unwrap_or_else(|| panic!("{name} in the object"));
        let ports = HashMap::try_from(take(STEER_PORTS)).expect("STEER_PORTS");
        let syns = HashMap::try_from(take(STEER_SYNS)).expect("STEER_SYNS");
        let flows = HashMap::try_from(take(STEER_FLOWS)).expect("STEER_FLOWS");
        Front { ebpf, ports, syns, flows }
    }

    fn run(&self, frame: &[u8]) -> (u32, Vec<u8>) {
        let program: &Xdp = self.ebpf.program("xdp_front").expect("xdp_front").try_into().expect("an XDP program");
        run(program, frame)
    }
}

#[test]
fn xdp_front_records_an_ipv6_client_syn_and_the_pods_ipv6_syn_ack() {
    require_root!();
    let mut front = Front::new();
    front.ports.insert(SteerPortKey { port: ROUTER.1, family: FAMILY_IPV6, _pad: 0 }, 1, 0).expect("steer port");
    let syn_options = [vec![2, 4, 0x05, 0xa0, 4, 2], timestamps(12_345, 0), vec![NOP, 3, 3, 7]].concat();
    let syn = Segment6 {
        seq: 0xffff_fffe,
        ack: 0,
        flags: SYN,
        window: 64_800,
        options: syn_options,
        ..Segment6::new(CLIENT, ROUTER)
    }
    .frame();
    let (verdict, out) = front.run(&syn);
    assert_eq!((verdict, out == syn), (XDP_PASS, true), "the SYN goes on to the kernel unchanged");
    let record = front.syns.get(&key(CLIENT, ROUTER), 0).expect("the SYN recorded under C -> R, IPv6");
    assert_eq!(
        record,
        SteerSyn {
            seen_ns: record.seen_ns,
            isn: 0xffff_fffe,
            tsval: 12_345,
            arrival_dst_addr: ROUTER.0,
            arrival_dst_port: ROUTER.1,
            mss: 1440,
            wscale: 7,
            options: SYN_OPT_MSS | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS | SYN_OPT_WSCALE,
            family: FAMILY_IPV6,
            _pad: 0,
            if_index: ARRIVAL_IF_INDEX,
            peer_mac: CLIENT_MAC,
            local_mac: NODE_MAC,
        }
    );
    let with_extension = Segment6 { flags: SYN, ack: 0, hop_by_hop: true, ..Segment6::new((CLIENT.0, 51_001), ROUTER) };
    let frame = with_extension.frame();
    let (verdict, out) = front.run(&frame);
    assert_eq!((verdict, out == frame), (XDP_PASS, true), "a SYN with a hop-by-hop header goes on unchanged");
    assert!(
        front.syns.get(&key((CLIENT.0, 51_001), ROUTER), 0).is_err(),
        "a SYN with an extension header is not recorded (its connection stays on the relay as no_syn)"
    );
    let other_port = Segment6 { flags: SYN, ack: 0, ..Segment6::new(CLIENT, (ROUTER.0, 444)) }.frame();
    front.run(&other_port);
    assert!(front.syns.get(&key(CLIENT, (ROUTER.0, 444)), 0).is_err(), "a port not in STEER_PORTS: not recorded");

    let connecting = SteerFlow { state: STEER_CONNECTING, family: FAMILY_IPV6, ..SteerFlow::default() };
    front.flows.insert(key(POD, NODE_Q), connecting, 0).expect("connecting entry");
    let answer_options = [vec![2, 4, 0x05, 0x78, 4, 2], timestamps(777, 12_345), vec![NOP, 3, 3, 9]].concat();
    let syn_ack = Segment6 {
        seq: 0x8000_0000,
        ack: 0xffff_ffff,
        flags: SYN | ACK,
        window: 65_160,
        options: answer_options,
        ..Segment6::new(POD, NODE_Q)
    }
    .frame();
    let (verdict, out) = front.run(&syn_ack);
    assert_eq!((verdict, out == syn_ack), (XDP_DROP, true), "recorded and dropped: no socket owns Q");
    let answers: HashMap<MapData, FlowKey, SteerAnswer> =
        HashMap::try_from(front.ebpf.take_map(STEER_ANSWERS).expect("STEER_ANSWERS")).expect("a hash map");
    let answer = answers.get(&key(POD, NODE_Q), 0).expect("the IPv6 answer recorded under P -> Q");
    assert_eq!((answer.isn, answer.ack, answer.tsval, answer.tsecr), (0x8000_0000, 0xffff_ffff, 777, 12_345));
    assert_eq!((answer.mss, answer.wscale, answer.window, answer.flags), (1400, 9, 65_160, ANSWER_SYN_ACK));
}
