//! The conntrack of the nodePort path: `CONNTRACK` (client -> nodePort flow, to its endpoint) and
//! `CONNTRACK_REV` (endpoint -> client reply, to the nodePort address it must carry). `xdp_front`
//! records a flow both ways on its first packet and refreshes the forward entry on each one;
//! `nat_reverse` refreshes the reverse entry; userspace deletes idle entries (the sweep in
//! `router-user/src/xdp/conntrack.rs`) and the LRU maps evict the least recently used when full.
//!
//! Entries (`router_common::nat::CtEntry`): the target address and port, `last_seen_ns`
//! (`bpf_ktime_get_ns`, CLOCK_MONOTONIC, refreshed at most once per `REFRESH_NS` so a busy flow
//! does not write its entry on every packet) and the `CT_FIN`/`CT_RST` flags seen.

use router_common::nat::{CtEntry, Endpoint, FlowKey, CT_FIN, CT_RST};
use router_common::stats::STATS_CT_STALE;

use crate::{
    headers::{TCP_FIN, TCP_RST},
    maps::{CONNTRACK, CONNTRACK_REV},
    stats::count,
};

/// `bpf_map_update_elem` flag: create or replace.
const BPF_ANY: u64 = 0;
/// Timestamps in conntrack entries are refreshed when older than this (ns).
const REFRESH_NS: u64 = 1_000_000_000;

/// The conntrack flags (`CT_FIN`, `CT_RST`) of a packet with TCP flags `tcp_flags`.
#[inline(always)]
pub fn seen_flags(tcp_flags: u8) -> u16 {
    let mut seen = 0;
    if tcp_flags & TCP_FIN != 0 {
        seen |= CT_FIN;
    }
    if tcp_flags & TCP_RST != 0 {
        seen |= CT_RST;
    }
    seen
}

/// Refreshes an entry's timestamp (when stale) and adds the `seen` flags; `current` is the value
/// just read from it.
///
/// # Safety
/// `entry` must point at a live conntrack map value.
#[inline(always)]
pub unsafe fn refresh(entry: *mut CtEntry, current: &CtEntry, now: u64, seen: u16) {
    if now.wrapping_sub(current.last_seen_ns) > REFRESH_NS {
        // SAFETY: guaranteed by the caller.
        unsafe { (*entry).last_seen_ns = now };
    }
    if current.flags & seen != seen {
        // SAFETY: guaranteed by the caller.
        unsafe { (*entry).flags = current.flags | seen };
    }
}

/// Refreshes a forward entry (see [`refresh`]); returns its target.
///
/// # Safety
/// `entry` must point at a live conntrack map value.
#[inline(always)]
pub unsafe fn touch(entry: *mut CtEntry, now: u64, seen: u16) -> ([u8; 16], u16) {
    // SAFETY: guaranteed by the caller.
    let current = unsafe { *entry };
    // SAFETY: guaranteed by the caller.
    unsafe { refresh(entry, &current, now, seen) };
    (current.addr, current.port)
}

/// Records a new flow both ways; on failure removes what was written and returns false.
#[inline(always)]
pub fn record(key: &FlowKey, endpoint: &Endpoint, now: u64, seen: u16) -> bool {
    let forward = CtEntry { last_seen_ns: now, addr: endpoint.addr, port: endpoint.port, flags: seen, _pad: 0 };
    if CONNTRACK.insert(key, forward, BPF_ANY).is_err() {
        return false;
    }
    let reply = FlowKey {
        src_addr: endpoint.addr,
        dst_addr: key.src_addr,
        src_port: endpoint.port,
        dst_port: key.src_port,
        family: key.family,
        protocol: key.protocol,
        _pad: [0; 2],
    };
    let reverse = CtEntry { last_seen_ns: now, addr: key.dst_addr, port: key.dst_port, flags: 0, _pad: 0 };
    if CONNTRACK_REV.insert(reply, reverse, BPF_ANY).is_err() {
        let _ = CONNTRACK.remove(key);
        return false;
    }
    true
}

/// A SYN to `key` (not a nodePort): if a reverse entry for the same addresses and ports exists, it
/// is left over from an earlier nodePort flow and would rewrite this connection's replies.
#[inline(always)]
pub fn clear_stale_reverse(key: &FlowKey, bytes: u64) {
    let reply = key.reversed();
    if CONNTRACK_REV.get_ptr(reply).is_some() && CONNTRACK_REV.remove(reply).is_ok() {
        count(STATS_CT_STALE, bytes);
    }
}
