//! The passthrough sockmap relay: `sockmap_verdict`, an `sk_skb` stream-verdict program on the
//! `SOCKMAP_SOCKS` SOCKHASH, moves every skb a relayed socket receives to its peer socket's egress,
//! so a bound TLS passthrough connection's bytes go client <-> pod without a trip through
//! userspace. Built as its own object (`router-sockmap`) so it loads without the XDP maps.
//!
//! - Verdict policy: a socket with a `SOCKMAP_PEERS` entry whose peer is in `SOCKMAP_TARGETS` ->
//!   redirect to the peer's egress (`bpf_sk_redirect_hash`, flags 0), counted in the entry. No
//!   entry, or the peer missing -> `SK_PASS`: the bytes stay on the receiving socket, readable by
//!   userspace, never dropped (userspace inserts the peer before the socket, so this does not
//!   happen while a relay is set up). Zero-length skbs (a bare FIN) -> `SK_DROP`: there is nothing to
//!   move, and redirected they would fail the peer (its send loop takes a zero-byte send for a broken
//!   pipe); userspace sees the FIN (EPOLLRDHUP) and passes it on after the bytes before it.
//! - No stream parser: with a verdict program only, the kernel (>= 5.13, the verdict-only psock
//!   mode) hands the program each skb as it is read from the receive queue, in order, including
//!   skbs that were queued before the socket was inserted (on the next data-ready call).
//! - Maps (BTF-defined, not pinned; layouts in `router_common::sockmap`, writers in
//!   `router_common::maps`): `SOCKMAP_SOCKS` and `SOCKMAP_TARGETS` (SOCKHASH, key `SockKey`),
//!   `SOCKMAP_PEERS` (hash, no prealloc, `SockKey` -> `SockmapPeer`). All keys and values host order.
//! - Bounds and verifier: no packet data is read (only `skb->len` and the socket cookie); no loops.
//! - Logging: none.
//! - Kernel: SOCKHASH (>= 4.18), `bpf_get_socket_cookie` for `sk_skb` (>= 4.20), verdict-only
//!   mode (>= 5.13). Developed on 6.18.
#![no_std]
#![no_main]

use aya_ebpf::{
    bindings::{sk_action, BPF_F_NO_PREALLOC},
    btf_maps::{HashMap, SockHash},
    helpers::bpf_get_socket_cookie,
    macros::{btf_map, stream_verdict},
    programs::SkBuffContext,
};
use router_common::{
    maps::SOCKMAP_MAX_SOCKETS,
    sockmap::{SockKey, SockmapPeer},
};

const MAX: usize = SOCKMAP_MAX_SOCKETS as usize;

/// Relayed sockets, with `sockmap_verdict` attached (SOCKHASH, 8-byte key). Written by userspace.
#[btf_map]
static SOCKMAP_SOCKS: SockHash<SockKey, MAX> = SockHash::new();

/// Redirect targets (SOCKHASH, 8-byte key, no program attached). Written by userspace.
#[btf_map]
static SOCKMAP_TARGETS: SockHash<SockKey, MAX> = SockHash::new();

/// Socket -> peer and counters (hash, 8-byte key, 24-byte value, allocated on insert). Entries
/// written by userspace; `bytes`/`skbs` by this program.
#[btf_map]
static SOCKMAP_PEERS: HashMap<SockKey, SockmapPeer, MAX, { BPF_F_NO_PREALLOC as usize }> = HashMap::new();

#[stream_verdict]
pub fn sockmap_verdict(ctx: SkBuffContext) -> u32 {
    if ctx.len() == 0 {
        // A bare FIN. Redirected, it would reach the peer's send loop, which takes a zero-byte send for a
        // broken pipe and fails the peer; userspace passes the FIN on instead.
        return sk_action::SK_DROP;
    }
    // SAFETY: `ctx.skb.skb` is the program's `__sk_buff` context pointer, which is what the helper takes.
    let cookie = unsafe { bpf_get_socket_cookie(ctx.skb.skb.cast()) };
    let Some(entry) = SOCKMAP_PEERS.get_ptr_mut(SockKey { cookie }) else {
        return sk_action::SK_PASS;
    };
    // SAFETY: the pointer is a live `SOCKMAP_PEERS` value; the entry is only removed by userspace
    // after the socket left `SOCKMAP_SOCKS`, and RCU keeps it valid for this run anyway.
    let peer = unsafe { (*entry).peer };
    let verdict = SOCKMAP_TARGETS.redirect_skb(&ctx, SockKey { cookie: peer }, 0) as u32;
    if verdict != sk_action::SK_PASS {
        // The peer is not (or no longer) a target: keep the bytes on this socket.
        return sk_action::SK_PASS;
    }
    // SAFETY: as above; this socket's skbs are handled one at a time, so the adds do not race.
    unsafe {
        (*entry).bytes += u64::from(ctx.len());
        (*entry).skbs += 1;
    }
    verdict
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

/// The kernel's license string for this object: no GPL-only helper is called (map, socket cookie
/// and redirect helpers only).
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 11] = *b"Apache-2.0\0";
