//! Host tests of the steering translation: each rule of the design notes on whole TCP segments built
//! byte by byte, with the incrementally kept checksum compared to a full recomputation every time.

extern crate std;

use std::{vec, vec::Vec};

use super::{
    options::{walk, OPT_NOP, OPT_SACK, OPT_SACK_PERMITTED, OPT_TIMESTAMPS},
    rules::{serial_before, tsecr_to_pod, tsval_to_client, window_to_client},
    translate, OptionLayout, SteerError, SteerFlow, SteerTcp, STEER_STEERED, STEER_TO_CLIENT, STEER_TO_POD,
};
use crate::{
    checksum::{fold, sum_bytes},
    nat::{FlowKey, FAMILY_IPV4, FAMILY_IPV6, PROTO_TCP},
};

pub(super) const CLIENT: [u8; 4] = [192, 0, 2, 10];
const ROUTER: [u8; 4] = [10, 0, 0, 2];
const NODE_Q: [u8; 4] = [10, 0, 0, 2];
const POD: [u8; 4] = [10, 244, 1, 7];
const CLIENT_PORT: u16 = 51_000;
const ROUTER_PORT: u16 = 443;
const Q_PORT: u16 = 61_001;
const POD_PORT: u16 = 8443;
const ACK_FLAG: u8 = 0x10;
const PSH_ACK: u8 = 0x18;
const SYN_ACK: u8 = 0x12;

pub(super) fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut out = [0; 16];
    out[..4].copy_from_slice(&a);
    out
}

pub(super) fn key(src: [u8; 4], src_port: u16, dst: [u8; 4], dst_port: u16) -> FlowKey {
    FlowKey {
        src_addr: v4(src),
        dst_addr: v4(dst),
        src_port,
        dst_port,
        family: FAMILY_IPV4,
        protocol: PROTO_TCP,
        _pad: [0; 2],
    }
}

/// The arrival key and the entry of each direction for offsets `tcp`.
pub(super) fn to_pod(tcp: SteerTcp) -> (FlowKey, SteerFlow) {
    let flow = SteerFlow {
        src_addr: v4(NODE_Q),
        dst_addr: v4(POD),
        src_port: Q_PORT,
        dst_port: POD_PORT,
        family: FAMILY_IPV4,
        direction: STEER_TO_POD,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    };
    (key(CLIENT, CLIENT_PORT, ROUTER, ROUTER_PORT), flow)
}

pub(super) fn to_client(tcp: SteerTcp) -> (FlowKey, SteerFlow) {
    let flow = SteerFlow {
        src_addr: v4(ROUTER),
        dst_addr: v4(CLIENT),
        src_port: ROUTER_PORT,
        dst_port: CLIENT_PORT,
        family: FAMILY_IPV4,
        direction: STEER_TO_CLIENT,
        state: STEER_STEERED,
        tcp,
        ..SteerFlow::default()
    };
    (key(POD, POD_PORT, NODE_Q, Q_PORT), flow)
}

/// TCP options, as bytes.
pub(super) fn timestamps(tsval: u32, tsecr: u32) -> Vec<u8> {
    let mut out = vec![OPT_TIMESTAMPS, 10];
    out.extend_from_slice(&tsval.to_be_bytes());
    out.extend_from_slice(&tsecr.to_be_bytes());
    out
}

pub(super) fn sack(blocks: &[(u32, u32)]) -> Vec<u8> {
    let mut out = vec![OPT_SACK, 2 + 8 * blocks.len() as u8];
    for (left, right) in blocks {
        out.extend_from_slice(&left.to_be_bytes());
        out.extend_from_slice(&right.to_be_bytes());
    }
    out
}

/// A TCP segment from `from`'s ports with `options` (padded with EOL to a word), a payload and a
/// valid checksum over the IPv4 or IPv6 pseudo-header of `from`.
pub(super) fn segment(from: &FlowKey, seq: u32, ack: u32, flags: u8, window: u16, options: &[u8]) -> Vec<u8> {
    let mut seg = Vec::new();
    seg.extend_from_slice(&from.src_port.to_be_bytes());
    seg.extend_from_slice(&from.dst_port.to_be_bytes());
    seg.extend_from_slice(&seq.to_be_bytes());
    seg.extend_from_slice(&ack.to_be_bytes());
    let header_len = 20 + options.len().div_ceil(4) * 4;
    seg.extend_from_slice(&[((header_len / 4) as u8) << 4, flags]);
    seg.extend_from_slice(&window.to_be_bytes());
    seg.extend_from_slice(&[0, 0, 0, 0]);
    seg.extend_from_slice(options);
    seg.resize(header_len, 0);
    seg.extend_from_slice(b"tls records");
    let check = full_checksum(&seg, from.family, &from.src_addr, &from.dst_addr);
    seg[16..18].copy_from_slice(&check.to_be_bytes());
    seg
}

