//! The steering stage ([`stage`]) that `xdp_front` runs first, and `steer_translate`, an XDP entry
//! point that runs only this stage (for the `BPF_PROG_TEST_RUN` tests of the translation rules).
//!
//! [`stage`] looks the packet's arrival 5-tuple up in `STEER_FLOWS`: a steered entry's packet is
//! translated, counted in the entry and sent on; a connecting entry's packet is the pod's answer
//! (the caller records it with `super::setup::record_answer`) or noise, dropped either way;
//! anything else is not the stage's. A steered packet that XDP cannot translate safely, one whose
//! checksum may be partial or one longer than a standard Ethernet frame, is passed up to `steer_ingress`
//! (`super::tc`), which translates the skb with the kernel's checksum helpers.

use aya_ebpf::{
    bindings::xdp_action,
    helpers::{bpf_ktime_get_ns, bpf_redirect},
    macros::xdp,
    programs::XdpContext,
};
use router_common::{
    nat::FAMILY_IPV6,
    steer::{
        may_be_partial, may_be_partial_v6, rules::acked_max, setup::STEER_CONNECTING, SteerFlow, STEER_FIN, STEER_RST,
        STEER_STEERED, STEER_TO_CLIENT,
    },
};

use super::{
    maps::STEER_FLOWS,
    packet::{arrival, Arrival},
    rewrite::rewrite,
    setup::record_answer,
};
use crate::{
    headers::{TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN},
    parse::{self, Tcp},
};

/// `last_seen_ns` is refreshed when older than this (ns), so a busy flow does not write its entry
/// on every packet.
const REFRESH_NS: u64 = 1_000_000_000;

/// What the steering stage did with a packet.
#[derive(Clone, Copy)]
pub enum Steered {
    /// No steered or connecting entry for its arrival 5-tuple: the next stages decide.
    NotOurs,
    /// Translated towards the pod; the action is `XDP_TX` or `XDP_REDIRECT`.
    ToPod(u32),
    /// Translated towards the client; the action is `XDP_TX` or `XDP_REDIRECT`.
    ToClient(u32),
    /// Dropped: a steered flow's SYN or malformed segment (counted in the entry's `dropped`).
    Drop,
    /// Passed up unchanged for `steer_ingress` to translate: why ([`Handoff`]).
    Handoff(Handoff),
    /// A packet to a connecting leg B: the caller hands it to `super::setup::record_answer`
    /// (a BPF function of its own, to keep each frame small) and drops it.
    Connecting,
}

/// Why a steered packet is left to the TC program.
#[derive(Clone, Copy)]
pub enum Handoff {
    /// Its checksum field is a bare pseudo-header sum: the sender left it partial (TX checksum
    /// offload), and an incremental update of the bytes XDP sees would corrupt it.
    Partial,
    /// Longer than a standard Ethernet frame: a GSO super-packet (generic XDP sees it
    /// linearised), which only the skb path can send on whole.
    Large,
}

#[xdp]
pub fn steer_translate(ctx: XdpContext) -> u32 {
    let Ok(packet) = parse::parse(&ctx) else {
        return xdp_action::XDP_PASS;
    };
    let Some(tcp) = packet.tcp else {
        return xdp_action::XDP_PASS;
    };
    if packet.fragment {
        return xdp_action::XDP_PASS;
    }
    match stage(&ctx, &tcp) {
        Steered::NotOurs => xdp_action::XDP_PASS,
        Steered::ToPod(action) | Steered::ToClient(action) => action,
        Steered::Drop => xdp_action::XDP_DROP,
        Steered::Handoff(_) => xdp_action::XDP_PASS,
        Steered::Connecting => {
            record_answer(&ctx, &tcp);
            xdp_action::XDP_DROP
        }
    }
}

