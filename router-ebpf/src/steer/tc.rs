//! `steer_ingress`: the TC ingress half of the steering datapath, attached (tcx) to the client-facing
//! interface and to every pod-facing one. On the client-facing interface it translates the steered
//! packets `xdp_front` passed up (`super::program::Handoff`): segments whose checksum the sender left
//! partial and frames past 1,514 bytes. The pod-facing interfaces have no XDP program at all: there
//! it translates every steered packet from the pods (partial checksums and GSO super-packets are the
//! rule there, as every pod's veth keeps TX checksum offload and TSO) and records the pods' answers
//! to leg B's SYN (`super::setup::record_answer_of`). Generic XDP on a pod's veth would copy every
//! super-packet into one linear buffer before anything else saw it; native XDP there takes GSO away
//! from the pod.
//!
//! Why TC: the skb knows what XDP cannot see. `bpf_l4_csum_replace` updates a partial checksum's
//! pseudo-header sum and leaves the rest to whoever completes it, and updates a complete one in full
//! (`router_common::steer::checksum_change`); a GSO skb is rewritten once, header only, and the
//! kernel (or the NIC) cuts it into segments on the way out, each with its own sequence number.
//!
//! - Verdict policy: `TC_ACT_OK` (unchanged) for anything that is not IPv4 or IPv6 TCP with a
//!   steered or connecting `STEER_FLOWS` entry under its arrival 5-tuple, for IPv4 fragments and for
//!   IPv6 packets with an extension header before TCP; `TC_ACT_SHOT` for
//!   every packet to a connecting leg B (a SYN-ACK or RST recorded first, `XDP_STATS` 20), for a steered
//!   flow's SYN, a segment whose header or options do not parse, or a helper that refused (counted
//!   in the entry's `dropped` and `XDP_STATS` 24); otherwise the packet is translated with the
//!   same `router_common::steer::translate` as in XDP, its IP and Ethernet addresses set, counted
//!   (entry, `XDP_STATS` 23) and redirected to the egress of the entry's `if_index`
//!   (`TC_ACT_REDIRECT`).
//! - Bounds and access: every read and write through `bpf_skb_load_bytes`/`bpf_skb_store_bytes`
//!   (which work on non-linear skbs), checksums through `bpf_l3_csum_replace`/`bpf_l4_csum_replace`.
//! - Maps: `STEER_FLOWS` (lookup, counters as `super::program::account`), `STEER_ANSWERS` and
//!   `STEER_EVENTS` (the answers), `XDP_STATS`.

use core::ffi::c_void;

use crate::unusual::{unusual, Unusual};
use aya_ebpf::{
    bindings::{__sk_buff, BPF_F_PSEUDO_HDR, TC_ACT_OK, TC_ACT_SHOT},
    helpers::{bpf_l4_csum_replace, bpf_redirect, bpf_skb_load_bytes, bpf_skb_store_bytes},
    macros::classifier,
    programs::TcContext,
};
use router_common::{
    nat::{FlowKey, FAMILY_IPV4, FAMILY_IPV6, PROTO_TCP},
    stats::{STATS_STEER_ANSWER, STATS_TC_STEERED, STATS_TC_STEER_DROP},
    steer::{
        segment::CHECK, setup::STEER_CONNECTING, translate, ChecksumChange, OptionLayout, SteerError, SteerFlow,
        SynOptions, TcpBytes, STEER_STEERED,
    },
};

use super::{
    maps::STEER_FLOWS,
    packet::{syn_options_in_loop, walk_options_in_loop, Arrival},
    program::{account, Seen},
    setup::record_answer_of,
};
use crate::{
    headers::{
        EthHdr, Ipv4Hdr, Ipv6Hdr, TcpHdr, ETH_P_IP, ETH_P_IPV6, IPPROTO_TCP, IPV4_CHECK_OFF, IPV4_SRC_OFF,
        IPV6_SRC_OFF, TCP_ACK, TCP_RST, TCP_SYN,
    },
    stats::count,
};

const ETH_LEN: usize = size_of::<EthHdr>();
const IPV4_MF_OFFSET: u16 = 0x3fff;
/// Offset of the payload length in the IPv6 fixed header.
const IPV6_PAYLOAD_LEN_OFF: usize = 4;
/// Offset of the next-header byte in the IPv6 fixed header.
const IPV6_NEXT_HEADER_OFF: usize = 6;