/// The TCP checksum of `seg` computed from scratch (its checksum field taken as zero).
pub(super) fn full_checksum(seg: &[u8], family: u8, src: &[u8; 16], dst: &[u8; 16]) -> u16 {
    let mut pseudo = Vec::new();
    if family == FAMILY_IPV4 {
        pseudo.extend_from_slice(&src[..4]);
        pseudo.extend_from_slice(&dst[..4]);
        pseudo.extend_from_slice(&[0, PROTO_TCP]);
        pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    } else {
        pseudo.extend_from_slice(src);
        pseudo.extend_from_slice(dst);
        pseudo.extend_from_slice(&(seg.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, PROTO_TCP]);
    }
    let mut copy = seg.to_vec();
    copy[16..18].copy_from_slice(&[0, 0]);
    !fold(sum_bytes(&pseudo) + sum_bytes(&copy))
}

fn word(seg: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(seg[at..at + 4].try_into().expect("4 bytes"))
}

pub(super) fn half(seg: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([seg[at], seg[at + 1]])
}

/// Translates `seg` as `flow`'s direction; checks the ports, the payload and that the checksum is
/// the full recomputation over the new addresses. Returns the new segment.
fn run(mut seg: Vec<u8>, from: &FlowKey, flow: &SteerFlow) -> (Vec<u8>, OptionLayout) {
    let before = seg.clone();
    let done = translate(seg.as_mut_slice(), from, flow).expect("translates");
    assert_eq!((half(&seg, 0), half(&seg, 2)), (flow.src_port, flow.dst_port), "ports");
    assert_eq!(seg.len(), before.len());
    assert_eq!(seg[seg.len() - 11..], before[before.len() - 11..], "payload untouched");
    assert_eq!(done.flags, before[13]);
    assert_eq!(
        half(&seg, 16),
        full_checksum(&seg, flow.family, &flow.src_addr, &flow.dst_addr),
        "checksum equals a full recomputation: {seg:02x?}"
    );
    (seg, done.layout)
}

#[test]
fn offsets_come_from_the_handshakes_modulo_2_32() {
    let tcp = SteerTcp::new(0xffff_fff0, 0x0000_0010, 0xffff_ffff, 7, 7, 9);
    assert_eq!(tcp.seq_offset, 0x20, "D = Ip - Ir wraps");
    assert_eq!(tcp.ts_offset, 0u32.wrapping_sub(7), "T = (Tr_last + 1) - Tp0 with Tr_last + 1 wrapping to 0");
    assert_eq!((tcp.ts_pod_first, tcp.ts_router_last, tcp.wscale_router, tcp.wscale_pod), (7, 0xffff_ffff, 7, 9));
    let clamped = SteerTcp::new(0, 0, 0, 0, 15, 200);
    assert_eq!((clamped.wscale_router, clamped.wscale_pod), (14, 14), "window-scale shifts stop at 14");
}

#[test]
fn sequence_numbers_wrap_around_both_ways() {
    // Ir near the top, Ip near the bottom: D small and positive, and C's acks cross 2^32.
    let tcp = SteerTcp::new(0xffff_ff00, 0x0000_0100, 1000, 1000, 7, 7);
    let (from, flow) = to_pod(tcp);
    for (ack, expected) in [(0xffff_ff01u32, 0x0000_0101u32), (0xffff_fffe, 0x0000_01fe), (0x0000_0050, 0x0000_0250)] {
        let (out, _) = run(segment(&from, 0x1234_5678, ack, ACK_FLAG, 500, &[]), &from, &flow);
        assert_eq!(word(&out, 8), expected, "ack {ack:#x} + D");
        assert_eq!(word(&out, 4), 0x1234_5678, "C's seq unchanged (leg B was opened with Ic)");
        assert_eq!(half(&out, 14), 500, "C's window unchanged (P was told Wc)");
    }
    // The other way round: P's seq below D wraps under zero into R's space.
    let tcp = SteerTcp::new(0x0000_0100, 0xffff_ff00, 1000, 1000, 7, 7);
    let (from, flow) = to_client(tcp);
    for (seq, expected) in [(0xffff_ff01u32, 0x0000_0101u32), (0x0000_0010, 0x0000_0210), (0xffff_ffff, 0x0000_01ff)] {
        let (out, _) = run(segment(&from, seq, 0xabcd_0000, PSH_ACK, 500, &[]), &from, &flow);
        assert_eq!(word(&out, 4), expected, "seq {seq:#x} - D");
        assert_eq!(word(&out, 8), 0xabcd_0000, "P's ack unchanged (C's space is shared)");
    }
}

