//! Layout of the `XDP_STATS` per-CPU array: one [`PacketCounter`] per counter index.
//!
//! Key: `u32` counter index, host byte order. Value: [`PacketCounter`], host byte order, one copy
//! per possible CPU; userspace sums the copies. `xdp_front` writes indices 0-13, 15-22,
//! `nat_reverse` (TC egress) writes 14, `steer_ingress` (TC ingress) 20 (the answers it records on
//! the pod-facing interfaces), 23 and 24; each CPU writes only its own slot (no atomics needed);
//! userspace only reads.
//!
//! | index | constant                   | counts packets that...                                             |
//! |-------|----------------------------|--------------------------------------------------------------------|
//! | 0     | [`STATS_TOTAL`]            | reached `xdp_front` (every packet)                                 |
//! | 1     | [`STATS_IPV4`]             | are IPv4 (EtherType 0x0800) and parsed completely                  |
//! | 2     | [`STATS_IPV6`]             | are IPv6 (EtherType 0x86DD) and parsed completely                  |
//! | 3     | [`STATS_TCP`]              | are IPv4/IPv6 with a complete TCP header right after L3            |
//! | 4     | [`STATS_OTHER`]            | have another EtherType (ARP, VLAN-tagged, LLDP, ...)               |
//! | 5     | [`STATS_UNPARSED`]         | were cut short or malformed in a header the parser read (L2-L4)    |
//! | 6     | [`STATS_PASS`]             | were handed to the kernel stack unchanged (`XDP_PASS`)             |
//! | 7     | [`STATS_NAT`]              | went to a nodePort and were rewritten to a local endpoint, passed  |
//! | 8     | [`STATS_DROP_NO_ENDPOINT`] | went to a nodePort with no local endpoint (`XDP_DROP`)             |
//! | 9     | [`STATS_DROP_NO_SLOT`]     | went to a nodePort whose endpoint slot was missing (`XDP_DROP`)    |
//! | 10    | [`STATS_DROP_CT_FULL`]     | started a flow that conntrack could not record (`XDP_DROP`)        |
//! | 11    | [`STATS_CT_HIT`]           | went to a nodePort and found their flow in `CONNTRACK`             |
//! | 12    | [`STATS_CT_MISS`]          | went to a nodePort and did not (new flow, or its entry was evicted)|
//! | 13    | [`STATS_FRAGMENT`]         | are IPv4 fragments or IPv6 with a Fragment header: passed as is   |
//! | 14    | [`STATS_REV_NAT`]          | left through TC egress as nodePort replies, source restored        |
//! | 15    | [`STATS_CT_STALE`]         | were SYNs straight to an endpoint that removed a stale reverse entry |
//! | 16    | [`STATS_STEER_TO_POD`]     | belonged to a steered flow, came from the client, left translated towards the pod |
//! | 17    | [`STATS_STEER_TO_CLIENT`]  | belonged to a steered flow, came from the pod, left translated towards the client |
//! | 18    | [`STATS_STEER_DROP`]       | were dropped by the steering stage (`XDP_DROP`): a steered flow's SYN or malformed options, or any packet to a connecting leg B (its answer included) |
//! | 19    | [`STATS_STEER_SYN`]        | were client SYNs to a `STEER_PORTS` port recorded in `STEER_SYNS` (then passed or rewritten) |
//! | 20    | [`STATS_STEER_ANSWER`]     | were the pod's SYN-ACK or RST to a connecting leg B, recorded in `STEER_ANSWERS` (also in 18 by `xdp_front` or 24 by `steer_ingress`) |
//! | 21    | [`STATS_STEER_HANDOFF_PARTIAL`] | belonged to a steered flow but may carry a partial checksum (TX checksum offload): passed to `steer_ingress` |
//! | 22    | [`STATS_STEER_HANDOFF_LARGE`] | belonged to a steered flow but are longer than a standard Ethernet frame, 1,514 bytes (a GSO super-packet or a jumbo frame): passed to `steer_ingress` |
//! | 23    | [`STATS_TC_STEERED`]       | were translated by `steer_ingress` (TC ingress) and redirected whole, either direction |
//! | 24    | [`STATS_TC_STEER_DROP`]    | were dropped by `steer_ingress`: a steered flow's SYN, malformed options, a helper that refused, or any packet to a connecting leg B (its answer included) |
//!
//! "Parsed completely" means the Ethernet header, the IPv4 header (version 4, IHL >= 5, all IHL
//! words present) or IPv6 fixed header (version 6), and, when the L4 protocol is TCP, the TCP
//! header (data offset >= 5) are all inside the packet.
//!
//! Invariants (over `xdp_front`'s counters):
//! - `TOTAL = IPV4 + IPV6 + OTHER + UNPARSED` (each packet lands in exactly one of those four);
//! - `TOTAL = PASS + NAT + DROP_NO_ENDPOINT + DROP_NO_SLOT + DROP_CT_FULL + STEER_TO_POD +
//!   STEER_TO_CLIENT + STEER_DROP + STEER_HANDOFF_PARTIAL + STEER_HANDOFF_LARGE` (one verdict each; the steering stage runs first, and a packet it
//!   takes never reaches the nodePort stage);
//! - `CT_HIT + CT_MISS = NAT + DROP_NO_ENDPOINT + DROP_NO_SLOT + DROP_CT_FULL` (every nodePort
//!   packet looks up conntrack once, first);
//! - `STEER_ANSWER <= STEER_DROP + TC_STEER_DROP` (an answer is recorded, then dropped, by whichever
//!   hook met it: `xdp_front` on the NIC, `steer_ingress` on a pod-facing interface); `STEER_SYN <= PASS + NAT` (a recorded SYN goes on to the kernel);
//! - `TCP <= IPV4 + IPV6`. IPv6 extension headers are not walked and non-first IPv4 fragments
//!   carry no TCP header, so such packets count as IPv4/IPv6 (and `FRAGMENT`) but not TCP.

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
/// Verdict `XDP_PASS`, packet unchanged.
pub const STATS_PASS: u32 = 6;
/// Verdict `XDP_PASS` after the nodePort -> local endpoint rewrite.
pub const STATS_NAT: u32 = 7;
/// Verdict `XDP_DROP`: nodePort without a local endpoint.
pub const STATS_DROP_NO_ENDPOINT: u32 = 8;
/// Verdict `XDP_DROP`: the chosen `EP_SLOTS` slot was empty (table mid-rewrite).
pub const STATS_DROP_NO_SLOT: u32 = 9;
/// Verdict `XDP_DROP`: inserting the new flow into conntrack failed.
pub const STATS_DROP_CT_FULL: u32 = 10;
/// nodePort packets whose flow was in `CONNTRACK`.
pub const STATS_CT_HIT: u32 = 11;
/// nodePort packets whose flow was not in `CONNTRACK`.
pub const STATS_CT_MISS: u32 = 12;
/// IPv4 fragments and IPv6 packets with a Fragment header next: passed untouched.
pub const STATS_FRAGMENT: u32 = 13;
/// Replies whose source `nat_reverse` restored to the nodePort address.
pub const STATS_REV_NAT: u32 = 14;
/// SYNs straight to an endpoint address/port that removed a stale `CONNTRACK_REV` entry.
pub const STATS_CT_STALE: u32 = 15;
/// Verdict `XDP_TX`/`XDP_REDIRECT`: a steered flow's packet from the client, translated towards the pod.
pub const STATS_STEER_TO_POD: u32 = 16;
/// Verdict `XDP_TX`/`XDP_REDIRECT`: a steered flow's packet from the pod, translated towards the client.
pub const STATS_STEER_TO_CLIENT: u32 = 17;
/// Verdict `XDP_DROP` by the steering stage.
pub const STATS_STEER_DROP: u32 = 18;
/// Client SYNs recorded in `STEER_SYNS`.
pub const STATS_STEER_SYN: u32 = 19;
/// Pod answers (SYN-ACK or RST) recorded in `STEER_ANSWERS` and announced on `STEER_EVENTS`.
pub const STATS_STEER_ANSWER: u32 = 20;
/// Verdict `XDP_PASS` of a steered flow's packet whose checksum field is a bare pseudo-header sum
/// (`router_common::steer::may_be_partial`): `steer_ingress` translates it.
pub const STATS_STEER_HANDOFF_PARTIAL: u32 = 21;
/// Verdict `XDP_PASS` of a steered flow's packet longer than a standard Ethernet frame (1,514 bytes): `steer_ingress`
/// translates it whole.
pub const STATS_STEER_HANDOFF_LARGE: u32 = 22;
/// Packets `steer_ingress` translated and redirected (TC_ACT_REDIRECT).
pub const STATS_TC_STEERED: u32 = 23;
/// Packets `steer_ingress` dropped (TC_ACT_SHOT).
pub const STATS_TC_STEER_DROP: u32 = 24;
/// Number of entries in `XDP_STATS` (its `max_entries`).
pub const STATS_LEN: u32 = 25;