/// Looks the packet's entry up ([`entry_state`]) and hands a connecting leg's packet to
/// [`answer`] and a steered flow's to [`translate_and_redirect`]. Each is a BPF function of its own
/// that reads the packet again: one frame holding the reads under the answer record or under the
/// translation ran past the 512-byte stack, and a second look-up of a steered packet's entry is
/// cheap next to it (and paid once per GSO super-packet, not per segment).
#[classifier]
pub fn steer_ingress(ctx: TcContext) -> i32 {
    match entry_state(&ctx) {
        Some(STEER_CONNECTING) => answer(&ctx),
        Some(STEER_STEERED) => {
            let verdict = translate_and_redirect(&ctx);
            // Here, not beside the counter: a frame under `translate_and_redirect` would pass the
            // 512-byte stack limit.
            if verdict == TC_ACT_SHOT as i32 {
                unusual(Unusual::TcSteerDrop);
            }
            verdict
        }
        _ => TC_ACT_OK,
    }
}

/// An IPv4 or IPv6 TCP packet's arrival 5-tuple and fixed fields, and where its TCP header is.
struct Arrived {
    packet: Arrival,
    l4_off: usize,
}

/// The state of the `STEER_FLOWS` entry under the packet's arrival 5-tuple, if it has one.
#[inline(never)]
fn entry_state(ctx: &TcContext) -> Option<u32> {
    let head = read_head(ctx)?;
    let entry = STEER_FLOWS.get_ptr(head.key)?;
    // SAFETY: a valid pointer to the entry; reading one `u32` of plain data.
    Some(unsafe { (*entry).state })
}

/// The pod's answer to leg B (or noise): recorded when it is a SYN-ACK or RST, and dropped either
/// way, as no socket owns Q.
#[inline(never)]
fn answer(ctx: &TcContext) -> i32 {
    let bytes = u64::from(ctx.len());
    if read_arrival(ctx).is_some_and(|arrived| record_answer(ctx, &arrived)) {
        count(STATS_STEER_ANSWER, bytes);
    }
    count(STATS_TC_STEER_DROP, bytes);
    TC_ACT_SHOT as i32
}

/// Translates a steered flow's packet and redirects it to the egress of the entry's interface
/// (`TC_ACT_REDIRECT`), or drops it (`TC_ACT_SHOT`): a SYN, or a translation that failed. Leaves
/// the packet alone (`TC_ACT_OK`) when its entry went away since [`entry_state`] looked.
#[inline(never)]
fn translate_and_redirect(ctx: &TcContext) -> i32 {
    let Some(head) = read_head(ctx) else {
        return TC_ACT_OK;
    };
    let packet = &head;
    let Some(entry) = STEER_FLOWS.get_ptr_mut(packet.key) else {
        return TC_ACT_OK;
    };
    let bytes = u64::from(ctx.len());
    // SAFETY: `entry` is a live `STEER_FLOWS` value, read in place; userspace writes the whole entry
    // before setting it steered, and this program writes only counters, `last_seen_ns`, `seen` and
    // `acked`, after its last use of `flow`.
    let flow: &SteerFlow = unsafe { &*entry };
    if flow.state != STEER_STEERED {
        return TC_ACT_OK;
    }
    let was = Seen { last_seen_ns: flow.last_seen_ns, seen: flow.seen, direction: flow.direction, acked: flow.acked };
    let if_index = flow.if_index;
    if packet.flags & TCP_SYN != 0 || rewrite(ctx, packet, flow).is_err() {
        // SAFETY: `entry` is a live map value of plain integers.
        unsafe { (*entry).dropped += 1 };
        count(STATS_TC_STEER_DROP, bytes);
        return TC_ACT_SHOT as i32;
    }
    // SAFETY: `entry` is this direction's live entry, not used as `flow` any more.
    unsafe { account(entry, was, packet.flags, packet.ack, bytes) };
    count(STATS_TC_STEERED, bytes);
    // SAFETY: bpf_redirect only records the target (egress of `if_index`, flags 0) for after the
    // program returns TC_ACT_REDIRECT, which it gives back.
    unsafe { bpf_redirect(if_index, 0) as i32 }
}

/// Records the pod's SYN-ACK or RST to a connecting leg B (see `super::setup::record_answer_of`).
#[inline(always)]
fn record_answer(ctx: &TcContext, arrived: &Arrived) -> bool {
    let packet = &arrived.packet;
    let options = if packet.flags & (TCP_SYN | TCP_ACK | TCP_RST) == TCP_SYN | TCP_ACK {
        let segment = SkbTcp { skb: ctx.skb.skb, l4_off: arrived.l4_off };
        match syn_options_in_loop(segment, packet.header_len) {
            Ok(options) => options,
            Err(_) => return false,
        }
    } else {
        SynOptions::default()
    };
    let Ok(eth) = ctx.load::<EthHdr>(0) else {
        return false;
    };
    // SAFETY: `ctx.skb.skb` is this program's context, readable for its whole run.
    let if_index = unsafe { (*ctx.skb.skb).ingress_ifindex };
    record_answer_of(packet, &options, (eth.src, eth.dst), if_index)
}

