//! The setup stage of a steered passthrough flow: what the datapath records from the two
//! handshakes, and the maps userspace and the XDP programs share to open leg B.
//!
//! Who does what (design notes: `docs/steering.md`, with one change: the router opens
//! leg B itself, with a raw socket, instead of a TC clone):
//!
//! 1. C's SYN to one of the router's HTTPS ports ([`STEER_PORTS`], the port after the nodePort
//!    rewrite) is recorded by `xdp_front` in [`STEER_SYNS`], keyed by the 5-tuple R sees (after the
//!    nodePort rewrite): C's ISN, SYN options, the address C connected to (before the rewrite), the
//!    arrival interface and both MACs. The packet goes on to the kernel as today.
//! 2. The kernel answers the handshake and the router reads the ClientHello from R as today. For a
//!    passthrough route it picks the pod P by the route's balance, takes a port of the reserved
//!    range for Q, writes the pod-side entry of `STEER_FLOWS` (key P -> Q) in state
//!    [`STEER_CONNECTING`], and sends from a raw socket the SYN of leg B: sequence Ic, C's own SYN
//!    options (MSS, window scale, SACK-permitted, TSval).
//! 3. P's SYN-ACK meets the `STEER_CONNECTING` entry in XDP on the pod-facing interface: the
//!    program records it in [`STEER_ANSWERS`] (same key), sends the key on [`STEER_EVENTS`], and
//!    drops the packet (no socket owns Q: the kernel would answer with a RST). A RST from P is
//!    recorded the same way with [`ANSWER_RST`]. Every other packet to a connecting entry is
//!    dropped.
//! 4. The router reads R's side (ISN, window scale, timestamp clock) from its socket, computes
//!    [`super::SteerTcp`], writes both directions' entries as [`super::STEER_STEERED`], then sends the ACK
//!    of leg B carrying the ClientHello, and resends it until P acknowledges all of it
//!    (`SteerFlow::acked`, kept by the translation stage). R is then closed in TCP_REPAIR mode, so
//!    nothing reaches C.
//!
//! The datapath's side is `router-ebpf/src/steer/setup.rs` (records) and `program.rs` (the
//! connecting entries); options are read by [`super::syn_options`]. IPv4 and IPv6 alike (ports in
//! [`STEER_PORTS`] per family); an IPv6 SYN with an extension header before TCP is not recorded, so
//! the router finds no `SteerSyn` and keeps such a connection on the userspace relay. A SYN whose
//! options do not parse is not recorded either.
//!
//! Byte order as everywhere in these maps: addresses and MACs network order, the rest host order.

use crate::nat::FlowKey;

/// Name of the map of the router's HTTPS ports whose SYNs are recorded.
pub const STEER_PORTS: &str = "STEER_PORTS";
/// `max_entries` of `STEER_PORTS`.
pub const STEER_PORTS_MAX: u32 = 16;
/// Name of the map of recorded client SYNs (LRU hash: an entry nobody reads ages out by itself).
pub const STEER_SYNS: &str = "STEER_SYNS";
/// `max_entries` of `STEER_SYNS`: handshakes recorded and not yet read (one per HTTPS connection
/// between its SYN and its ClientHello).
pub const STEER_SYNS_MAX: u32 = 65_536;
/// Name of the map of pod SYN-ACKs (plain hash, no prealloc; userspace removes what it read).
pub const STEER_ANSWERS: &str = "STEER_ANSWERS";
/// `max_entries` of `STEER_ANSWERS`: legs B being opened at once.
pub const STEER_ANSWERS_MAX: u32 = 16_384;
/// Name of the ring buffer that tells userspace a pod answered (records are [`FlowKey`]s).
pub const STEER_EVENTS: &str = "STEER_EVENTS";
/// Size of `STEER_EVENTS` in bytes (a power of two, a multiple of the page size).
pub const STEER_EVENTS_BYTES: u32 = 256 * 1024;

/// `SteerFlow::state`: leg B's SYN is out; the pod's answer is recorded in `STEER_ANSWERS`, every
/// packet of the entry's key is dropped.
pub const STEER_CONNECTING: u32 = 2;

/// `SteerSyn::options` / `SteerAnswer::options`: an MSS option was present.
pub const SYN_OPT_MSS: u8 = 1;
/// A window-scale option was present (`wscale` holds its shift).
pub const SYN_OPT_WSCALE: u8 = 2;
/// A SACK-permitted option was present.
pub const SYN_OPT_SACK_OK: u8 = 4;
/// A timestamp option was present (`tsval` holds TSval).
pub const SYN_OPT_TIMESTAMPS: u8 = 8;

