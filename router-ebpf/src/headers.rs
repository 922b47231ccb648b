//! Wire layouts of the headers `xdp_front` and `nat_reverse` read: Ethernet, IPv4, IPv6, TCP.
//!
//! Every field is a byte array (alignment 1), so a header can be read from any packet offset;
//! multi-byte fields are network byte order (big endian) and are converted with
//! `from_be_bytes` where they are used. Only the fields the parser needs are named; the rest are
//! kept as opaque bytes so the sizes match the wire.

/// Ethernet II header (no VLAN tag), 14 bytes.
#[repr(C)]
pub struct EthHdr {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    /// EtherType, big endian.
    pub ether_type: [u8; 2],
}

/// IPv4 header without options, 20 bytes; options follow when IHL > 5.
#[repr(C)]
pub struct Ipv4Hdr {
    /// Version (high nibble) and IHL in 32-bit words (low nibble).
    pub version_ihl: u8,
    pub tos: u8,
    pub total_len: [u8; 2],
    pub id: [u8; 2],
    /// Flags (high 3 bits) and fragment offset in 8-byte units (low 13 bits), big endian.
    pub frag_off: [u8; 2],
    pub ttl: u8,
    /// L4 protocol number (IANA).
    pub protocol: u8,
    pub check: [u8; 2],
    pub src: [u8; 4],
    pub dst: [u8; 4],
}

/// IPv6 fixed header, 40 bytes.
#[repr(C)]
pub struct Ipv6Hdr {
    /// Version (high nibble of byte 0), traffic class and flow label.
    pub version_tc_flow: [u8; 4],
    pub payload_len: [u8; 2],
    /// Next header (IANA protocol number); extension headers are not walked.
    pub next_header: u8,
    pub hop_limit: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
}

/// TCP header without options, 20 bytes.
#[repr(C)]
pub struct TcpHdr {
    pub src_port: [u8; 2],
    pub dst_port: [u8; 2],
    pub seq: [u8; 4],
    pub ack: [u8; 4],
    /// Data offset in 32-bit words (high nibble of byte 0), then the flag bits.
    pub off_flags: [u8; 2],
    pub window: [u8; 2],
    pub check: [u8; 2],
    pub urg_ptr: [u8; 2],
}

const _: () = assert!(size_of::<EthHdr>() == 14);
const _: () = assert!(size_of::<Ipv4Hdr>() == 20);
const _: () = assert!(size_of::<Ipv6Hdr>() == 40);
const _: () = assert!(size_of::<TcpHdr>() == 20);

/// EtherType of IPv4.
pub const ETH_P_IP: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETH_P_IPV6: u16 = 0x86DD;
/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IPv6 next-header value of the Fragment extension header.
pub const IPPROTO_FRAGMENT: u8 = 44;
/// TCP flag bits in the second byte of `off_flags`.
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;
/// Offsets of the checksum fields inside their headers.
pub const IPV4_CHECK_OFF: usize = 10;
pub const IPV4_SRC_OFF: usize = 12;
pub const IPV6_SRC_OFF: usize = 8;
pub const TCP_CHECK_OFF: usize = 16;
