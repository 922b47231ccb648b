//! The nodePort stage of `xdp_front`: TCP to a nodePort on a node address goes to a local
//! endpoint (destination rewritten in place, checksums updated incrementally) and is passed up;
//! with no local endpoint it is dropped; anything else is left alone.
//!
//! Per packet, in order: `NODE_PORTS` lookup by (destination port, family, TCP), then
//! `NODE_ADDRS` by destination address; then `CONNTRACK` by the flow (see `conntrack.rs`). A
//! conntrack hit reuses the recorded endpoint; a miss picks slot `flow_hash(flow) % RING_SIZE` of
//! the nodePort's `EP_SLOTS` table and records the flow both ways (`CONNTRACK` forward,
//! `CONNTRACK_REV` for the replies `nat_reverse` rewrites). A flow keeps its endpoint for as long
//! as its entry lives.
//!
//! SYNs that are not for a nodePort also check `CONNTRACK_REV` for an entry a finished nodePort
//! flow left under the same addresses and ports, and remove it, so a direct connection that
//! reuses a client port is never rewritten on the way out.

use aya_ebpf::{helpers::bpf_ktime_get_ns, programs::XdpContext};
use router_common::{
    checksum::{replace16, replace_bytes},
    hash::flow_hash,
    maps::RING_SIZE,
    nat::{Endpoint, FlowKey, NodeAddrKey, NodePortKey, FAMILY_IPV4, PROTO_TCP},
    stats::{STATS_CT_HIT, STATS_CT_MISS},
};

use crate::{
    conntrack::{clear_stale_reverse, record, seen_flags, touch},
    headers::{Ipv4Hdr, Ipv6Hdr, TcpHdr, TCP_ACK, TCP_SYN},
    maps::{CONNTRACK, EP_SLOTS, NODE_ADDRS, NODE_PORTS},
    parse::{ptr_at, ptr_at_mut, Tcp, Unparsed},
    stats::count,
    unusual::{unusual, Unusual},
};

/// What the TCP stages of `xdp_front` decided (the nodePort stage returns the first five).
#[derive(Clone, Copy)]
pub enum Verdict {
    /// Not nodePort traffic (or not on a node address): unchanged.
    Pass,
    /// Rewritten to a local endpoint.
    Nat,
    DropNoEndpoint,
    DropNoSlot,
    DropCtFull,
    /// The steering stage translated the packet towards the pod (`XDP_TX`/`XDP_REDIRECT`).
    SteerToPod(u32),
    /// The steering stage translated the packet towards the client (`XDP_TX`/`XDP_REDIRECT`).
    SteerToClient(u32),
    /// The steering stage dropped the packet.
    SteerDrop,
    /// The steering stage passed a steered packet up for `steer_ingress`: its checksum may be partial.
    SteerHandoffPartial,
    /// ... or it is longer than a standard Ethernet frame (1,514 bytes).
    SteerHandoffLarge,
}

/// The flow as read from the packet, plus the TCP flags byte.
struct Flow {
    key: FlowKey,
    flags: u8,
}

/// Expects `tcp` from the parser (complete IP and TCP headers, not a fragment). Counts conntrack
/// hits and misses; the caller counts the verdict. Not inlined: a BPF function with its own stack
/// frame (inlined into `xdp_front` together with the steering stages, the frame ran past 512 bytes).
#[inline(never)]
pub fn forward(ctx: &XdpContext, tcp: &Tcp, bytes: u64) -> Result<Verdict, Unparsed> {
    let flow = read_flow(ctx, tcp)?;
    let key = &flow.key;
    let port_key = NodePortKey { port: key.dst_port, family: key.family, protocol: PROTO_TCP };
    let Some(node_port) = NODE_PORTS.get_ptr(port_key) else {
        if flow.flags & (TCP_SYN | TCP_ACK) == TCP_SYN {
            clear_stale_reverse(key, bytes);
        }
        return Ok(Verdict::Pass);
    };
    let addr_key = NodeAddrKey { addr: key.dst_addr, family: key.family, _pad: [0; 3] };
    if NODE_ADDRS.get_ptr(addr_key).is_none() {
        return Ok(Verdict::Pass);
    }
    // SAFETY: the kernel returned a valid pointer to this map value; only userspace writes it, and
    // a concurrent update replaces the value whole (no partial `u32` reads on x86/arm64).
    let endpoints = unsafe { (*node_port).endpoints };

    // SAFETY: bpf_ktime_get_ns has no preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    let seen = seen_flags(flow.flags);
    let target = match CONNTRACK.get_ptr_mut(key) {
        Some(entry) => {
            count(STATS_CT_HIT, bytes);
            // SAFETY: a valid pointer to this flow's entry; entries are plain data, and a racing
            // writer (another CPU on the same flow) writes the same kind of values.
            unsafe { touch(entry, now, seen) }
        }
        None => {
            count(STATS_CT_MISS, bytes);
            if endpoints == 0 {
                unusual(Unusual::NoEndpoint);
                return Ok(Verdict::DropNoEndpoint);
            }
            let slot = port_key.slot(flow_hash(key) % RING_SIZE);
            let Some(endpoint) = EP_SLOTS.get_ptr(slot) else {
                unusual(Unusual::NoSlot);
                return Ok(Verdict::DropNoSlot);
            };
            // SAFETY: a valid pointer to a plain-data map value, copied out at once.
            let endpoint: Endpoint = unsafe { *endpoint };
            if !record(key, &endpoint, now, seen) {
                unusual(Unusual::ConntrackFull);
                return Ok(Verdict::DropCtFull);
            }
            (endpoint.addr, endpoint.port)
        }
    };
    rewrite_destination(ctx, tcp, &key.dst_addr, key.dst_port, &target.0, target.1)?;
    Ok(Verdict::Nat)
}

