//! The `steer_translate` XDP entry point and [`steer`], the stage it runs: look the packet's
//! arrival 5-tuple up in `STEER_FLOWS`, translate it, count it, and choose the verdict (policy in
//! the module comment of `steer`).

use aya_ebpf::{
    bindings::xdp_action,
    helpers::{bpf_ktime_get_ns, bpf_redirect},
    macros::xdp,
    programs::XdpContext,
};
use router_common::{
    nat::FAMILY_IPV4,
    steer::{SteerFlow, STEER_FIN, STEER_RST, STEER_STEERED},
};

use super::{maps::STEER_FLOWS, packet::arrival_key, rewrite::rewrite};
use crate::{
    headers::{TCP_FIN, TCP_RST, TCP_SYN},
    parse,
};

/// `last_seen_ns` is refreshed when older than this (ns), so a busy flow does not write its entry
/// on every packet.
const REFRESH_NS: u64 = 1_000_000_000;

#[xdp]
pub fn steer_translate(ctx: XdpContext) -> u32 {
    steer(&ctx)
}

/// Translates a steered flow's packet and returns the verdict; `XDP_PASS` (packet unchanged) for
/// everything that is not one. Expects nothing validated.
#[inline(always)]
pub fn steer(ctx: &XdpContext) -> u32 {
    let Ok(packet) = parse::parse(ctx) else {
        return xdp_action::XDP_PASS;
    };
    let Some(tcp) = packet.tcp else {
        return xdp_action::XDP_PASS;
    };
    if packet.fragment || tcp.family != FAMILY_IPV4 {
        return xdp_action::XDP_PASS;
    }
    let Ok((key, tcp_flags)) = arrival_key(ctx, &tcp) else {
        return xdp_action::XDP_PASS;
    };
    let Some(entry) = STEER_FLOWS.get_ptr_mut(key) else {
        return xdp_action::XDP_PASS;
    };
    // SAFETY: a valid pointer to this direction's entry, read in place (a copy would take 120 of
    // the 512 stack bytes); userspace writes the whole entry before setting it steered, and this
    // program writes only counters, `last_seen_ns` and `seen`, after its last use of `flow`.
    let flow: &SteerFlow = unsafe { &*entry };
    if flow.state != STEER_STEERED {
        return xdp_action::XDP_PASS;
    }
    let (if_index, last_seen_ns, seen_before) = (flow.if_index, flow.last_seen_ns, flow.seen);
    if tcp_flags & TCP_SYN != 0 || rewrite(ctx, &tcp, &key, flow).is_err() {
        // SAFETY: `entry` is a live map value of plain integers (on counter races see the adds below).
        unsafe { (*entry).dropped += 1 };
        return xdp_action::XDP_DROP;
    }
    let bytes = (ctx.data_end() - ctx.data()) as u64;
    // Counter adds are plain read-modify-writes (no atomic fetch-add on bpfel in stable Rust): one
    // direction of a flow arrives on one hook and, hashed by RSS on its 5-tuple, on one CPU, so a
    // lost increment needs the flow to move between queues mid-packet. The other writes store
    // values every racing writer agrees on (a newer time, more flags).
    // SAFETY: `entry` is a live map value of plain integers.
    unsafe {
        (*entry).packets += 1;
        (*entry).bytes += bytes;
        let now = bpf_ktime_get_ns();
        if now.wrapping_sub(last_seen_ns) > REFRESH_NS {
            (*entry).last_seen_ns = now;
        }
        let seen = seen_flags(tcp_flags);
        if seen_before & seen != seen {
            (*entry).seen = seen_before | seen;
        }
    }
    if if_index as usize == ctx.ingress_ifindex() {
        xdp_action::XDP_TX
    } else {
        // SAFETY: bpf_redirect only records the target for after the program returns (flags 0).
        unsafe { bpf_redirect(if_index, 0) as u32 }
    }
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
