//! Packet parsing for `xdp_front`: reads Ethernet, then IPv4 or IPv6, then TCP, and fills one
//! [`Packet`] description that the counting and nodePort stages use.
//!
//! Bounds: every read goes through [`ptr_at`] (or [`ptr_at_mut`] for the rewrite stage), which
//! checks `data + offset + size_of::<T>() <= data_end` right before the access; the verifier sees
//! that check on every path. Variable offsets are bounded: the IPv4 header length is at most 15
//! words (60 bytes), so the TCP header starts at most 74 bytes in.

use aya_ebpf::programs::XdpContext;
use router_common::nat::{FAMILY_IPV4, FAMILY_IPV6};

use crate::headers::{EthHdr, Ipv4Hdr, Ipv6Hdr, TcpHdr, ETH_P_IP, ETH_P_IPV6, IPPROTO_FRAGMENT, IPPROTO_TCP};

/// A header the parser needed was cut short (ran past `data_end`) or malformed (wrong IP version,
/// IPv4 IHL < 5, TCP data offset < 5).
pub struct Unparsed;

/// The network layer of a parsed packet.
#[derive(Clone, Copy)]
pub enum L3 {
    Ipv4,
    Ipv6,
    /// Any other EtherType (ARP, 802.1Q-tagged, LLDP, ...); nothing past L2 was read.
    Other,
}

/// Where a complete TCP header lies, for the nodePort stage.
#[derive(Clone, Copy)]
pub struct Tcp {
    /// [`FAMILY_IPV4`] or [`FAMILY_IPV6`].
    pub family: u8,
    /// Offset of the IP header (after Ethernet).
    pub l3_off: usize,
    /// Offset of the TCP header (after the IP header and, for IPv4, its options).
    pub l4_off: usize,
}

/// What the parser learned about one packet.
pub struct Packet {
    pub l3: L3,
    /// A complete TCP header follows the IPv4/IPv6 header.
    pub tcp: Option<Tcp>,
    /// An IPv4 fragment (more-fragments set or a non-zero offset) or an IPv6 packet whose next
    /// header is a Fragment header. Never rewritten.
    pub fragment: bool,
}

const ETH_LEN: usize = size_of::<EthHdr>();
/// More-fragments flag and fragment offset bits of the IPv4 `frag_off` field.
const IPV4_MF: u16 = 0x2000;
const IPV4_FRAG_OFFSET_MASK: u16 = 0x1fff;

/// Returns a pointer to a `T` at `offset` bytes into the packet, or [`Unparsed`] when the `T`
/// would run past `data_end`. The only way this program reads packet bytes.
#[inline(always)]
pub fn ptr_at<T>(ctx: &XdpContext, offset: usize) -> Result<*const T, Unparsed> {
    let start = ctx.data();
    let end = ctx.data_end();
    if start + offset + size_of::<T>() > end {
        return Err(Unparsed);
    }
    Ok((start + offset) as *const T)
}

/// [`ptr_at`] for writing: the only way this program writes packet bytes.
#[inline(always)]
pub fn ptr_at_mut<T>(ctx: &XdpContext, offset: usize) -> Result<*mut T, Unparsed> {
    ptr_at::<T>(ctx, offset).map(|p| p as *mut T)
}

/// Parses from the Ethernet header on. Expects nothing validated; returns the packet description,
/// or [`Unparsed`] when a header it had to read is cut short or malformed.
#[inline(always)]
pub fn parse(ctx: &XdpContext) -> Result<Packet, Unparsed> {
    let eth = ptr_at::<EthHdr>(ctx, 0)?;
    // SAFETY: `ptr_at` checked that the whole `EthHdr` lies inside the packet, and `EthHdr` has
    // alignment 1.
    let ether_type = u16::from_be_bytes(unsafe { (*eth).ether_type });
    match ether_type {
        ETH_P_IP => parse_ipv4(ctx, ETH_LEN),
        ETH_P_IPV6 => parse_ipv6(ctx, ETH_LEN),
        _ => Ok(Packet { l3: L3::Other, tcp: None, fragment: false }),
    }
}

/// Expects an IPv4 EtherType with the IPv4 header at `offset`.
#[inline(always)]
fn parse_ipv4(ctx: &XdpContext, offset: usize) -> Result<Packet, Unparsed> {
    let ip = ptr_at::<Ipv4Hdr>(ctx, offset)?;
    // SAFETY: `ptr_at` checked that the whole `Ipv4Hdr` lies inside the packet, and `Ipv4Hdr`
    // has alignment 1.
    let (version_ihl, frag_off, protocol) = unsafe { ((*ip).version_ihl, (*ip).frag_off, (*ip).protocol) };
    let ihl = usize::from(version_ihl & 0x0f);
    if version_ihl >> 4 != 4 || ihl < 5 {
        return Err(Unparsed);
    }
    let header_len = ihl * 4;
    // The options (if any) must be present too: the header is "complete" only with all IHL words.
    if ctx.data() + offset + header_len > ctx.data_end() {
        return Err(Unparsed);
    }
    let frag_off = u16::from_be_bytes(frag_off);
    let fragment = frag_off & (IPV4_MF | IPV4_FRAG_OFFSET_MASK) != 0;
    // Non-first fragments carry no L4 header.
    let first_fragment = frag_off & IPV4_FRAG_OFFSET_MASK == 0;
    let tcp = if protocol == IPPROTO_TCP && first_fragment {
        let l4_off = offset + header_len;
        parse_tcp(ctx, l4_off)?;
        Some(Tcp { family: FAMILY_IPV4, l3_off: offset, l4_off })
    } else {
        None
    };
    Ok(Packet { l3: L3::Ipv4, tcp, fragment })
}

/// Expects an IPv6 EtherType with the IPv6 fixed header at `offset`.
#[inline(always)]
fn parse_ipv6(ctx: &XdpContext, offset: usize) -> Result<Packet, Unparsed> {
    let ip = ptr_at::<Ipv6Hdr>(ctx, offset)?;
    // SAFETY: `ptr_at` checked that the whole `Ipv6Hdr` lies inside the packet, and `Ipv6Hdr`
    // has alignment 1.
    let (version, next_header) = unsafe { ((*ip).version_tc_flow[0] >> 4, (*ip).next_header) };
    if version != 6 {
        return Err(Unparsed);
    }
    let tcp = if next_header == IPPROTO_TCP {
        let l4_off = offset + size_of::<Ipv6Hdr>();
        parse_tcp(ctx, l4_off)?;
        Some(Tcp { family: FAMILY_IPV6, l3_off: offset, l4_off })
    } else {
        None
    };
    Ok(Packet { l3: L3::Ipv6, tcp, fragment: next_header == IPPROTO_FRAGMENT })
}

/// Expects the TCP header at `offset`; checks it is complete and sane (data offset >= 5 words).
#[inline(always)]
fn parse_tcp(ctx: &XdpContext, offset: usize) -> Result<(), Unparsed> {
    let tcp = ptr_at::<TcpHdr>(ctx, offset)?;
    // SAFETY: `ptr_at` checked that the whole `TcpHdr` lies inside the packet, and `TcpHdr` has
    // alignment 1.
    let data_offset = unsafe { (*tcp).off_flags[0] } >> 4;
    if data_offset < 5 {
        return Err(Unparsed);
    }
    Ok(())
}