/// What the translation needs of an IPv4 (unfragmented) or IPv6 TCP packet: its arrival 5-tuple, where its
/// TCP header is, its flags and acknowledgement number. Kept small: it sits on the translation's
/// frame, which is near the 512-byte limit.
struct Head {
    key: FlowKey,
    l4_off: usize,
    flags: u8,
    ack: u32,
}

/// The [`Head`] of an IPv4 (unfragmented) or IPv6 (no extension header) TCP packet; `None` for
/// anything else.
#[inline(always)]
fn read_head(ctx: &TcContext) -> Option<Head> {
    let ether_type: [u8; 2] = ctx.load(12).ok()?;
    let mut key = FlowKey { protocol: PROTO_TCP, ..FlowKey::default() };
    let l4_off = match u16::from_be_bytes(ether_type) {
        ETH_P_IP => {
            let ip: Ipv4Hdr = ctx.load(ETH_LEN).ok()?;
            let ihl = usize::from(ip.version_ihl & 0x0f);
            if ip.version_ihl >> 4 != 4
                || ihl < 5
                || ip.protocol != IPPROTO_TCP
                || u16::from_be_bytes(ip.frag_off) & IPV4_MF_OFFSET != 0
            {
                return None;
            }
            key.family = FAMILY_IPV4;
            key.src_addr[..4].copy_from_slice(&ip.src);
            key.dst_addr[..4].copy_from_slice(&ip.dst);
            ETH_LEN + ihl * 4
        }
        ETH_P_IPV6 => {
            // Byte by byte, the addresses straight into the key: a whole `Ipv6Hdr` on the stack ran
            // `answer` past the 512-byte limit.
            let version: u8 = ctx.load(ETH_LEN).ok()?;
            let next_header: u8 = ctx.load(ETH_LEN + IPV6_NEXT_HEADER_OFF).ok()?;
            // An extension header (fragment, hop-by-hop, ...) before TCP: not steered, as in XDP.
            if version >> 4 != 6 || next_header != IPPROTO_TCP {
                return None;
            }
            key.family = FAMILY_IPV6;
            load_into(ctx, ETH_LEN + IPV6_SRC_OFF, &mut key.src_addr)?;
            load_into(ctx, ETH_LEN + IPV6_SRC_OFF + 16, &mut key.dst_addr)?;
            ETH_LEN + size_of::<Ipv6Hdr>()
        }
        _ => return None,
    };
    let th: TcpHdr = ctx.load(l4_off).ok()?;
    key.src_port = u16::from_be_bytes(th.src_port);
    key.dst_port = u16::from_be_bytes(th.dst_port);
    Some(Head { key, l4_off, flags: th.off_flags[1], ack: u32::from_be_bytes(th.ack) })
}

/// Reads 16 packet bytes (an IPv6 address) at `offset` straight into `out`; `None` past the packet's end.
#[inline(always)]
fn load_into(ctx: &TcContext, offset: usize, out: &mut [u8; 16]) -> Option<()> {
    // SAFETY: `ctx.skb.skb` is this program's context; `out` is a live 16-byte buffer. The helper
    // fails (non-zero) instead of reading past the packet.
    let failed =
        unsafe { bpf_skb_load_bytes(ctx.skb.skb.cast::<c_void>(), offset as u32, out.as_mut_ptr().cast(), 16) };
    (failed == 0).then_some(())
}

/// The whole arrival (for the answer record): the [`Head`] and the TCP header's other fields.
#[inline(always)]
fn read_arrival(ctx: &TcContext) -> Option<Arrived> {
    let head = read_head(ctx)?;
    let th: TcpHdr = ctx.load(head.l4_off).ok()?;
    let tcp_len = if head.key.family == FAMILY_IPV6 {
        let payload_len: [u8; 2] = ctx.load(ETH_LEN + IPV6_PAYLOAD_LEN_OFF).ok()?;
        u16::from_be_bytes(payload_len)
    } else {
        let total_len: [u8; 2] = ctx.load(ETH_LEN + 2).ok()?;
        u16::from_be_bytes(total_len).wrapping_sub((head.l4_off - ETH_LEN) as u16)
    };
    let packet = Arrival {
        key: head.key,
        flags: head.flags,
        header_len: usize::from(th.off_flags[0] >> 4) * 4,
        seq: u32::from_be_bytes(th.seq),
        ack: head.ack,
        window: u16::from_be_bytes(th.window),
        check: u16::from_be_bytes(th.check),
        tcp_len,
    };
    Some(Arrived { packet, l4_off: head.l4_off })
}

/// A helper refused a write (the skb could not be made writable, say).
struct Refused;

