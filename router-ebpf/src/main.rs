//! The router's eBPF programs: `xdp_front` on the node NIC (ingress), `nat_reverse` on the NIC's TC
//! egress hook, `steer_ingress` on the TC ingress hook of the NIC (the steered packets XDP cannot
//! translate safely) and of each pod-facing interface (every steered packet from the pods and their
//! answers to leg B; no XDP program runs there, see `steer/tc.rs`), and `steer_translate` (the steering stage alone, loaded only by the
//! `BPF_PROG_TEST_RUN` tests).
//!
//! `xdp_front` parses each packet and counts it, then runs its TCP stages in order:
//! 1. steering (IPv4 and IPv6, `steer/`): a packet whose arrival 5-tuple has a steered `STEER_FLOWS` entry
//!    is translated into the other leg's packet and leaves (`XDP_TX` or `XDP_REDIRECT`), unless its
//!    checksum may be partial or it is longer than a standard Ethernet frame (1,514 bytes): then it
//!    is passed up unchanged for `steer_ingress` (counted as a hand-off, 21 or 22); one for a
//!    connecting leg B is the pod's answer (SYN-ACK or RST: recorded in `STEER_ANSWERS`, its key
//!    sent on `STEER_EVENTS`) or noise, dropped either way;
//! 2. nodePort: TCP to one of the router Service's nodePorts on a node address is rewritten to a
//!    local endpoint (the kube-proxy `externalTrafficPolicy: Local` path, see `nat.rs`, with its
//!    conntrack in `conntrack.rs`), and `nat_reverse` restores the nodePort address on the replies
//!    (see `reverse.rs`);
//! 3. SYN record (IPv4 and IPv6): a client SYN (no ACK) whose destination port after stage 2 is in
//!    `STEER_PORTS` is recorded in `STEER_SYNS` under the 5-tuple the router's socket sees, with the
//!    destination it arrived with; it then goes on as stage 2 decided.
//!
//! - Verdict policy: `XDP_PASS` for everything that is not steered or nodePort traffic, and for
//!   unparsed traffic (headers cut short or malformed, counted in `STATS_UNPARSED`), IPv4 fragments
//!   and IPv6 packets with extension headers. Steered: `XDP_TX`/`XDP_REDIRECT` after the
//!   translation, `XDP_DROP` for a steered flow's SYN, malformed options, and every packet to a
//!   connecting leg B (policy in `steer/mod.rs`). nodePort traffic: `XDP_PASS` after the rewrite,
//!   or `XDP_DROP` when there is no local endpoint (or its slot is missing, or conntrack is full).
//!   Nothing is aborted; a program error passes the packet.
//! - Bounds: every packet read and write at a fixed offset goes through `parse::ptr_at`/
//!   `ptr_at_mut`, which check against `data_end` right before the access; TCP options at variable
//!   offsets through `bpf_xdp_load_bytes`/`bpf_xdp_store_bytes` (`steer/packet.rs`). Headers read:
//!   Ethernet II (no VLAN), IPv4 (IHL-sized, options skipped), IPv6 fixed header (extension headers
//!   not walked), TCP header and, on steered flows and recorded SYNs/answers, its options. Only the
//!   linear part of the frame is read (no `xdp.frags`).
//! - Byte order: header fields are network order, converted with `from_be_bytes`; map keys and
//!   values: addresses and MACs network order, everything else host order (`router_common::nat`,
//!   `router_common::steer`).
//! - Maps (all BTF-defined, pinned by the loader under `<pin_dir>/<NAME>`; layouts and writers in
//!   `router_common::maps`): `XDP_STATS` (per-CPU array, 21 counters), `NODE_ADDRS`, `NODE_PORTS`,
//!   `EP_SLOTS` (hashes written by userspace), `CONNTRACK`, `CONNTRACK_REV` (LRU hashes),
//!   `STEER_PORTS` (hash written by userspace), `STEER_SYNS` (LRU hash), `STEER_ANSWERS`,
//!   `STEER_FLOWS` (hashes without preallocation), `STEER_EVENTS` (ring buffer).
//! - Counter layout: `router_common::stats` (0 total, 1 IPv4, 2 IPv6, 3 TCP, 4 other, 5 unparsed,
//!   6 pass, 7 nat, 8-10 drops by reason, 11/12 conntrack hit/miss, 13 fragment, 14 reverse nat,
//!   15 stale reverse entry removed, 16/17 steered to the pod / to the client, 18 steering drops,
//!   19 SYNs recorded, 20 answers recorded, 21/22 steered packets handed to TC (partial checksum /
//!   too long), 23/24 `steer_ingress` translated / dropped).
//! - Hashing: `router_common::hash::flow_hash` over the flow key, fixed seed, slot = hash % 257.
//! - Logging: debug records of unusual packets through aya-log (`unusual.rs`), off unless the
//!   loader turns them on; none for the common path.
//! - Verifier: no unbounded loops (the checksum loops run over fixed 4/16-byte arrays, the option
//!   walks are `bpf_loop` callbacks of at most 40 steps, the SACK rewrite at most 8 edges). Each
//!   stage is a BPF function of its own (`steer::program::stage`, `steer::setup::record_answer`,
//!   `nat::forward`, `steer::setup::record_syn`) called from a 64-byte `xdp_front` frame: inlined
//!   together they needed more than the 512-byte stack, and the verifier sums the frames along a
//!   call chain (the largest, `xdp_front` -> `stage` -> option walk step, was 64 + 416 + 16 bytes
//!   before IPv6; the first IPv6 build refused at 96 + 432 = 528, from a pre-rewrite IPv6 SYN
//!   address held in `xdp_front`'s frame, which `record_syn` now reads back from `CONNTRACK_REV`,
//!   and from address copies in `stage`, now made by `bpf_xdp_load_bytes`). About 278,000
//!   instructions walked for `xdp_front` on 6.18 (269,000 before IPv6 steering, 111,000 before
//!   `steer_ingress` came); 662,924 for the same source on a fresh machine on 2026-12-07 (kernel
//!   6.18.44; the same with bpf-linker's dependencies as locked, so the kernel's patch release is
//!   the suspect, not traced); the packet tests fail above 800,000. `steer_ingress` loads with the
//!   object. Computing `data_end - data` needs a privileged loader (CAP_BPF + CAP_PERFMON), which
//!   the router is.
//! - Kernel and attach modes: generic (`skb`) and native (`driver`) XDP both work. Needs BTF map
//!   support (>= 5.2), LRU maps, ring buffers (>= 5.8), `bpf_link` XDP attach (>= 5.9; aya falls
//!   back to netlink before that), `bpf_loop` (>= 5.17), `bpf_xdp_load_bytes`/`store_bytes`
//!   (>= 5.18) and, for `nat_reverse`, tcx (>= 6.6; aya falls back to a clsact qdisc before that).
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
mod unusual;