#[test]
fn timestamps_stay_monotonic_for_the_client_and_round_trip_to_the_pod() {
    // R's clock near the top of the space, P's near the bottom: T wraps, the client's view must not.
    for (tr_last, tp0) in [(0xffff_fff0u32, 5u32), (1_000, 2_000_000_000), (u32::MAX, 0), (300, 300)] {
        let tcp = SteerTcp::new(1, 2, tr_last, tp0, 7, 7);
        let (from, flow) = to_client(tcp);
        let mut last_seen_by_client = tr_last;
        for pod_tsval in [tp0, tp0.wrapping_add(1), tp0.wrapping_add(40_000), tp0.wrapping_add(0x7000_0000)] {
            let options = [vec![OPT_NOP, OPT_NOP], timestamps(pod_tsval, 0x5555_0000)].concat();
            let (out, layout) = run(segment(&from, 9, 9, ACK_FLAG, 100, &options), &from, &flow);
            let tsval = word(&out, layout.tsval().expect("timestamps"));
            assert_eq!(tsval, tsval_to_client(pod_tsval, tcp.ts_offset));
            assert!(serial_before(last_seen_by_client, tsval), "PAWS: {tsval:#x} after {last_seen_by_client:#x}");
            last_seen_by_client = tsval;
            assert_eq!(word(&out, layout.tsecr().expect("timestamps")), 0x5555_0000, "TSecr echoes C: unchanged");
            if pod_tsval == tp0 {
                assert_eq!(tsval, tr_last.wrapping_add(1), "P's first TSval reaches C right after R's last");
            }

            // C echoes it back: P gets its own TSval again; C's TSval passes unchanged.
            let (back_from, back_flow) = to_pod(tcp);
            let options = [vec![OPT_NOP, OPT_NOP], timestamps(0x0c0c_0c0c, tsval)].concat();
            let (out, layout) = run(segment(&back_from, 9, 9, ACK_FLAG, 100, &options), &back_from, &back_flow);
            assert_eq!(word(&out, layout.tsecr().expect("timestamps")), pod_tsval, "TSecr - T");
            assert_eq!(word(&out, layout.tsval().expect("timestamps")), 0x0c0c_0c0c, "C's TSval unchanged");
        }
    }
}

#[test]
fn echoes_of_the_routers_own_timestamps_become_the_pods_first() {
    let tr_last = 0x0000_0003; // R's clock just wrapped: its earlier TSvals are near 2^32.
    let tp0 = 0x9000_0000;
    let tcp = SteerTcp::new(1, 2, tr_last, tp0, 7, 7);
    for (echo, expected) in [
        (tr_last, tp0),
        (tr_last.wrapping_sub(1), tp0),
        (0xffff_fff0, tp0),
        (tr_last.wrapping_sub(0x7fff_ffff), tp0),
        (tr_last.wrapping_add(1), tp0),
        (tr_last.wrapping_add(2), tp0 + 1),
    ] {
        assert_eq!(tsecr_to_pod(echo, tcp.ts_offset, tp0, tr_last), expected, "echo {echo:#x}");
        let (from, flow) = to_pod(tcp);
        let options = [vec![OPT_NOP, OPT_NOP], timestamps(77, echo)].concat();
        let (out, layout) = run(segment(&from, 9, 9, ACK_FLAG, 100, &options), &from, &flow);
        assert_eq!(word(&out, layout.tsecr().expect("timestamps")), expected, "echo {echo:#x} in a segment");
    }
}

