//! Packet fixtures run through the real `steer_translate` (the XDP steering translation stage)
//! with `BPF_PROG_TEST_RUN` (root only; no interface, no pins). Each test writes `STEER_FLOWS`
//! entries from userspace, builds an Ethernet/IPv4/TCP frame, and checks every field of the frame
//! the program leaves, with both checksums recomputed from scratch. Expected values are written
//! out as numbers, not computed with the code under test. Helpers are shared with
//! `steer_front_tests` (the same stage inside `xdp_front`, with the setup maps).

use std::net::Ipv4Addr;

use super::packet_tests::is_root;

use aya::{
    maps::{HashMap, MapData},
    programs::{TestRunOptions, Xdp},
    Ebpf,
};
use router_common::{
    checksum::{fold, sum_bytes},
    nat::{FlowKey, FAMILY_IPV4, PROTO_TCP},
    steer::{
        options::walk,
        setup::{SteerAnswer, ANSWER_SYN_ACK, SYN_OPT_MSS, SYN_OPT_SACK_OK, SYN_OPT_TIMESTAMPS, SYN_OPT_WSCALE},
        OptionLayout, SteerFlow, SteerTcp, STEER_FIN, STEER_FLOWS, STEER_PENDING, STEER_RST, STEER_STEERED,
        STEER_TO_CLIENT, STEER_TO_POD,
    },
};

use super::loader;

/// The translation program's name in the object (`#[xdp] fn steer_translate` in `router-ebpf`).
const PROGRAM: &str = "steer_translate";
pub(super) const XDP_DROP: u32 = 1;
pub(super) const XDP_PASS: u32 = 2;
pub(super) const XDP_TX: u32 = 3;
pub(super) const XDP_REDIRECT: u32 = 4;
/// `BPF_PROG_TEST_RUN` runs XDP programs as if they arrived on the loopback device.
pub(super) const ARRIVAL_IF_INDEX: u32 = 1;
/// Another interface index, for redirects (test runs do not carry out the redirect).
pub(super) const POD_IF_INDEX: u32 = 7;
/// Most instructions the verifier may walk through to accept `steer_translate`. With the option
/// walk as an inline loop it gave up at its limit of 1,000,000; in `bpf_loop` it takes about
/// 77,000 with the answer record of the setup stage (28,000 without), about 205,000 since the change
/// that added `steer_ingress` (not yet traced to one line: the hand-off test alone is not it), about
/// 154,000 with IPv6 (the pseudo-header update a BPF function of its own since), 424,118 with the same source
/// on a fresh machine on 2026-12-07 (kernel 6.18.44; not bpf-linker's dependencies). This catches a change
/// that brings the path explosion back before it hits the limit.
const MAX_VERIFIED_INSTRUCTIONS: u32 = 550_000;

const TCP: u8 = 6;
pub(super) const FIN: u8 = 0x01;
pub(super) const SYN: u8 = 0x02;
pub(super) const RST: u8 = 0x04;
pub(super) const ACK: u8 = 0x10;
pub(super) const PSH_ACK: u8 = 0x18;
pub(super) const NOP: u8 = 1;
const OPT_TS: u8 = 8;
const OPT_SACK: u8 = 5;
pub(super) const PAYLOAD: &[u8] = b"\x17\x03\x03\x00\x05hello";

/// The client C, the address and port it connected to (R), the node address and reserved port Q
/// of leg B, and the pod P.
pub(super) const CLIENT: ([u8; 4], u16) = ([192, 0, 2, 10], 51_000);
pub(super) const ROUTER: ([u8; 4], u16) = ([10, 0, 0, 2], 30_443);
pub(super) const NODE_Q: ([u8; 4], u16) = ([10, 0, 0, 2], 61_001);
pub(super) const POD: ([u8; 4], u16) = ([10, 244, 1, 7], 8443);
pub(super) const CLIENT_MAC: [u8; 6] = [0x02, 0xc1, 0, 0, 0, 1];
pub(super) const NODE_MAC: [u8; 6] = [0x02, 0x0d, 0, 0, 0, 2];
pub(super) const POD_MAC: [u8; 6] = [0x02, 0x9d, 0, 0, 0, 7];
pub(super) const NODE_POD_SIDE_MAC: [u8; 6] = [0x02, 0x0d, 0, 0, 0, 3];

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipping: BPF_PROG_TEST_RUN needs root");
            return;
        }
    };
}

