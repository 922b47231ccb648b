//! `xdp_front`: the router's XDP program on the node NIC.
//!
//! Today it observes only: it parses each packet and counts it, then hands it to the kernel stack.
//!
//! - Verdict policy: `XDP_PASS` for every packet. Unparsed traffic (headers cut short or
//!   malformed) is counted in `STATS_UNPARSED` and passed too; nothing is dropped, redirected or
//!   aborted.
//! - Bounds: every packet read goes through `parse::ptr_at`, which checks against `data_end` right
//!   before the read. Headers read: Ethernet II (no VLAN), IPv4 (IHL-sized, options skipped),
//!   IPv6 fixed header (extension headers not walked), TCP fixed header. Only the linear part of
//!   the frame is read (no `xdp.frags`).
//! - Byte order: header fields are network order, converted with `from_be_bytes`; map keys and
//!   values are host order.
//! - Maps: `XDP_STATS` (see `stats.rs`): `BPF_MAP_TYPE_PERCPU_ARRAY`, BTF-defined, 6 entries of
//!   `PacketCounter { packets: u64, bytes: u64 }` per CPU, key `u32`; written only here, read and
//!   pinned (`<pin_dir>/XDP_STATS`) by `router-user`'s XDP loader.
//! - Counter layout (index: meaning), from `router_common::stats`: 0 total, 1 IPv4, 2 IPv6, 3 TCP,
//!   4 other EtherType, 5 unparsed; `total = ipv4 + ipv6 + other + unparsed`, `tcp <= ipv4 + ipv6`.
//!   `bytes` adds `data_end - data` (the frame from the Ethernet header on).
//! - Hashing: none. Logging: none on the packet path.
//! - Verifier: no loops; the largest variable offset is the IPv4 header length (<= 60 bytes).
//!   Computing `data_end - data` needs a privileged loader (CAP_BPF + CAP_PERFMON), which the
//!   router is.
//! - Kernel and attach modes: generic (`skb`) and native (`driver`) XDP both work. Needs BTF map
//!   support (>= 5.2) and, for the loader's `bpf_link` attach, >= 5.9 (aya falls back to netlink
//!   attach before that). Developed on 6.18.
#![no_std]
#![no_main]

mod headers;
mod parse;
mod stats;

use aya_ebpf::{bindings::xdp_action, macros::xdp, programs::XdpContext};
use router_common::stats::{STATS_IPV4, STATS_IPV6, STATS_OTHER, STATS_TCP, STATS_TOTAL, STATS_UNPARSED};

use crate::parse::{Unparsed, L3};

#[xdp]
pub fn xdp_front(ctx: XdpContext) -> u32 {
    // Verdict policy: a packet the parser could not read is passed on, never dropped.
    try_xdp_front(&ctx).unwrap_or(xdp_action::XDP_PASS)
}

/// Counts the packet and returns its verdict (`XDP_PASS`). Expects nothing validated. Returns
/// `Err(Unparsed)` (after counting it as unparsed) when a header was cut short or malformed.
#[inline(always)]
fn try_xdp_front(ctx: &XdpContext) -> Result<u32, Unparsed> {
    let bytes = (ctx.data_end() - ctx.data()) as u64;
    stats::count(STATS_TOTAL, bytes);
    let packet = match parse::parse(ctx) {
        Ok(packet) => packet,
        Err(unparsed) => {
            stats::count(STATS_UNPARSED, bytes);
            return Err(unparsed);
        }
    };
    let l3 = match packet.l3 {
        L3::Ipv4 => STATS_IPV4,
        L3::Ipv6 => STATS_IPV6,
        L3::Other => STATS_OTHER,
    };
    stats::count(l3, bytes);
    if packet.tcp {
        stats::count(STATS_TCP, bytes);
    }
    Ok(xdp_action::XDP_PASS)
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

/// The kernel's license string for this object. It decides whether GPL-only helpers may be
/// called; none are used (map lookups only), so the project's own license is declared.
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 11] = *b"Apache-2.0\0";