/// `SteerAnswer::flags`: the pod answered with SYN-ACK.
pub const ANSWER_SYN_ACK: u8 = 1;
/// `SteerAnswer::flags`: the pod answered with RST (nothing listens, or it refused).
pub const ANSWER_RST: u8 = 2;

/// Key of `STEER_PORTS`: a TCP port the router accepts TLS on (host order), per family.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SteerPortKey {
    pub port: u16,
    /// [`crate::nat::FAMILY_IPV4`] or [`crate::nat::FAMILY_IPV6`].
    pub family: u8,
    pub _pad: u8,
}

/// Value of `STEER_SYNS`, keyed by the 5-tuple R sees (C -> R's address and port, after the
/// nodePort rewrite): the client's SYN and where it came from.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SteerSyn {
    /// `bpf_ktime_get_ns()` when the SYN was seen.
    pub seen_ns: u64,
    /// Ic, the SYN's sequence number.
    pub isn: u32,
    /// TSval of the SYN (valid with [`SYN_OPT_TIMESTAMPS`]).
    pub tsval: u32,
    /// The address C sent the SYN to (before any nodePort rewrite; network order): P's packets
    /// leave towards C with it as their source.
    pub arrival_dst_addr: [u8; 16],
    /// The port C sent the SYN to (before any nodePort rewrite).
    pub arrival_dst_port: u16,
    /// MSS option value (valid with [`SYN_OPT_MSS`]).
    pub mss: u16,
    /// Window-scale shift (valid with [`SYN_OPT_WSCALE`]).
    pub wscale: u8,
    /// `SYN_OPT_*` bits.
    pub options: u8,
    pub family: u8,
    pub _pad: u8,
    /// The interface the SYN arrived on (P's packets leave towards C by it).
    pub if_index: u32,
    /// Ethernet source of the SYN (C or its next hop): the destination MAC towards C.
    pub peer_mac: [u8; 6],
    /// Ethernet destination of the SYN (this node's interface): the source MAC towards C.
    pub local_mac: [u8; 6],
}

/// Value of `STEER_ANSWERS`, keyed like the pod-side `STEER_FLOWS` entry (P -> Q): the pod's
/// answer to leg B's SYN.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SteerAnswer {
    /// `bpf_ktime_get_ns()` when the answer was seen.
    pub seen_ns: u64,
    /// Ip, the SYN-ACK's sequence number.
    pub isn: u32,
    /// The SYN-ACK's acknowledgement number (Ic + 1 when it answers our SYN).
    pub ack: u32,
    /// Tp0, the SYN-ACK's TSval (valid with [`SYN_OPT_TIMESTAMPS`]).
    pub tsval: u32,
    /// The SYN-ACK's TSecr (valid with [`SYN_OPT_TIMESTAMPS`]).
    pub tsecr: u32,
    /// The SYN-ACK's window field (never scaled in a SYN).
    pub window: u16,
    /// MSS option value (valid with [`SYN_OPT_MSS`]).
    pub mss: u16,
    /// Window-scale shift Wp (valid with [`SYN_OPT_WSCALE`]).
    pub wscale: u8,
    /// `SYN_OPT_*` bits.
    pub options: u8,
    /// [`ANSWER_SYN_ACK`] or [`ANSWER_RST`].
    pub flags: u8,
    pub _pad: u8,
    /// The interface the answer arrived on (C's packets leave towards P by it).
    pub if_index: u32,
    /// Ethernet source of the answer (P or its next hop): the destination MAC towards P.
    pub peer_mac: [u8; 6],
    /// Ethernet destination of the answer (this node's interface): the source MAC towards P.
    pub local_mac: [u8; 6],
}

/// A record of `STEER_EVENTS`: the key of the `STEER_ANSWERS` entry just written.
pub type SteerEvent = FlowKey;

const _: () = assert!(size_of::<SteerPortKey>() == 4);
const _: () = assert!(size_of::<SteerSyn>() == 56);
const _: () = assert!(size_of::<SteerAnswer>() == 48);
const _: () = assert!(core::mem::offset_of!(SteerSyn, if_index) == 40);
const _: () = assert!(core::mem::offset_of!(SteerAnswer, if_index) == 32);

// SAFETY (all impls): each type is `#[repr(C)]`, made only of integers and byte arrays with explicit
// padding fields (sizes asserted above, so no implicit padding), and every bit pattern is valid.
#[cfg(feature = "user")]
mod pod {
    use super::*;

    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SteerPortKey {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SteerSyn {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SteerAnswer {}
}
