//! Layout of the `XDP_STATS` per-CPU array: one [`PacketCounter`] per counter index.
//!
//! Key: `u32` counter index, host byte order. Value: [`PacketCounter`], host byte order, one copy
//! per possible CPU; userspace sums the copies. Only `xdp_front` writes (each CPU its own slot, no
//! atomics needed); userspace only reads.
//!
//! | index | constant            | counts packets that...                                           |
//! |-------|---------------------|------------------------------------------------------------------|
//! | 0     | [`STATS_TOTAL`]     | reached `xdp_front` (every packet)                               |
//! | 1     | [`STATS_IPV4`]      | are IPv4 (EtherType 0x0800) and parsed completely                |
//! | 2     | [`STATS_IPV6`]      | are IPv6 (EtherType 0x86DD) and parsed completely                |
//! | 3     | [`STATS_TCP`]       | are IPv4/IPv6 with a complete TCP header right after L3          |
//! | 4     | [`STATS_OTHER`]     | have another EtherType (ARP, VLAN-tagged, LLDP, ...)             |
//! | 5     | [`STATS_UNPARSED`]  | were cut short or malformed in a header the parser read (L2-L4)  |
//!
//! "Parsed completely" means the Ethernet header, the IPv4 header (version 4, IHL >= 5, all IHL
//! words present) or IPv6 fixed header (version 6), and, when the L4 protocol is TCP, the TCP
//! header (data offset >= 5) are all inside the packet.
//!
//! Invariants: `TOTAL = IPV4 + IPV6 + OTHER + UNPARSED` (each packet lands in exactly one of those
//! four), and `TCP <= IPV4 + IPV6` (TCP is a subset). IPv6 extension headers are not walked and
//! non-first IPv4 fragments carry no TCP header, so such packets count as IPv4/IPv6 but not TCP.

/// Every packet `xdp_front` saw.
pub const STATS_TOTAL: u32 = 0;
/// IPv4 packets that parsed completely.
pub const STATS_IPV4: u32 = 1;
/// IPv6 packets that parsed completely.
pub const STATS_IPV6: u32 = 2;
/// IPv4/IPv6 packets with a complete TCP header.
pub const STATS_TCP: u32 = 3;
/// Packets with an EtherType other than IPv4/IPv6.
pub const STATS_OTHER: u32 = 4;
/// Packets cut short or malformed in a header the parser read.
pub const STATS_UNPARSED: u32 = 5;
/// Number of entries in `XDP_STATS` (its `max_entries`).
pub const STATS_LEN: u32 = 6;

/// Every counter index, in index order (`STATS_INDICES[i] == i`).
pub const STATS_INDICES: [u32; STATS_LEN as usize] =
    [STATS_TOTAL, STATS_IPV4, STATS_IPV6, STATS_TCP, STATS_OTHER, STATS_UNPARSED];

const _: () = {
    let mut i = 0;
    while i < STATS_INDICES.len() {
        assert!(STATS_INDICES[i] as usize == i, "counter indices must be dense and in order");
        i += 1;
    }
};

/// One counter slot: packets and bytes, per CPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketCounter {
    /// Number of packets.
    pub packets: u64,
    /// Sum of the packets' lengths in bytes, from the Ethernet header to the end of the linear
    /// data XDP sees (`data_end - data`; fragments of multi-buffer frames are not included).
    pub bytes: u64,
}

const _: () = assert!(core::mem::size_of::<PacketCounter>() == 16);
const _: () = assert!(core::mem::align_of::<PacketCounter>() == 8);

// SAFETY: `PacketCounter` is `#[repr(C)]`, made only of `u64`s (no padding, size asserted above),
// and every bit pattern is a valid value.
#[cfg(feature = "user")]
unsafe impl aya::Pod for PacketCounter {}