/// Reads addresses, ports and flags. Expects `tcp` from the parser.
#[inline(always)]
fn read_flow(ctx: &XdpContext, tcp: &Tcp) -> Result<Flow, Unparsed> {
    let mut key = FlowKey { family: tcp.family, protocol: PROTO_TCP, ..FlowKey::default() };
    if tcp.family == FAMILY_IPV4 {
        let ip = ptr_at::<Ipv4Hdr>(ctx, tcp.l3_off)?;
        // SAFETY: `ptr_at` checked the whole header is inside the packet; alignment 1.
        let (src, dst) = unsafe { ((*ip).src, (*ip).dst) };
        key.src_addr[..4].copy_from_slice(&src);
        key.dst_addr[..4].copy_from_slice(&dst);
    } else {
        let ip = ptr_at::<Ipv6Hdr>(ctx, tcp.l3_off)?;
        // SAFETY: `ptr_at` checked the whole header is inside the packet; alignment 1.
        let (src, dst) = unsafe { ((*ip).src, (*ip).dst) };
        key.src_addr = src;
        key.dst_addr = dst;
    }
    let th = ptr_at::<TcpHdr>(ctx, tcp.l4_off)?;
    // SAFETY: `ptr_at` checked the whole header is inside the packet; alignment 1.
    let (src_port, dst_port, flags) = unsafe { ((*th).src_port, (*th).dst_port, (*th).off_flags[1]) };
    key.src_port = u16::from_be_bytes(src_port);
    key.dst_port = u16::from_be_bytes(dst_port);
    Ok(Flow { key, flags })
}

/// Rewrites the destination address (when it differs) and port, updating the IPv4 header
/// checksum and the TCP checksum (pseudo-header address and port) incrementally. Expects `tcp`
/// from the parser.
#[inline(always)]
fn rewrite_destination(
    ctx: &XdpContext,
    tcp: &Tcp,
    old_addr: &[u8; 16],
    old_port: u16,
    new_addr: &[u8; 16],
    new_port: u16,
) -> Result<(), Unparsed> {
    let th = ptr_at_mut::<TcpHdr>(ctx, tcp.l4_off)?;
    // SAFETY: `ptr_at_mut` checked the whole TCP header is inside the packet; alignment 1; XDP
    // owns the packet buffer while it runs.
    let mut tcp_check = u16::from_be_bytes(unsafe { (*th).check });
    if tcp.family == FAMILY_IPV4 {
        let old: [u8; 4] = [old_addr[0], old_addr[1], old_addr[2], old_addr[3]];
        let new: [u8; 4] = [new_addr[0], new_addr[1], new_addr[2], new_addr[3]];
        if old != new {
            let ip = ptr_at_mut::<Ipv4Hdr>(ctx, tcp.l3_off)?;
            // SAFETY: `ptr_at_mut` checked the whole IPv4 header is inside the packet; alignment
            // 1; XDP owns the packet buffer while it runs.
            unsafe {
                let ip_check = u16::from_be_bytes((*ip).check);
                (*ip).check = replace_bytes(ip_check, &old, &new).to_be_bytes();
                (*ip).dst = new;
            }
            tcp_check = replace_bytes(tcp_check, &old, &new);
        }
    } else if old_addr != new_addr {
        let ip = ptr_at_mut::<Ipv6Hdr>(ctx, tcp.l3_off)?;
        // SAFETY: `ptr_at_mut` checked the whole IPv6 header is inside the packet; alignment 1.
        unsafe { (*ip).dst = *new_addr };
        tcp_check = replace_bytes(tcp_check, old_addr, new_addr);
    }
    if old_port != new_port {
        tcp_check = replace16(tcp_check, old_port, new_port);
    }
    // SAFETY: as for the read of `check` above.
    unsafe {
        (*th).dst_port = new_port.to_be_bytes();
        (*th).check = tcp_check.to_be_bytes();
    }
    Ok(())
}