#[test]
fn sack_edges_move_by_d_towards_the_pod_only() {
    let tcp = SteerTcp::new(0xffff_0000, 0x0001_0000, 1, 1, 7, 7);
    let d = tcp.seq_offset;
    let all = [(0xffff_fff0u32, 0x0000_0010u32), (100, 200), (300, 400), (0x7fff_ffff, 0x8000_0100)];
    for blocks in 1..=4 {
        let edges = &all[..blocks];
        let options = [vec![OPT_NOP, OPT_NOP], sack(edges)].concat();
        let (from, flow) = to_pod(tcp);
        let (out, layout) = run(segment(&from, 9, 9, ACK_FLAG, 100, &options), &from, &flow);
        assert_eq!(layout.sack_blocks, blocks);
        for (i, (left, right)) in edges.iter().enumerate() {
            assert_eq!(word(&out, layout.sack_edge(2 * i).expect("left")), left.wrapping_add(d), "block {i} left");
            assert_eq!(
                word(&out, layout.sack_edge(2 * i + 1).expect("right")),
                right.wrapping_add(d),
                "block {i} right"
            );
        }
        let (from, flow) = to_client(tcp);
        let (out, layout) = run(segment(&from, 9, 9, ACK_FLAG, 100, &options), &from, &flow);
        for (i, (left, right)) in edges.iter().enumerate() {
            assert_eq!(word(&out, layout.sack_edge(2 * i).expect("left")), *left, "P's SACK of C's data unchanged");
            assert_eq!(word(&out, layout.sack_edge(2 * i + 1).expect("right")), *right);
        }
    }
}

#[test]
fn window_follows_the_scale_the_client_knows() {
    // (window, Wp, Wr) -> what C reads.
    for (window, wp, wr, expected) in [
        (1000u16, 7u8, 7u8, 1000u16),
        (1000, 9, 7, 4000),     // P scales more: C needs bigger numbers
        (1000, 7, 9, 250),      // P scales less: rounded down
        (1001, 7, 9, 250),      // never more room than P offered
        (20_000, 10, 7, 65535), // does not fit: clamped
        (65535, 14, 0, 65535),
        (65535, 0, 14, 3),
        (3, 0, 14, 0),
        (500, 20, 0, 65535), // shifts above 14 count as 14
        (1 << 10, 30, 14, 1 << 10),
    ] {
        assert_eq!(window_to_client(window, wp, wr), expected, "window {window} Wp {wp} Wr {wr}");
        let (from, flow) = to_client(SteerTcp::new(1, 2, 3, 4, wr, wp));
        let (out, _) = run(segment(&from, 9, 9, ACK_FLAG, window, &[]), &from, &flow);
        assert_eq!(half(&out, 14), expected, "window {window} Wp {wp} Wr {wr} in a segment");
        let (back_from, back_flow) = to_pod(SteerTcp::new(1, 2, 3, 4, wr, wp));
        let (out, _) = run(segment(&back_from, 9, 9, ACK_FLAG, window, &[]), &back_from, &back_flow);
        assert_eq!(half(&out, 14), window, "C's window passes unchanged");
    }
    // A SYN's window is never scaled.
    let (from, flow) = to_client(SteerTcp::new(1, 2, 3, 4, 0, 7));
    let (out, _) = run(segment(&from, 9, 9, SYN_ACK, 1000, &[]), &from, &flow);
    assert_eq!(half(&out, 14), 1000);
}

#[test]
fn checksums_match_a_full_recomputation_for_any_option_layout() {
    let tcp = SteerTcp::new(0x1357_9bdf, 0xfdb9_7531, 0x8000_0000, 0x0000_1000, 2, 11);
    let ts = timestamps(0xdead_beef, 0x8000_1234);
    let blocks = sack(&[(0x0102_0304, 0x0506_0708), (0xf0f0_f0f0, 0x0f0f_0f0f)]);
    let layouts: [(&str, Vec<u8>); 7] = [
        ("none", vec![]),
        ("linux: nop nop ts", [vec![OPT_NOP, OPT_NOP], ts.clone()].concat()),
        ("ts at an odd offset", [vec![OPT_NOP], ts.clone()].concat()),
        ("ts first, then sack at an even offset", [ts.clone(), blocks.clone()].concat()),
        ("sack at an odd offset, then ts", [vec![OPT_NOP], blocks.clone(), vec![OPT_NOP], ts.clone()].concat()),
        ("unknown option before ts", [vec![30, 4, 0xaa, 0xbb, OPT_NOP], ts.clone()].concat()),
        ("sack-permitted and ts, 40 bytes", {
            let mut o = [vec![OPT_SACK_PERMITTED, 2], ts.clone(), sack(&[(1, 2), (3, 4)])].concat();
            o.resize(40, OPT_NOP);
            o
        }),
    ];
    for (name, options) in layouts {
        for (from, flow) in [to_pod(tcp), to_client(tcp)] {
            let (_, layout) = run(segment(&from, 0xffff_ffff, 0xffff_fffe, PSH_ACK, 0xffff, &options), &from, &flow);
            assert_eq!(layout.timestamps != 0, options.contains(&OPT_TIMESTAMPS), "{name}: timestamps found");
        }
    }
}

