//! The translation stage: one IPv4 or IPv6 packet of a steered flow rewritten in place into the
//! other leg's packet. TCP through `router_common::steer::translate` (which checks everything before
//! its first write; its pseudo-header update covers 32- and 128-bit addresses), then the IP
//! addresses (IPv4 with its header checksum; IPv6 has none), then the Ethernet addresses.

use aya_ebpf::programs::XdpContext;
use router_common::{
    checksum::replace_bytes,
    nat::{FlowKey, FAMILY_IPV6},
    steer::{translate, SteerError, SteerFlow, Translated},
};

use super::packet::PacketTcp;
use crate::{
    headers::{EthHdr, Ipv4Hdr, Ipv6Hdr},
    parse::{ptr_at_mut, Tcp},
};

/// Rewrites the packet that arrived as `from` with `flow`'s entry. Expects `tcp` from the parser
/// (complete IPv4 or IPv6 and TCP headers, not a fragment, no IPv6 extension header) and `from` read from the packet. On error the
/// packet is unchanged.
#[inline(always)]
pub fn rewrite(ctx: &XdpContext, tcp: &Tcp, from: &FlowKey, flow: &SteerFlow) -> Result<Translated, SteerError> {
    let eth = ptr_at_mut::<EthHdr>(ctx, 0).map_err(|_| SteerError::Truncated)?;
    let mut segment = PacketTcp::new(ctx, tcp);
    if from.family == FAMILY_IPV6 {
        let ip = ptr_at_mut::<Ipv6Hdr>(ctx, tcp.l3_off).map_err(|_| SteerError::Truncated)?;
        let translated = translate(&mut segment, from, flow)?;
        // SAFETY: `ptr_at_mut` checked that both whole headers lie inside the packet (nothing since
        // changed its length); both have alignment 1; XDP owns the packet buffer while it runs.
        // IPv6 has no header checksum: the addresses are covered by TCP's pseudo-header only, which
        // `translate` already moved.
        unsafe {
            (*ip).src = flow.src_addr;
            (*ip).dst = flow.dst_addr;
            (*eth).dst = flow.dst_mac;
            (*eth).src = flow.src_mac;
        }
        return Ok(translated);
    }
    let ip = ptr_at_mut::<Ipv4Hdr>(ctx, tcp.l3_off).map_err(|_| SteerError::Truncated)?;
    let translated = translate(&mut segment, from, flow)?;

    let v4 = |a: &[u8; 16]| [a[0], a[1], a[2], a[3]];
    let (old_src, old_dst) = (v4(&from.src_addr), v4(&from.dst_addr));
    let (new_src, new_dst) = (v4(&flow.src_addr), v4(&flow.dst_addr));
    // SAFETY: `ptr_at_mut` checked that both whole headers lie inside the packet (nothing since
    // changed its length); both have alignment 1; XDP owns the packet buffer while it runs.
    unsafe {
        let check = replace_bytes(u16::from_be_bytes((*ip).check), &old_src, &new_src);
        let check = replace_bytes(check, &old_dst, &new_dst);
        (*ip).src = new_src;
        (*ip).dst = new_dst;
        (*ip).check = check.to_be_bytes();
        (*eth).dst = flow.dst_mac;
        (*eth).src = flow.src_mac;
    }
    Ok(translated)
}