/// Every counter index, in index order (`STATS_INDICES[i] == i`).
pub const STATS_INDICES: [u32; STATS_LEN as usize] = [
    STATS_TOTAL,
    STATS_IPV4,
    STATS_IPV6,
    STATS_TCP,
    STATS_OTHER,
    STATS_UNPARSED,
    STATS_PASS,
    STATS_NAT,
    STATS_DROP_NO_ENDPOINT,
    STATS_DROP_NO_SLOT,
    STATS_DROP_CT_FULL,
    STATS_CT_HIT,
    STATS_CT_MISS,
    STATS_FRAGMENT,
    STATS_REV_NAT,
    STATS_CT_STALE,
    STATS_STEER_TO_POD,
    STATS_STEER_TO_CLIENT,
    STATS_STEER_DROP,
    STATS_STEER_SYN,
    STATS_STEER_ANSWER,
    STATS_STEER_HANDOFF_PARTIAL,
    STATS_STEER_HANDOFF_LARGE,
    STATS_TC_STEERED,
    STATS_TC_STEER_DROP,
];

/// Each counter's name as userspace reports it (`router xdp status`, tests), by index.
pub const STATS_NAMES: [&str; STATS_LEN as usize] = [
    "total",
    "ipv4",
    "ipv6",
    "tcp",
    "other",
    "unparsed",
    "pass",
    "nat",
    "drop_no_endpoint",
    "drop_no_slot",
    "drop_ct_full",
    "ct_hit",
    "ct_miss",
    "fragment",
    "rev_nat",
    "ct_stale",
    "steer_to_pod",
    "steer_to_client",
    "steer_drop",
    "steer_syn",
    "steer_answer",
    "steer_handoff_partial",
    "steer_handoff_large",
    "tc_steered",
    "tc_steer_drop",
];

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
    /// data the program sees (XDP: `data_end - data`, fragments of multi-buffer frames not
    /// included; TC: `skb->len`).
    pub bytes: u64,
}

const _: () = assert!(core::mem::size_of::<PacketCounter>() == 16);
const _: () = assert!(core::mem::align_of::<PacketCounter>() == 8);

// SAFETY: `PacketCounter` is `#[repr(C)]`, made only of `u64`s (no padding, size asserted above),
// and every bit pattern is a valid value.
#[cfg(feature = "user")]
unsafe impl aya::Pod for PacketCounter {}
