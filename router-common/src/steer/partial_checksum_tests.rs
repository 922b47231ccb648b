//! Host tests of translation under TX checksum offload: a segment whose checksum field holds only
//! the pseudo-header sum (as every pod's veth sends it) is translated the way the TC program does it,
//! the kernel's two helper updates are applied as the kernel applies them to a `CHECKSUM_PARTIAL`
//! skb, and the checksum the NIC would then complete must equal a full recomputation over the
//! translated segment.

extern crate std;

use std::vec::Vec;

use super::{
    checksum_change::{may_be_partial, may_be_partial_v6, ChecksumChange},
    segment::{TcpBytes, CHECK},
    tests::{full_checksum, half, sack, segment, timestamps, to_client, to_pod},
    translate, SteerFlow, SteerTcp,
};
use crate::{
    checksum::{fold, sum_bytes},
    nat::{FlowKey, FAMILY_IPV6},
};

/// A segment of the TC program's kind: bytes, with the checksum field left to "the kernel", which
/// here knows the checksum is partial.
struct PartialSkb(Vec<u8>);

impl TcpBytes for PartialSkb {
    fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        self.0.as_slice().load(offset)
    }

    fn store<const N: usize>(&mut self, offset: usize, bytes: [u8; N]) -> Option<()> {
        self.0.as_mut_slice().store(offset, bytes)
    }

    fn store_checksum(&mut self, change: ChecksumChange) -> Option<()> {
        let field = half(&self.0, CHECK);
        self.store(CHECK, change.apply_to_partial(field).to_be_bytes())
    }
}

/// The bare pseudo-header sum of a segment of `from`'s addresses: what a sender with checksum offload
/// writes into the field.
fn partial_field(seg: &[u8], from: &FlowKey) -> u16 {
    let mut pseudo = Vec::new();
    if from.family == FAMILY_IPV6 {
        // RFC 8200 section 8.1: both addresses, the 32-bit length, three zeros, next header.
        pseudo.extend_from_slice(&from.src_addr);
        pseudo.extend_from_slice(&from.dst_addr);
        pseudo.extend_from_slice(&(seg.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 6]);
    } else {
        pseudo.extend_from_slice(&from.src_addr[..4]);
        pseudo.extend_from_slice(&from.dst_addr[..4]);
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    }
    fold(sum_bytes(&pseudo))
}