#[test]
fn ipv6_pseudo_header_is_kept_too() {
    let tcp = SteerTcp::new(5, 10, 20, 40, 7, 7);
    let (mut from, mut flow) = to_pod(tcp);
    from.family = FAMILY_IPV6;
    from.src_addr = [0x20, 0x01, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
    from.dst_addr = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    flow.family = FAMILY_IPV6;
    flow.src_addr = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    flow.dst_addr = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf4, 1, 7];
    run(segment(&from, 1, 2, ACK_FLAG, 3, &[OPT_NOP, OPT_NOP, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]), &from, &flow);
}

#[test]
fn malformed_segments_are_refused_untouched() {
    let tcp = SteerTcp::new(1, 2, 3, 4, 7, 7);
    let (from, flow) = to_pod(tcp);
    let ts = timestamps(1, 2);
    let cases: [(&str, Vec<u8>, SteerError); 8] = [
        ("length byte below 2", vec![30, 1, 0, 0], SteerError::Options),
        ("option past the header", vec![OPT_NOP, OPT_NOP, 30, 8, 0, 0, 0, 0], SteerError::Options),
        ("length byte past the header", vec![OPT_NOP, OPT_NOP, OPT_NOP, 30], SteerError::Options),
        ("timestamps of length 8", vec![OPT_TIMESTAMPS, 8, 0, 0, 0, 0, 0, 0], SteerError::Options),
        ("two timestamp options", [ts.clone(), vec![OPT_NOP, OPT_NOP], ts.clone()].concat(), SteerError::Options),
        ("sack of no block", vec![OPT_SACK, 2, OPT_NOP, OPT_NOP], SteerError::Options),
        ("sack of length 9", vec![OPT_SACK, 9, 0, 0, 0, 0, 0, 0, 0, OPT_NOP, OPT_NOP, OPT_NOP], SteerError::Options),
        ("window scale of length 4", vec![3, 4, 7, 0], SteerError::Options),
    ];
    for (name, options, error) in cases {
        let mut seg = segment(&from, 1, 2, ACK_FLAG, 3, &options);
        let before = seg.clone();
        assert_eq!(translate(seg.as_mut_slice(), &from, &flow), Err(error), "{name}");
        assert_eq!(seg, before, "{name}: nothing written");
    }
    let mut seg = segment(&from, 1, 2, ACK_FLAG, 3, &[OPT_NOP, OPT_NOP, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    let mut short = seg[..30].to_vec();
    assert_eq!(translate(short.as_mut_slice(), &from, &flow), Err(SteerError::Truncated), "header cut short");
    assert_eq!(short, seg[..30]);
    seg[12] = 4 << 4;
    assert_eq!(translate(seg.as_mut_slice(), &from, &flow), Err(SteerError::Header), "data offset 4");
    seg[12] = 8 << 4;
    let mut wrong = flow;
    wrong.direction = 0;
    assert_eq!(translate(seg.as_mut_slice(), &from, &wrong), Err(SteerError::Direction));
    wrong = flow;
    wrong.family = FAMILY_IPV6;
    assert_eq!(translate(seg.as_mut_slice(), &from, &wrong), Err(SteerError::Family));
}

#[test]
fn the_walk_stops_at_eol_and_skips_nops() {
    let seg = segment(
        &key(CLIENT, 1, ROUTER, 2),
        0,
        0,
        ACK_FLAG,
        0,
        &[OPT_NOP, OPT_NOP, OPT_NOP, 0, OPT_TIMESTAMPS, 3, 9, 9],
    );
    assert_eq!(walk(seg.as_slice(), 28), Ok(OptionLayout::default()), "a bad option after EOL is padding");
    let reply_key = to_pod(SteerTcp::default()).1.reply_key();
    assert_eq!(reply_key, key(POD, POD_PORT, NODE_Q, Q_PORT), "the other direction's arrival key");
}
