//! The router's eBPF programs: `xdp_front` on the node NIC (ingress) and `nat_reverse` on the same
//! interface's TC egress hook.
//!
//! `xdp_front` parses each packet and counts it; TCP to one of the router Service's nodePorts on a
//! node address is rewritten to a local endpoint (the kube-proxy `externalTrafficPolicy: Local`
//! path, see `nat.rs`, with its conntrack in `conntrack.rs`), and `nat_reverse` restores the
//! nodePort address on the replies (see `reverse.rs`).
//!
//! - Verdict policy: `XDP_PASS` for everything that is not nodePort traffic, and for unparsed
//!   traffic (headers cut short or malformed, counted in `STATS_UNPARSED`), IPv4 fragments and
//!   IPv6 packets with extension headers. nodePort traffic: `XDP_PASS` after the rewrite, or
//!   `XDP_DROP` when there is no local endpoint (or its slot is missing, or conntrack is full).
//!   Nothing is redirected or aborted; a program error passes the packet.
//! - Bounds: every packet read and write goes through `parse::ptr_at`/`ptr_at_mut`, which check
//!   against `data_end` right before the access. Headers read: Ethernet II (no VLAN), IPv4
//!   (IHL-sized, options skipped), IPv6 fixed header (extension headers not walked), TCP fixed
//!   header. Only the linear part of the frame is read (no `xdp.frags`).
//! - Byte order: header fields are network order, converted with `from_be_bytes`; map keys and
//!   values: addresses network order, everything else host order (`router_common::nat`).
//! - Maps (all BTF-defined, pinned by the loader under `<pin_dir>/<NAME>`; layouts and writers in
//!   `router_common::maps`): `XDP_STATS` (per-CPU array, 16 counters), `NODE_ADDRS`, `NODE_PORTS`,
//!   `EP_SLOTS` (hashes written by userspace), `CONNTRACK`, `CONNTRACK_REV` (LRU hashes).
//! - Counter layout: `router_common::stats` (0 total, 1 IPv4, 2 IPv6, 3 TCP, 4 other, 5 unparsed,
//!   6 pass, 7 nat, 8-10 drops by reason, 11/12 conntrack hit/miss, 13 fragment, 14 reverse nat,
//!   15 stale reverse entry removed).
//! - Hashing: `router_common::hash::flow_hash` over the flow key, fixed seed, slot = hash % 257.
//! - Logging: none on the packet path.
//! - Verifier: no unbounded loops (the checksum loops run over fixed 4/16-byte arrays); the
//!   largest variable offset is the IPv4 header length (<= 60 bytes). Computing `data_end - data`
//!   needs a privileged loader (CAP_BPF + CAP_PERFMON), which the router is.
//! - Kernel and attach modes: generic (`skb`) and native (`driver`) XDP both work. Needs BTF map
//!   support (>= 5.2), LRU maps, `bpf_link` XDP attach (>= 5.9; aya falls back to netlink before
//!   that) and, for `nat_reverse`, tcx (>= 6.6; aya falls back to a clsact qdisc before that).
//!   Developed on 6.18.
#![no_std]
#![no_main]

mod conntrack;
mod headers;
mod maps;
mod nat;
mod parse;
mod reverse;
mod stats;
mod steer;

use aya_ebpf::{
    bindings::xdp_action,
    macros::{classifier, xdp},
    programs::{TcContext, XdpContext},
};
use router_common::stats::{
    STATS_DROP_CT_FULL, STATS_DROP_NO_ENDPOINT, STATS_DROP_NO_SLOT, STATS_FRAGMENT, STATS_IPV4, STATS_IPV6, STATS_NAT,
    STATS_OTHER, STATS_PASS, STATS_TCP, STATS_TOTAL, STATS_UNPARSED,
};

use crate::{nat::Verdict, parse::L3};

#[xdp]
pub fn xdp_front(ctx: XdpContext) -> u32 {
    try_xdp_front(&ctx)
}

#[classifier]
pub fn nat_reverse(ctx: TcContext) -> i32 {
    reverse::reverse(&ctx)
}

/// Counts the packet, runs the nodePort stage on complete, unfragmented TCP, and returns the
/// verdict. Expects nothing validated.
#[inline(always)]
fn try_xdp_front(ctx: &XdpContext) -> u32 {
    let bytes = (ctx.data_end() - ctx.data()) as u64;
    stats::count(STATS_TOTAL, bytes);
    let packet = match parse::parse(ctx) {
        Ok(packet) => packet,
        Err(_) => {
            stats::count(STATS_UNPARSED, bytes);
            stats::count(STATS_PASS, bytes);
            return xdp_action::XDP_PASS;
        }
    };
    let l3 = match packet.l3 {
        L3::Ipv4 => STATS_IPV4,
        L3::Ipv6 => STATS_IPV6,
        L3::Other => STATS_OTHER,
    };
    stats::count(l3, bytes);
    if packet.tcp.is_some() {
        stats::count(STATS_TCP, bytes);
    }
    if packet.fragment {
        stats::count(STATS_FRAGMENT, bytes);
    }
    let verdict = match packet.tcp {
        Some(tcp) if !packet.fragment => nat::forward(ctx, &tcp, bytes).unwrap_or(Verdict::Pass),
        _ => Verdict::Pass,
    };
    let (counter, action) = match verdict {
        Verdict::Pass => (STATS_PASS, xdp_action::XDP_PASS),
        Verdict::Nat => (STATS_NAT, xdp_action::XDP_PASS),
        Verdict::DropNoEndpoint => (STATS_DROP_NO_ENDPOINT, xdp_action::XDP_DROP),
        Verdict::DropNoSlot => (STATS_DROP_NO_SLOT, xdp_action::XDP_DROP),
        Verdict::DropCtFull => (STATS_DROP_CT_FULL, xdp_action::XDP_DROP),
    };
    stats::count(counter, bytes);
    action
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

/// The kernel's license string for this object. It decides whether GPL-only helpers may be
/// called; none are used (map, time, checksum and skb load/store helpers only), so the project's
/// own license is declared.
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 11] = *b"Apache-2.0\0";