use aya_ebpf::{
    bindings::xdp_action,
    macros::{classifier, xdp},
    programs::{TcContext, XdpContext},
};
use router_common::stats::{
    STATS_DROP_CT_FULL, STATS_DROP_NO_ENDPOINT, STATS_DROP_NO_SLOT, STATS_FRAGMENT, STATS_IPV4, STATS_IPV6, STATS_NAT,
    STATS_OTHER, STATS_PASS, STATS_STEER_ANSWER, STATS_STEER_DROP, STATS_STEER_HANDOFF_LARGE,
    STATS_STEER_HANDOFF_PARTIAL, STATS_STEER_SYN, STATS_STEER_TO_CLIENT, STATS_STEER_TO_POD, STATS_TCP, STATS_TOTAL,
    STATS_UNPARSED,
};

use crate::{
    nat::Verdict,
    parse::{Tcp, L3},
    steer::{
        program::{stage, Handoff, Steered},
        setup::{is_client_syn, record_answer, record_syn},
    },
    unusual::{unusual, Unusual},
};

pub use steer::tc::steer_ingress;

#[xdp]
pub fn xdp_front(ctx: XdpContext) -> u32 {
    try_xdp_front(&ctx)
}

#[classifier]
pub fn nat_reverse(ctx: TcContext) -> i32 {
    reverse::reverse(&ctx)
}