// ---------- frames ----------

/// One Ethernet/IPv4/TCP frame to build.
#[derive(Clone)]
pub(super) struct Segment {
    pub(super) src: ([u8; 4], u16),
    pub(super) dst: ([u8; 4], u16),
    pub(super) seq: u32,
    pub(super) ack: u32,
    pub(super) flags: u8,
    pub(super) window: u16,
    /// TCP options, padded with EOL to a word.
    pub(super) options: Vec<u8>,
    /// IPv4 option words (NOPs).
    pub(super) ip_options: u8,
}

impl Segment {
    pub(super) fn new(src: ([u8; 4], u16), dst: ([u8; 4], u16)) -> Segment {
        Segment { src, dst, seq: 1000, ack: 2000, flags: ACK, window: 512, options: Vec::new(), ip_options: 0 }
    }

    pub(super) fn frame(&self) -> Vec<u8> {
        let mut seg =
            tcp_segment((self.src.1, self.dst.1), (self.seq, self.ack), self.flags, self.window, &self.options);
        let check = tcp_checksum(&seg, self.src.0, self.dst.0);
        seg[16..18].copy_from_slice(&check.to_be_bytes());

        let ihl = 5 + self.ip_options;
        let mut ip = vec![0x40 | ihl, 0];
        ip.extend_from_slice(&((usize::from(ihl) * 4 + seg.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, TCP, 0, 0]);
        ip.extend_from_slice(&self.src.0);
        ip.extend_from_slice(&self.dst.0);
        ip.resize(usize::from(ihl) * 4, NOP);
        let check = !fold(sum_bytes(&ip));
        ip[10..12].copy_from_slice(&check.to_be_bytes());

        let mut frame = NODE_MAC.to_vec();
        frame.extend_from_slice(&CLIENT_MAC);
        frame.extend_from_slice(&0x0800u16.to_be_bytes());
        [frame, ip, seg].concat()
    }
}

/// `frame` with another Ethernet destination and source.
pub(super) fn with_macs(mut frame: Vec<u8>, dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    frame[0..6].copy_from_slice(&dst);
    frame[6..12].copy_from_slice(&src);
    frame
}

/// The pod's SYN-ACK to leg B that the answer-record tests of both hooks (`xdp_front`,
/// `steer_ingress`) send, Ethernet addresses included, and the record it must leave; the record's
/// `seen_ns` and `if_index` depend on the run, and are the caller's to fill in.
pub(super) fn pod_syn_ack() -> (Vec<u8>, SteerAnswer) {
    let options = [vec![2, 4, 0x05, 0x78, 4, 2], timestamps(777, 12_345), vec![NOP, 3, 3, 9]].concat();
    let answer = Segment {
        seq: 0x8000_0000,
        ack: 0xfedc_ba99,
        flags: SYN | ACK,
        window: 65_160,
        options,
        ..Segment::new(POD, NODE_Q)
    };
    let frame = with_macs(answer.frame(), NODE_POD_SIDE_MAC, POD_MAC);
    let record = SteerAnswer {
        seen_ns: 0,
        isn: 0x8000_0000,
        ack: 0xfedc_ba99,
        tsval: 777,
        tsecr: 12_345,
        window: 65_160,
        mss: 1400,
        wscale: 9,
        options: SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS,
        flags: ANSWER_SYN_ACK,
        _pad: 0,
        if_index: 0,
        peer_mac: POD_MAC,
        local_mac: NODE_POD_SIDE_MAC,
    };
    (frame, record)
}

pub(super) fn timestamps(tsval: u32, tsecr: u32) -> Vec<u8> {
    [vec![OPT_TS, 10], tsval.to_be_bytes().to_vec(), tsecr.to_be_bytes().to_vec()].concat()
}

pub(super) fn sack(blocks: &[(u32, u32)]) -> Vec<u8> {
    let mut out = vec![OPT_SACK, 2 + 8 * blocks.len() as u8];
    for (left, right) in blocks {
        out.extend_from_slice(&left.to_be_bytes());
        out.extend_from_slice(&right.to_be_bytes());
    }
    out
}

/// The TCP checksum of `seg` over the IPv4 pseudo-header, computed from scratch (its checksum field
/// taken as zero).
fn tcp_checksum(seg: &[u8], src: [u8; 4], dst: [u8; 4]) -> u16 {
    let mut pseudo = [src, dst].concat();
    pseudo.extend_from_slice(&[0, TCP]);
    pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    let mut copy = seg.to_vec();
    copy[16..18].copy_from_slice(&[0, 0]);
    !fold(sum_bytes(&pseudo) + sum_bytes(&copy))
}

/// Every field of a frame the program left.
#[derive(Debug)]
pub(super) struct Seen {
    pub(super) dst_mac: [u8; 6],
    pub(super) src_mac: [u8; 6],
    pub(super) src: (Ipv4Addr, u16),
    pub(super) dst: (Ipv4Addr, u16),
    pub(super) ttl: u8,
    pub(super) seq: u32,
    pub(super) ack: u32,
    pub(super) flags: u8,
    pub(super) window: u16,
    /// (TSval, TSecr) when the segment has timestamps.
    pub(super) timestamps: Option<(u32, u32)>,
    pub(super) sack: Vec<(u32, u32)>,
    pub(super) payload: Vec<u8>,
    pub(super) ip_checksum_ok: bool,
    pub(super) tcp_checksum_ok: bool,
}

fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn half(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

pub(super) fn inspect(frame: &[u8]) -> Seen {
    assert_eq!(half(frame, 12), 0x0800, "still IPv4");
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    let ip = &frame[14..14 + ihl];
    let src: [u8; 4] = ip[12..16].try_into().expect("4");
    let dst: [u8; 4] = ip[16..20].try_into().expect("4");
    let seg = &frame[14 + ihl..];
    let header_len = usize::from(seg[12] >> 4) * 4;
    let layout: OptionLayout = walk(seg, header_len).expect("the options still parse");
    let timestamps = layout.tsval().map(|at| (word(seg, at), word(seg, at + 4)));
    let sack = (0..layout.sack_blocks)
        .map(|i| (word(seg, layout.sack + 2 + 8 * i), word(seg, layout.sack + 6 + 8 * i)))
        .collect();
    Seen {
        dst_mac: frame[0..6].try_into().expect("6"),
        src_mac: frame[6..12].try_into().expect("6"),
        src: (Ipv4Addr::from(src), half(seg, 0)),
        dst: (Ipv4Addr::from(dst), half(seg, 2)),
        ttl: ip[8],
        seq: word(seg, 4),
        ack: word(seg, 8),
        flags: seg[13],
        window: half(seg, 14),
        timestamps,
        sack,
        payload: seg[header_len..].to_vec(),
        ip_checksum_ok: fold(sum_bytes(ip)) == 0xffff,
        tcp_checksum_ok: half(seg, 16) == tcp_checksum(seg, src, dst),
    }
}

pub(super) fn addr(a: ([u8; 4], u16)) -> (Ipv4Addr, u16) {
    (Ipv4Addr::from(a.0), a.1)
}

// ---------- the program and its map ----------

struct Harness {
    ebpf: Ebpf,
    flows: HashMap<MapData, FlowKey, SteerFlow>,
}

impl Harness {
    fn new() -> Harness {
        let mut ebpf = loader::load(1024).expect("the object loads");
        let program: &mut Xdp =
            ebpf.program_mut(PROGRAM).expect("steer_translate in the object").try_into().expect("an XDP program");
        program.load().expect("the verifier accepts steer_translate");
        let verified = program.info().expect("program info").verified_instruction_count().expect("kernel >= 5.16");
        assert!(verified < MAX_VERIFIED_INSTRUCTIONS, "the verifier walked {verified} instructions");
        eprintln!("steer_translate: the verifier walked {verified} instructions");
        let map = ebpf.take_map(STEER_FLOWS).expect("STEER_FLOWS in the object");
        let flows = HashMap::try_from(map).expect("a hash map of FlowKey -> SteerFlow");
        Harness { ebpf, flows }
    }

    /// A harness with both directions of one flow steered with offsets `tcp`.
    fn steered(tcp: SteerTcp) -> Harness {
        let mut h = Harness::new();
        for (key, flow) in flow_entries(tcp) {
            h.flows.insert(key, flow, 0).expect("insert entry");
        }
        h
    }

    /// Runs `frame` through `steer_translate`; returns the verdict and the frame it left.
    fn run(&self, frame: &[u8]) -> (u32, Vec<u8>) {
        let program: &Xdp = self.ebpf.program(PROGRAM).expect("program").try_into().expect("an XDP program");
        let mut out = vec![0u8; frame.len() + 256];
        let result = aya::programs::TestRun::test_run(
            program,
            TestRunOptions { data_in: Some(frame), data_out: Some(&mut out), ..TestRunOptions::default() },
        )
        .expect("BPF_PROG_TEST_RUN");
        out.truncate(result.data_size_out as usize);
        (result.return_value, out)
    }

    /// Runs `segment` and returns the verdict and what left, checking the parts every translated
    /// packet shares: unchanged length, payload and TTL, valid checksums.
    fn translate(&self, segment: &Segment) -> (u32, Seen) {
        let frame = segment.frame();
        let (verdict, out) = self.run(&frame);
        assert_eq!(out.len(), frame.len(), "one packet out, same length");
        let seen = inspect(&out);
        assert_eq!(seen.payload, PAYLOAD, "payload untouched");
        assert_eq!(seen.ttl, 64, "TTL untouched");
        assert!(seen.ip_checksum_ok, "IPv4 header checksum after the rewrite: {seen:?}");
        assert!(seen.tcp_checksum_ok, "TCP checksum equals a full recomputation: {seen:?}");
        (verdict, seen)
    }

    fn entry(&self, key: &FlowKey) -> SteerFlow {
        self.flows.get(key, 0).expect("entry")
    }
}

pub(super) fn key(src: ([u8; 4], u16), dst: ([u8; 4], u16)) -> FlowKey {
    let v4 = |a: [u8; 4]| {
        let mut out = [0u8; 16];
        out[..4].copy_from_slice(&a);
        out
    };
    FlowKey {
        src_addr: v4(src.0),
        dst_addr: v4(dst.0),
        src_port: src.1,
        dst_port: dst.1,
        family: FAMILY_IPV4,
        protocol: PROTO_TCP,
        _pad: [0; 2],
    }
}

/// Both directions' entries of the steered flow C <-> R / Q <-> P. Towards the pod the packet is
/// redirected to another interface; towards the client it leaves where it came in (`XDP_TX`).
pub(super) fn flow_entries(tcp: SteerTcp) -> [(FlowKey, SteerFlow); 2] {
    let leg_b = key(NODE_Q, POD);
    let leg_a_back = key(ROUTER, CLIENT);
    let to_pod = SteerFlow {
        src_addr: leg_b.src_addr,
        dst_addr: leg_b.dst_addr,
        src_port: leg_b.src_port,
        dst_port: leg_b.dst_port,
        if_index: POD_IF_INDEX,
        src_mac: NODE_POD_SIDE_MAC,
        dst_mac: POD_MAC,
        family: FAMILY_IPV4,
        direction: STEER_TO_POD,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    };
    let to_client = SteerFlow {
        src_addr: leg_a_back.src_addr,
        dst_addr: leg_a_back.dst_addr,
        src_port: leg_a_back.src_port,
        dst_port: leg_a_back.dst_port,
        if_index: ARRIVAL_IF_INDEX,
        src_mac: NODE_MAC,
        dst_mac: CLIENT_MAC,
        family: FAMILY_IPV4,
        direction: STEER_TO_CLIENT,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    };
    [(key(CLIENT, ROUTER), to_pod), (key(POD, NODE_Q), to_client)]
}

// ---------- one test per rule ----------

#[test]
fn client_to_pod_moves_the_ack_across_the_wrap_and_rewrites_addresses() {
    require_root!();
    // Ir = 0xffff_ff00, Ip = 0x0000_0100: D = 0x200, and C's acks near 2^32 wrap into P's space.
    let h = Harness::steered(SteerTcp::new(0xffff_ff00, 0x0000_0100, 5000, 9000, 7, 7));
    for (ack, expected) in [(0xffff_ff01u32, 0x0000_0101u32), (0xffff_ffff, 0x0000_01ff), (0x0000_0010, 0x0000_0210)] {
        let segment = Segment { seq: 0xfff0_0000, ack, flags: PSH_ACK, window: 1234, ..Segment::new(CLIENT, ROUTER) };
        let (verdict, seen) = h.translate(&segment);
        assert_eq!(verdict, XDP_REDIRECT, "towards the pod: redirected to its interface");
        assert_eq!((seen.src, seen.dst), (addr(NODE_Q), addr(POD)), "leg B's addresses and ports");
        assert_eq!((seen.src_mac, seen.dst_mac), (NODE_POD_SIDE_MAC, POD_MAC));
        assert_eq!(seen.ack, expected, "ack {ack:#x} + D");
        assert_eq!(seen.seq, 0xfff0_0000, "seq unchanged: leg B was opened with C's ISN");
        assert_eq!(seen.window, 1234, "window unchanged: P was told C's scale");
        assert_eq!(seen.flags, PSH_ACK);
    }
    let entry = h.entry(&key(CLIENT, ROUTER));
    assert_eq!((entry.packets, entry.dropped), (3, 0));
    assert_eq!(entry.bytes, 3 * Segment::new(CLIENT, ROUTER).frame().len() as u64);
    assert!(entry.last_seen_ns > 0 && entry.last_seen_ns <= super::conntrack::monotonic_ns(), "kernel clock");
}

#[test]
fn pod_to_client_moves_the_seq_back_across_the_wrap() {
    require_root!();
    // Ir = 0x100, Ip = 0xffff_ff00: D = 0xffff_fe00; P's seq just past 2^32 lands just past Ir.
    let h = Harness::steered(SteerTcp::new(0x0000_0100, 0xffff_ff00, 5000, 9000, 7, 7));
    for (seq, expected) in [(0xffff_ff01u32, 0x0000_0101u32), (0x0000_0005, 0x0000_0205), (0xffff_fe00, 0x0000_0000)] {
        let segment = Segment { seq, ack: 0x0bad_cafe, ..Segment::new(POD, NODE_Q) };
        let (verdict, seen) = h.translate(&segment);
        assert_eq!(verdict, XDP_TX, "towards the client: out of the interface it came in by");
        assert_eq!((seen.src, seen.dst), (addr(ROUTER), addr(CLIENT)), "the address C connected to");
        assert_eq!((seen.src_mac, seen.dst_mac), (NODE_MAC, CLIENT_MAC));
        assert_eq!(seen.seq, expected, "seq {seq:#x} - D");
        assert_eq!(seen.ack, 0x0bad_cafe, "ack unchanged: C's sequence space is shared");
    }
}

#[test]
fn timestamps_are_paws_safe_for_the_client_and_echoes_go_back_to_the_pod() {
    require_root!();
    // R's clock just before the wrap, P's at 1000: T = 0xffff_fff1 + 1 - 1000.
    let tr_last = 0xffff_fff1u32;
    let tp0 = 1000u32;
    let h = Harness::steered(SteerTcp::new(1, 1, tr_last, tp0, 7, 7));

    // P -> C: P's first TSval arrives right after R's last, later ones keep their spacing.
    for (pod_tsval, client_sees) in
        [(1000u32, 0xffff_fff2u32), (1001, 0xffff_fff3), (1014, 0x0000_0000), (6000, 0x0000_137a)]
    {
        let options = [vec![NOP, NOP], timestamps(pod_tsval, 0x00c0_ffee)].concat();
        let (_, seen) = h.translate(&Segment { options, ..Segment::new(POD, NODE_Q) });
        assert_eq!(seen.timestamps, Some((client_sees, 0x00c0_ffee)), "TSval {pod_tsval} + T; TSecr unchanged");
        assert!(client_sees.wrapping_sub(tr_last) as i32 > 0, "C's PAWS check accepts {client_sees:#x}");
    }

    // C -> P: echoes of translated TSvals go back by T; echoes of R's own TSvals become Tp0; C's
    // TSval passes unchanged. Unpadded options put the timestamps at an odd offset.
    for (echo, pod_sees) in [
        (0xffff_fff2u32, 1000u32),
        (0x0000_137a, 6000),
        (0xffff_fff1, 1000), // R's last TSval
        (0xffff_0000, 1000), // an older one of R's
        (0x8000_0000, 1000),
    ] {
        for options in [[vec![NOP, NOP], timestamps(77, echo)].concat(), [vec![NOP], timestamps(77, echo)].concat()] {
            let (_, seen) = h.translate(&Segment { options, ..Segment::new(CLIENT, ROUTER) });
            assert_eq!(seen.timestamps, Some((77, pod_sees)), "echo {echo:#x}");
        }
    }
}

#[test]
fn sack_edges_move_towards_the_pod_and_stay_towards_the_client() {
    require_root!();
    let h = Harness::steered(SteerTcp::new(0x8000_0000, 0x0000_1000, 1, 1, 7, 7)); // D = 0x8000_1000
    let blocks = [(0x7fff_f000u32, 0x8000_0000u32), (0x1000, 0x2000), (0xffff_f000, 0x0000_0800), (5, 6)];
    let moved = [
        (0x0000_0000u32, 0x0000_1000u32),
        (0x8000_2000, 0x8000_3000),
        (0x8000_0000, 0x8000_1800),
        (0x8000_1005, 0x8000_1006),
    ];
    for n in 1..=4 {
        for lead in [vec![NOP, NOP], vec![NOP], timestamps(1, 2)] {
            let options = [lead.clone(), sack(&blocks[..n])].concat();
            if options.len() > 40 {
                continue; // with timestamps, 3 blocks fill the option space
            }
            let (_, seen) = h.translate(&Segment { options: options.clone(), ..Segment::new(CLIENT, ROUTER) });
            assert_eq!(seen.sack, moved[..n], "{n} blocks after {lead:?}: each edge + D");
            let (_, seen) = h.translate(&Segment { options, ..Segment::new(POD, NODE_Q) });
            assert_eq!(seen.sack, blocks[..n], "{n} blocks from P: unchanged");
        }
    }
}

#[test]
fn window_is_rescaled_for_the_client_both_ways_and_clamped() {
    require_root!();
    // (Wr, Wp, P's window) -> the window C reads.
    for (wr, wp, window, client_reads) in [
        (7u8, 7u8, 3000u16, 3000u16),
        (7, 9, 3000, 12000), // P's scale larger
        (9, 7, 3000, 750),   // P's scale smaller: rounded down
        (9, 7, 3, 0),
        (2, 10, 300, 65535), // does not fit: clamped
        (0, 14, 65535, 65535),
        (14, 0, 65535, 3),
    ] {
        let h = Harness::steered(SteerTcp::new(1, 1, 1, 1, wr, wp));
        let (_, seen) = h.translate(&Segment { window, ..Segment::new(POD, NODE_Q) });
        assert_eq!(seen.window, client_reads, "Wr {wr} Wp {wp} window {window}");
        let (_, seen) = h.translate(&Segment { window, ..Segment::new(CLIENT, ROUTER) });
        assert_eq!(seen.window, window, "C's window passes unchanged (Wr {wr} Wp {wp})");
    }
}

#[test]
fn checksums_hold_for_every_option_layout_and_ip_options() {
    require_root!();
    let h = Harness::steered(SteerTcp::new(0x1357_9bdf, 0xfdb9_7531, 0x8000_0000, 0x0000_1000, 3, 11));
    let ts = timestamps(0xdead_beef, 0x9000_1234);
    let two = sack(&[(0x0102_0304, 0x0506_0708), (0xf0f0_f0f0, 0x0f0f_0f0f)]);
    let full = {
        let mut o = [vec![4, 2], ts.clone(), sack(&[(1, 2), (3, 4)])].concat();
        o.resize(40, NOP);
        o
    };
    let layouts = [
        vec![],
        [vec![NOP, NOP], ts.clone()].concat(),
        [vec![NOP], ts.clone()].concat(),
        [ts.clone(), two.clone()].concat(),
        [vec![NOP], two.clone(), vec![NOP], ts.clone()].concat(),
        [vec![30, 4, 0xaa, 0xbb, NOP], ts.clone()].concat(),
        full,
    ];
    for options in layouts {
        for ip_options in [0, 1, 10] {
            for (src, dst) in [(CLIENT, ROUTER), (POD, NODE_Q)] {
                let segment = Segment {
                    seq: 0xffff_ffff,
                    ack: 0xffff_fffe,
                    flags: PSH_ACK,
                    window: 0xffff,
                    options: options.clone(),
                    ip_options,
                    ..Segment::new(src, dst)
                };
                let (verdict, seen) = h.translate(&segment);
                assert!(verdict == XDP_TX || verdict == XDP_REDIRECT, "translated: {options:?}");
                assert_eq!(seen.timestamps.is_some(), options.contains(&OPT_TS), "{options:?}");
            }
        }
    }
}

// ---------- the verdict policy ----------

#[test]
fn packets_of_no_steered_flow_pass_unchanged() {
    require_root!();
    let mut h = Harness::steered(SteerTcp::new(1, 2, 3, 4, 7, 7));
    let other_client = Segment::new(([192, 0, 2, 11], 51_000), ROUTER).frame();
    let mut ipv6 = Segment::new(CLIENT, ROUTER).frame();
    ipv6[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let mut fragment = Segment::new(CLIENT, ROUTER).frame();
    fragment[14 + 6] = 0x20; // more fragments
    let mut short = Segment::new(CLIENT, ROUTER).frame();
    short.truncate(14 + 20 + 12);
    for (name, frame) in [("no entry", other_client), ("ipv6", ipv6), ("fragment", fragment), ("cut short", short)] {
        let (verdict, out) = h.run(&frame);
        assert_eq!((verdict, out == frame), (XDP_PASS, true), "{name}");
    }
    // An entry that is not steered yet: the flow still lives on R.
    let [(key_to_pod, mut pending), _] = flow_entries(SteerTcp::new(1, 2, 3, 4, 7, 7));
    pending.state = STEER_PENDING;
    h.flows.insert(key_to_pod, pending, 0).expect("insert");
    let frame = Segment::new(CLIENT, ROUTER).frame();
    let (verdict, out) = h.run(&frame);
    assert_eq!((verdict, out == frame), (XDP_PASS, true), "pending");
    assert_eq!(h.entry(&key_to_pod).packets, 0);
}

#[test]
fn syns_and_malformed_options_are_dropped_unchanged_and_counted() {
    require_root!();
    let h = Harness::steered(SteerTcp::new(1, 2, 3, 4, 7, 7));
    let cases = [
        ("syn", Segment { flags: SYN | ACK, ..Segment::new(POD, NODE_Q) }),
        ("option length 1", Segment { options: vec![30, 1, 0, 0], ..Segment::new(POD, NODE_Q) }),
        ("option past the header", Segment { options: vec![NOP, NOP, 30, 9, 0, 0, 0, 0], ..Segment::new(POD, NODE_Q) }),
        ("timestamps of length 6", Segment { options: vec![OPT_TS, 6, 0, 0, 0, 0], ..Segment::new(POD, NODE_Q) }),
        ("sack of 9 bytes", Segment { options: [vec![OPT_SACK, 9], vec![0; 7]].concat(), ..Segment::new(POD, NODE_Q) }),
    ];
    for (i, (name, segment)) in cases.iter().enumerate() {
        let frame = segment.frame();
        let (verdict, out) = h.run(&frame);
        assert_eq!(verdict, XDP_DROP, "{name}");
        assert_eq!(out, frame, "{name}: nothing written");
        let entry = h.entry(&key(POD, NODE_Q));
        assert_eq!((entry.dropped, entry.packets), (i as u64 + 1, 0), "{name}: counted as dropped");
    }
}

#[test]
fn partial_checksums_and_long_frames_are_left_to_steer_ingress_unchanged() {
    require_root!();
    let h = Harness::steered(SteerTcp::new(1, 2, 3, 4, 7, 7));
    // What a pod with TX checksum offload sends: the field holds the bare pseudo-header sum of its
    // own addresses, protocol and TCP length (not complemented).
    let mut partial = Segment { options: timestamps(5, 6), ..Segment::new(POD, NODE_Q) }.frame();
    let tcp_len = (partial.len() - 14 - 20) as u32;
    let pseudo = sum_bytes(&[POD.0, NODE_Q.0].concat()) + u32::from(TCP) + tcp_len;
    partial[14 + 20 + 16..14 + 20 + 18].copy_from_slice(&fold(pseudo).to_be_bytes());
    // A GSO super-packet as generic XDP sees it (linearised): longer than an Ethernet frame.
    let mut long = Segment::new(CLIENT, ROUTER).frame();
    long.resize(1515, 0);
    for (name, frame) in [("partial checksum", partial), ("1,515-byte frame", long)] {
        let (verdict, out) = h.run(&frame);
        assert_eq!((verdict, out == frame), (XDP_PASS, true), "{name}: passed up unchanged");
    }
    for key in [key(POD, NODE_Q), key(CLIENT, ROUTER)] {
        let entry = h.entry(&key);
        assert_eq!((entry.packets, entry.dropped), (0, 0), "counted where translated, not here");
    }
}

#[test]
fn fin_and_rst_are_translated_and_remembered_per_direction() {
    require_root!();
    let h = Harness::steered(SteerTcp::new(1, 2, 3, 4, 7, 7));
    let (verdict, seen) = h.translate(&Segment { flags: FIN | ACK, ..Segment::new(CLIENT, ROUTER) });
    assert_eq!((verdict, seen.flags, seen.ack), (XDP_REDIRECT, FIN | ACK, 2001));
    assert_eq!(h.entry(&key(CLIENT, ROUTER)).seen, STEER_FIN);
    assert_eq!(h.entry(&key(POD, NODE_Q)).seen, 0, "the other direction saw nothing yet");
    let (verdict, seen) = h.translate(&Segment { flags: RST, ..Segment::new(POD, NODE_Q) });
    assert_eq!((verdict, seen.flags, seen.seq), (XDP_TX, RST, 999));
    assert_eq!(h.entry(&key(POD, NODE_Q)).seen, STEER_RST);
    h.translate(&Segment { flags: RST | ACK, ..Segment::new(CLIENT, ROUTER) });
    assert_eq!(h.entry(&key(CLIENT, ROUTER)).seen, STEER_FIN | STEER_RST);
}

/// A TCP segment from `ports` (source, destination) with `seq_ack`, `flags`, `window`, `options` (padded to a
/// multiple of 4 with zeros) and [`PAYLOAD`], its checksum field zero: the IPv4 and IPv6 fixtures fill it in.
pub(super) fn tcp_segment(ports: (u16, u16), seq_ack: (u32, u32), flags: u8, window: u16, options: &[u8]) -> Vec<u8> {
    let header_len = 20 + options.len().div_ceil(4) * 4;
    assert!(header_len <= 60, "at most 40 option bytes");
    let mut seg = Vec::new();
    seg.extend_from_slice(&ports.0.to_be_bytes());
    seg.extend_from_slice(&ports.1.to_be_bytes());
    seg.extend_from_slice(&seq_ack.0.to_be_bytes());
    seg.extend_from_slice(&seq_ack.1.to_be_bytes());
    seg.extend_from_slice(&[((header_len / 4) as u8) << 4, flags]);
    seg.extend_from_slice(&window.to_be_bytes());
    seg.extend_from_slice(&[0, 0, 0, 0]);
    seg.extend_from_slice(options);
    seg.resize(header_len, 0);
    seg.extend_from_slice(PAYLOAD);
    seg
}