/// The steering stage for an IPv4 or IPv6 (no extension header), unfragmented TCP packet (`tcp` from the parser). A packet
/// this returns [`Steered::NotOurs`] or [`Steered::Connecting`] for is unchanged; a dropped one
/// too.
///
/// Not inlined: a BPF function with its own stack frame. The stages of `xdp_front` each are one,
/// called from a small frame: inlined together, their frame ran past the 512-byte limit, and the
/// verifier sums the frames along each call chain (`bpf_loop` callbacks included).
#[inline(never)]
pub fn stage(ctx: &XdpContext, tcp: &Tcp) -> Steered {
    let Ok(arrived) = arrival(ctx, tcp) else {
        return Steered::NotOurs;
    };
    let packet = &arrived;
    let Some(entry) = STEER_FLOWS.get_ptr_mut(packet.key) else {
        return Steered::NotOurs;
    };
    // SAFETY: a valid pointer to this direction's entry; reading one `u32` of plain data.
    let state = unsafe { (*entry).state };
    if state == STEER_CONNECTING {
        return Steered::Connecting;
    }
    if state != STEER_STEERED {
        return Steered::NotOurs;
    }
    // SAFETY: a valid pointer to this direction's entry, read in place (a copy would take 120 of
    // the 512 stack bytes); userspace writes the whole entry before setting it steered, and this
    // program writes only counters, `last_seen_ns`, `seen` and `acked`, after its last use of `flow`.
    let flow: &SteerFlow = unsafe { &*entry };
    let (if_index, last_seen_ns, seen_before, direction, acked) =
        (flow.if_index, flow.last_seen_ns, flow.seen, flow.direction, flow.acked);
    let tcp_flags = packet.flags;
    let frame_len = ctx.data_end() - ctx.data();
    let verdict = if tcp_flags & TCP_SYN != 0 {
        Err(None)
    } else if let Some(reason) = handoff(frame_len, packet) {
        Err(Some(reason))
    } else {
        rewrite(ctx, tcp, &packet.key, flow).map_err(|_| None)
    };
    match verdict {
        Ok(_) => {}
        Err(Some(reason)) => return Steered::Handoff(reason),
        Err(None) => {
            // SAFETY: `entry` is a live map value of plain integers (on counter races see `account`).
            unsafe { (*entry).dropped += 1 };
            return Steered::Drop;
        }
    }
    let bytes = frame_len as u64;
    // SAFETY: `entry` is this direction's live entry, not used as `flow` any more.
    unsafe { account(entry, Seen { last_seen_ns, seen: seen_before, direction, acked }, tcp_flags, packet.ack, bytes) };
    let action = if if_index as usize == ctx.ingress_ifindex() {
        xdp_action::XDP_TX
    } else {
        // SAFETY: bpf_redirect only records the target for after the program returns (flags 0).
        unsafe { bpf_redirect(if_index, 0) as u32 }
    };
    if direction == STEER_TO_CLIENT {
        Steered::ToClient(action)
    } else {
        Steered::ToPod(action)
    }
}

/// What [`account`] needs of the entry as it was read before the packet was translated.
#[derive(Clone, Copy)]
pub struct Seen {
    pub last_seen_ns: u64,
    pub seen: u16,
    pub direction: u8,
    pub acked: u32,
}

/// Counts a translated packet of `bytes` bytes in its entry: packets and bytes, `last_seen_ns` (at
/// most once a second), FIN/RST into `seen`, and on the pod's side the newest acknowledgement.
///
/// Counter adds are plain read-modify-writes (no atomic fetch-add on bpfel in stable Rust): one
/// direction of a flow arrives on one hook and, hashed by RSS on its 5-tuple, on one CPU, so a lost
/// increment needs the flow to move between queues mid-packet. The other writes store values every
/// racing writer agrees on (a newer time, more flags, a later ack).
///
/// # Safety
/// `entry` points at a live `STEER_FLOWS` value.
#[inline(always)]
pub unsafe fn account(entry: *mut SteerFlow, was: Seen, tcp_flags: u8, ack: u32, bytes: u64) {
    // SAFETY: the caller's promise; the value is plain integers.
    unsafe {
        (*entry).packets += 1;
        (*entry).bytes += bytes;
        let now = bpf_ktime_get_ns();
        if now.wrapping_sub(was.last_seen_ns) > REFRESH_NS {
            (*entry).last_seen_ns = now;
        }
        let seen = seen_flags(tcp_flags);
        if was.seen & seen != seen {
            (*entry).seen = was.seen | seen;
        }
        // P's ack is not translated (it counts C's bytes, whose sequence space both legs share).
        if was.direction == STEER_TO_CLIENT && tcp_flags & TCP_ACK != 0 {
            let newer = acked_max(was.acked, ack);
            if newer != was.acked {
                (*entry).acked = newer;
            }
        }
    }
}

/// The longest frame XDP translates itself: a standard Ethernet frame (1,500-byte MTU plus the
/// 14-byte header). Anything longer is a GSO super-packet that generic XDP linearised, or a jumbo
/// frame; a generic-mode redirect refuses frames past the egress MTU, so these go to TC, whose
/// redirect sends an skb of any size and lets the egress segment it. (`bpf_check_mtu` would ask the
/// egress interface itself, but the kernel offers it to GPL programs only.)
const XDP_MAX_FRAME: usize = 1514;

/// Whether XDP must leave this steered packet to `steer_ingress`, and why: longer than
/// [`XDP_MAX_FRAME`] (checked first: a GSO packet's checksum field is partial too), or a checksum
/// field that may be partial. Only scalars already read by `arrival`: reading the headers again
/// here doubled the states the verifier walks for `xdp_front`.
#[inline(always)]
fn handoff(frame_len: usize, packet: &Arrival) -> Option<Handoff> {
    if frame_len > XDP_MAX_FRAME {
        return Some(Handoff::Large);
    }
    let key = &packet.key;
    let partial = if key.family == FAMILY_IPV6 {
        may_be_partial_v6(packet.check, &key.src_addr, &key.dst_addr, packet.tcp_len)
    } else {
        let v4 = |a: &[u8; 16]| [a[0], a[1], a[2], a[3]];
        may_be_partial(packet.check, v4(&key.src_addr), v4(&key.dst_addr), packet.tcp_len)
    };
    partial.then_some(Handoff::Partial)
}

#[inline(always)]
fn seen_flags(tcp_flags: u8) -> u16 {
    let mut seen = 0;
    if tcp_flags & TCP_FIN != 0 {
        seen |= STEER_FIN;
    }
    if tcp_flags & TCP_RST != 0 {
        seen |= STEER_RST;
    }
    seen
}