/// Counts the packet, then on complete, unfragmented TCP runs the steering stage, the nodePort
/// stage and the SYN record, and returns the verdict. Expects nothing validated.
#[inline(always)]
fn try_xdp_front(ctx: &XdpContext) -> u32 {
    let bytes = (ctx.data_end() - ctx.data()) as u64;
    stats::count(STATS_TOTAL, bytes);
    let packet = match parse::parse(ctx) {
        Ok(packet) => packet,
        Err(_) => {
            stats::count(STATS_UNPARSED, bytes);
            stats::count(STATS_PASS, bytes);
            unusual(Unusual::Unparsed);
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
        unusual(Unusual::Fragment);
    }
    let verdict = match packet.tcp {
        Some(tcp) if !packet.fragment => tcp_stages(ctx, &tcp, bytes),
        _ => Verdict::Pass,
    };
    let (counter, action) = match verdict {
        Verdict::Pass => (STATS_PASS, xdp_action::XDP_PASS),
        Verdict::Nat => (STATS_NAT, xdp_action::XDP_PASS),
        Verdict::DropNoEndpoint => (STATS_DROP_NO_ENDPOINT, xdp_action::XDP_DROP),
        Verdict::DropNoSlot => (STATS_DROP_NO_SLOT, xdp_action::XDP_DROP),
        Verdict::DropCtFull => (STATS_DROP_CT_FULL, xdp_action::XDP_DROP),
        Verdict::SteerToPod(action) => (STATS_STEER_TO_POD, action),
        Verdict::SteerToClient(action) => (STATS_STEER_TO_CLIENT, action),
        Verdict::SteerDrop => (STATS_STEER_DROP, xdp_action::XDP_DROP),
        Verdict::SteerHandoffPartial => (STATS_STEER_HANDOFF_PARTIAL, xdp_action::XDP_PASS),
        Verdict::SteerHandoffLarge => (STATS_STEER_HANDOFF_LARGE, xdp_action::XDP_PASS),
    };
    stats::count(counter, bytes);
    action
}

/// The TCP stages, in order: steering (a steered or connecting flow's packet ends here), the
/// nodePort rewrite, then the record of a client SYN to a steered port (keyed by the 5-tuple after
/// the rewrite, with the destination it arrived with). IPv4 and IPv6 alike: the parser gives a TCP
/// header for IPv6 only when it follows the fixed header (an extension header leaves the packet to
/// the kernel, and such a connection to the relay). Each stage is a BPF function of its own (see
/// `steer::program::stage`); this frame holds only what passes between them. Expects `tcp` from
/// the parser, not a fragment.
#[inline(always)]
fn tcp_stages(ctx: &XdpContext, tcp: &Tcp, bytes: u64) -> Verdict {
    match stage(ctx, tcp) {
        Steered::NotOurs => {}
        Steered::ToPod(action) => return Verdict::SteerToPod(action),
        Steered::ToClient(action) => return Verdict::SteerToClient(action),
        Steered::Drop => {
            unusual(Unusual::SteerDrop);
            return Verdict::SteerDrop;
        }
        Steered::Handoff(Handoff::Partial) => {
            unusual(Unusual::HandoffPartial);
            return Verdict::SteerHandoffPartial;
        }
        Steered::Handoff(Handoff::Large) => {
            unusual(Unusual::HandoffLarge);
            return Verdict::SteerHandoffLarge;
        }
        Steered::Connecting => {
            if record_answer(ctx, tcp) {
                stats::count(STATS_STEER_ANSWER, bytes);
            }
            return Verdict::SteerDrop;
        }
    }
    let verdict = nat::forward(ctx, tcp, bytes).unwrap_or(Verdict::Pass);
    if matches!(verdict, Verdict::Pass | Verdict::Nat)
        && is_client_syn(ctx, tcp)
        && record_syn(ctx, tcp, matches!(verdict, Verdict::Nat))
    {
        stats::count(STATS_STEER_SYN, bytes);
    }
    verdict
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