/// The TCP header through `translate` (checksum by the kernel's helpers), then the IP addresses
/// (IPv4 with the header checksum; IPv6 has none, its addresses count in TCP's pseudo-header only,
/// which `translate` moved), then the Ethernet addresses.
#[inline(always)]
fn rewrite(ctx: &TcContext, head: &Head, flow: &SteerFlow) -> Result<(), Refused> {
    let mut segment = SkbTcp { skb: ctx.skb.skb, l4_off: head.l4_off };
    let key = &head.key;
    translate(&mut segment, key, flow).map_err(|_| Refused)?;
    if key.family == FAMILY_IPV6 {
        ctx.store(ETH_LEN + IPV6_SRC_OFF, &flow.src_addr, 0).map_err(|_| Refused)?;
        ctx.store(ETH_LEN + IPV6_SRC_OFF + 16, &flow.dst_addr, 0).map_err(|_| Refused)?;
    } else {
        let v4 = |a: &[u8; 16]| [a[0], a[1], a[2], a[3]];
        for (at, old, new) in [
            (ETH_LEN + IPV4_SRC_OFF, v4(&key.src_addr), v4(&flow.src_addr)),
            (ETH_LEN + IPV4_SRC_OFF + 4, v4(&key.dst_addr), v4(&flow.dst_addr)),
        ] {
            let (old, new) = (u32::from_ne_bytes(old), u32::from_ne_bytes(new));
            if old != new {
                ctx.l3_csum_replace(ETH_LEN + IPV4_CHECK_OFF, u64::from(old), u64::from(new), 4)
                    .map_err(|_| Refused)?;
                ctx.store(at, &new, 0).map_err(|_| Refused)?;
            }
        }
    }
    let mut macs = [0u8; 12];
    macs[..6].copy_from_slice(&flow.dst_mac);
    macs[6..].copy_from_slice(&flow.src_mac);
    ctx.store(0, &macs, 0).map_err(|_| Refused)
}

/// A difference of 16-bit words read big endian, as the kernel's checksum helpers take it: they sum
/// words as they lie in memory (host order), and a ones' complement sum of byte-swapped words is the
/// byte-swapped sum. On a little-endian host a difference passed unswapped lands in the other byte of
/// each word; a receiver that verifies the checksum then drops the segment (veth peers never verify a
/// partial checksum, which is how such a slip hides).
#[inline(always)]
fn in_memory_order(diff: u32) -> u64 {
    u64::from(u16::from_ne_bytes((diff as u16).to_be_bytes()))
}

/// The TCP header of the skb, offsets from the TCP header start, read and written with
/// `bpf_skb_load_bytes`/`bpf_skb_store_bytes`; the checksum field through `bpf_l4_csum_replace`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SkbTcp {
    skb: *mut __sk_buff,
    l4_off: usize,
}

impl TcpBytes for SkbTcp {
    #[inline(always)]
    fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let mut bytes = [0u8; N];
        // SAFETY: `self.skb` is the program's context; `bytes` is a live N-byte stack buffer. The
        // helper fails (non-zero) instead of reading past the packet.
        let failed = unsafe {
            bpf_skb_load_bytes(
                self.skb.cast::<c_void>(),
                (self.l4_off + offset) as u32,
                bytes.as_mut_ptr().cast(),
                N as u32,
            )
        };
        (failed == 0).then_some(bytes)
    }

    #[inline(always)]
    fn store<const N: usize>(&mut self, offset: usize, bytes: [u8; N]) -> Option<()> {
        // SAFETY: as for `load`; flags 0: no checksum work, which `store_checksum` does.
        let failed =
            unsafe { bpf_skb_store_bytes(self.skb, (self.l4_off + offset) as u32, bytes.as_ptr().cast(), N as u32, 0) };
        (failed == 0).then_some(())
    }

    #[inline(always)]
    fn walk_options(&self, header_len: usize) -> Result<OptionLayout, SteerError> {
        walk_options_in_loop(*self, header_len)
    }

    /// Both differences to the kernel, which applies each as the skb's checksum state needs: a
    /// partial checksum takes only the pseudo-header's.
    #[inline(always)]
    fn store_checksum(&mut self, change: ChecksumChange) -> Option<()> {
        let at = (self.l4_off + CHECK) as u32;
        let pseudo = u64::from(BPF_F_PSEUDO_HDR);
        let (pseudo_diff, field_diff) = (in_memory_order(change.pseudo_diff()), in_memory_order(change.field_diff()));
        // SAFETY: `self.skb` is the program's context; size 0 in the flags: `to` is a difference.
        let failed = unsafe {
            bpf_l4_csum_replace(self.skb, at, 0, pseudo_diff, pseudo) != 0
                || bpf_l4_csum_replace(self.skb, at, 0, field_diff, 0) != 0
        };
        (!failed).then_some(())
    }
}