/// `(from, flow)` moved to IPv6: client 2001:db8::10, what it dialled fd00::2, Q fd00:1::1, pod
/// fd00:f401::7 (both directions keep their ports and offsets).
fn ipv6((mut from, mut flow): (FlowKey, SteerFlow)) -> (FlowKey, SteerFlow) {
    const CLIENT6: [u8; 16] = [0x20, 0x01, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
    const ROUTER6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    const Q6: [u8; 16] = [0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    const POD6: [u8; 16] = [0xfd, 0, 0xf4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];
    let to_pod = flow.direction == super::STEER_TO_POD;
    (from.src_addr, from.dst_addr) = if to_pod { (CLIENT6, ROUTER6) } else { (POD6, Q6) };
    (flow.src_addr, flow.dst_addr) = if to_pod { (Q6, POD6) } else { (ROUTER6, CLIENT6) };
    from.family = FAMILY_IPV6;
    flow.family = FAMILY_IPV6;
    (from, flow)
}

/// What the NIC (or `skb_checksum_help`) does with a partial checksum: sums the TCP header and
/// payload with the field as it is, and writes the complement.
fn complete(seg: &[u8]) -> u16 {
    !fold(sum_bytes(seg))
}

fn with_partial_checksum(mut seg: Vec<u8>, from: &FlowKey) -> Vec<u8> {
    let field = partial_field(&seg, from);
    seg[CHECK..CHECK + 2].copy_from_slice(&field.to_be_bytes());
    seg
}

#[test]
fn a_partial_checksum_completes_to_the_translated_segments_own() {
    let tcp = SteerTcp::new(0x8000_0000, 0x0000_1234, 0xffff_fff0, 77, 7, 9);
    let cases = [
        (to_client(tcp), timestamps(90, 5)),
        (to_pod(tcp), [timestamps(5, 0xffff_fff0), sack(&[(100, 200), (300, 400)])].concat()),
        (to_client(tcp), Vec::new()),
        (ipv6(to_client(tcp)), timestamps(90, 5)),
        (ipv6(to_pod(tcp)), [timestamps(5, 0xffff_fff0), sack(&[(100, 200), (300, 400)])].concat()),
        (ipv6(to_client(tcp)), Vec::new()),
    ];
    for ((from, flow), options) in cases {
        let seg = with_partial_checksum(segment(&from, 0xfff0_0000, 0x10, 0x18, 4000, &options), &from);
        let mut skb = PartialSkb(seg);
        let done = translate(&mut skb, &from, &flow).expect("translates");
        let out = skb.0;
        assert_eq!(
            complete(&out),
            full_checksum(&out, flow.family, &flow.src_addr, &flow.dst_addr),
            "completed by the NIC, the checksum is the translated segment's: {out:02x?}"
        );
        assert_eq!(half(&out, CHECK), partial_field(&out, &key_of(&flow)), "still the new pseudo-header sum alone");
        assert_ne!(done.checksum.full, half(&out, CHECK), "the complete-checksum update would have been wrong here");
    }
}

#[test]
fn both_differences_on_a_complete_checksum_give_the_complete_update() {
    let tcp = SteerTcp::new(5, 0xffff_0000, 1, 2, 7, 7);
    for (from, flow) in [to_client(tcp), ipv6(to_client(tcp)), ipv6(to_pod(tcp))] {
        let seg = segment(&from, 1, 2, 0x10, 300, &timestamps(3, 4));
        let old = half(&seg, CHECK);
        let mut copy = seg.clone();
        let done = translate(copy.as_mut_slice(), &from, &flow).expect("translates");
        assert_eq!(done.checksum.old, old);
        assert_eq!(done.checksum.apply_to_complete(old), done.checksum.full);
        assert_eq!(done.checksum.full, full_checksum(&copy, flow.family, &flow.src_addr, &flow.dst_addr));
    }
}

#[test]
fn a_bare_pseudo_header_sum_is_recognised_and_a_complete_checksum_is_not() {
    let (from, _) = to_pod(SteerTcp::new(1, 2, 3, 4, 7, 7));
    let complete = segment(&from, 1, 2, 0x10, 300, &timestamps(3, 4));
    let partial = with_partial_checksum(complete.clone(), &from);
    let v4 = |a: &[u8; 16]| [a[0], a[1], a[2], a[3]];
    let len = complete.len() as u16;
    assert!(may_be_partial(half(&partial, CHECK), v4(&from.src_addr), v4(&from.dst_addr), len));
    assert!(!may_be_partial(half(&complete, CHECK), v4(&from.src_addr), v4(&from.dst_addr), len));
    assert!(!may_be_partial(half(&partial, CHECK), v4(&from.src_addr), v4(&from.dst_addr), len + 1), "length counts");
}

#[test]
fn a_bare_ipv6_pseudo_header_sum_is_recognised_and_a_complete_checksum_is_not() {
    let (from, _) = ipv6(to_pod(SteerTcp::new(1, 2, 3, 4, 7, 7)));
    let complete = segment(&from, 1, 2, 0x10, 300, &timestamps(3, 4));
    let partial = with_partial_checksum(complete.clone(), &from);
    let len = complete.len() as u16;
    let (src, dst) = (&from.src_addr, &from.dst_addr);
    assert!(may_be_partial_v6(half(&partial, CHECK), src, dst, len));
    assert!(!may_be_partial_v6(half(&complete, CHECK), src, dst, len));
    assert!(!may_be_partial_v6(half(&partial, CHECK), src, dst, len + 1), "length counts");
    let mut other = *dst;
    other[8] ^= 1;
    assert!(!may_be_partial_v6(half(&partial, CHECK), src, &other, len), "every address word counts");
    let v4 = |a: &[u8; 16]| [a[0], a[1], a[2], a[3]];
    assert!(!may_be_partial(half(&partial, CHECK), v4(src), v4(dst), len), "not IPv4's four bytes");
}

/// The key a packet of `flow`'s translated direction carries.
fn key_of(flow: &SteerFlow) -> FlowKey {
    FlowKey {
        src_addr: flow.src_addr,
        dst_addr: flow.dst_addr,
        src_port: flow.src_port,
        dst_port: flow.dst_port,
        family: flow.family,
        protocol: 6,
        _pad: [0; 2],
    }
}
