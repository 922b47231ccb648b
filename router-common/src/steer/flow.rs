//! The `STEER_FLOWS` map: key, value layout, states and flags of a steered passthrough flow.
//!
//! One flow has two entries, one per direction, each keyed by the 5-tuple the packet ARRIVES with
//! ([`FlowKey`]): C -> R's address and port for [`STEER_TO_POD`], P -> Q for [`STEER_TO_CLIENT`].
//! Each entry holds everything its direction needs (the 5-tuple it leaves with, the MACs and the
//! interface, and the same [`SteerTcp`] offsets), so a packet costs one lookup; the key and the
//! value of an entry together name both legs, and the other direction's key is the value's 5-tuple
//! reversed ([`SteerFlow::reply_key`]).
//!
//! Byte order: addresses network order (IPv4 in the first 4 of 16 bytes, as in
//! [`crate::nat`]); MACs wire order; ports, sequence offsets, timestamps, counters and flags host
//! order (`bpftool map dump` prints plain numbers). Sequence and timestamp fields are modulo 2^32.
//!
//! Writers: userspace (or, later, the datapath's setup stage) writes the whole entry before the
//! flow's state becomes [`STEER_STEERED`]; the translation program only adds to `packets`, `bytes`
//! and `dropped` (plain adds: one direction normally runs on one CPU; a rare race loses a count),
//! refreshes `last_seen_ns` (at most once a second) and ors FIN/RST into `seen`.
//!
//! Map kind: a plain hash with `BPF_F_NO_PREALLOC`, not an LRU. A steered flow has no fallback once R
//! is retired, so evicting a live entry would break its connection silently; a full plain hash
//! instead makes the setup refuse, and the flow stays on R ("any limit hit" in the design notes).
//! No preallocation also means the map costs nothing while steering is unused. Idle and closed
//! entries are removed by their writer (a later increment's garbage collection).

use crate::nat::FlowKey;

/// Name of the steered-flow map in the object and in the kernel (`bpftool map show name
/// STEER_FLOWS`); pinned by the loader as `<pin_dir>/STEER_FLOWS`.
pub const STEER_FLOWS: &str = "STEER_FLOWS";
/// `max_entries` of `STEER_FLOWS`: entries, two per steered flow.
pub const STEER_FLOWS_MAX: u32 = 65_536;

/// `SteerFlow::direction`: the packet came from the client (leg A) and leaves towards the pod.
pub const STEER_TO_POD: u8 = 1;
/// `SteerFlow::direction`: the packet came from the pod (leg B) and leaves towards the client.
pub const STEER_TO_CLIENT: u8 = 2;

/// `SteerFlow::state`: recorded, not steered yet; packets pass to the kernel unchanged (the flow
/// still lives on R).
pub const STEER_PENDING: u32 = 0;
/// `SteerFlow::state`: leg B is open and the offsets are final; every packet is translated.
pub const STEER_STEERED: u32 = 1;
// `STEER_CONNECTING` (2), the pod-side entry while leg B's SYN is out: `super::setup`.

/// `SteerFlow::seen`: a FIN was translated in this direction.
pub const STEER_FIN: u16 = 1;
/// `SteerFlow::seen`: a RST was translated in this direction.
pub const STEER_RST: u16 = 2;

/// The TCP offsets between the two legs, computed once when leg B is established. The same values
/// are stored in both directions' entries.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SteerTcp {
    /// D = Ip - Ir: P's sequence space minus R's (mod 2^32).
    pub seq_offset: u32,
    /// T = (Tr_last + 1) - Tp0: what is added to P's TSvals on the way to C (mod 2^32).
    pub ts_offset: u32,
    /// Tp0: the TSval in P's SYN-ACK, sent to P in place of echoes of R's own TSvals.
    pub ts_pod_first: u32,
    /// Tr_last: the last TSval R sent to C. TSecrs serially below `Tr_last + 1` echo R.
    pub ts_router_last: u32,
    /// Wr: the window-scale shift R advertised to C (0..=14).
    pub wscale_router: u8,
    /// Wp: the window-scale shift P advertised in its SYN-ACK (0..=14).
    pub wscale_pod: u8,
    pub _pad: [u8; 2],
}

/// Value of `STEER_FLOWS`: how a packet arriving with the entry's key is rewritten and where it
/// goes. Field offsets are pinned below; see the module comment for byte order and writers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SteerFlow {
    /// `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) of the last translated packet, refreshed when older
    /// than a second.
    pub last_seen_ns: u64,
    /// Packets translated in this direction.
    pub packets: u64,
    /// Bytes translated in this direction (`data_end - data`, Ethernet header included).
    pub bytes: u64,
    /// Packets of this direction dropped instead (a SYN, or TCP options that do not parse).
    pub dropped: u64,
    /// The source address the packet leaves with (network order).
    pub src_addr: [u8; 16],
    /// The destination address the packet leaves with (network order).
    pub dst_addr: [u8; 16],
    /// The source port the packet leaves with.
    pub src_port: u16,
    /// The destination port the packet leaves with.
    pub dst_port: u16,
    /// The interface the packet leaves by: the arrival interface gives `XDP_TX`, another one
    /// `bpf_redirect` (`XDP_REDIRECT`).
    pub if_index: u32,
    /// Ethernet source address written into the frame.
    pub src_mac: [u8; 6],
    /// Ethernet destination address written into the frame (the next hop's).
    pub dst_mac: [u8; 6],
    /// [`crate::nat::FAMILY_IPV4`] or [`crate::nat::FAMILY_IPV6`]: the family of both 5-tuples (the
    /// datapath does not translate between families).
    pub family: u8,
    /// [`STEER_TO_POD`] or [`STEER_TO_CLIENT`].
    pub direction: u8,
    /// [`STEER_FIN`] | [`STEER_RST`] as translated in this direction.
    pub seen: u16,
    /// [`STEER_PENDING`] or [`STEER_STEERED`].
    pub state: u32,
    /// The offsets between the legs.
    pub tcp: SteerTcp,
    /// [`STEER_TO_CLIENT`] entries: the highest acknowledgement number P sent (serially), kept by
    /// the translation stage so that the router knows when the ClientHello it replayed on leg B
    /// arrived whole. Written as 0 ("none yet": the first ACK from P sets it) or as Ic + 1; from
    /// then on it only moves forward ([`super::rules::acked_max`]), across the 2^32 wrap too.
    pub acked: u32,
    pub _pad2: u32,
}

const _: () = assert!(size_of::<SteerTcp>() == 20);
const _: () = assert!(size_of::<SteerFlow>() == 120);
const _: () = assert!(align_of::<SteerFlow>() == 8);
const _: () = assert!(core::mem::offset_of!(SteerFlow, src_addr) == 32);
const _: () = assert!(core::mem::offset_of!(SteerFlow, src_mac) == 72);
const _: () = assert!(core::mem::offset_of!(SteerFlow, state) == 88);
const _: () = assert!(core::mem::offset_of!(SteerFlow, tcp) == 92);
const _: () = assert!(core::mem::offset_of!(SteerFlow, acked) == 112);

/// The largest window-scale shift TCP allows (RFC 7323 section 2.3); larger values count as 14.
pub const MAX_WSCALE: u8 = 14;

impl SteerTcp {
    /// The offsets from the two handshakes: `isn_router` (Ir, R's SYN-ACK), `isn_pod` (Ip, P's
    /// SYN-ACK), `ts_router_last` (Tr_last, the last TSval R sent C), `ts_pod_first` (Tp0, P's
    /// SYN-ACK TSval), and the window-scale shifts R and P advertised (clamped to 14).
    pub const fn new(
        isn_router: u32,
        isn_pod: u32,
        ts_router_last: u32,
        ts_pod_first: u32,
        wscale_router: u8,
        wscale_pod: u8,
    ) -> SteerTcp {
        SteerTcp {
            seq_offset: isn_pod.wrapping_sub(isn_router),
            ts_offset: ts_router_last.wrapping_add(1).wrapping_sub(ts_pod_first),
            ts_pod_first,
            ts_router_last,
            wscale_router: clamp_wscale(wscale_router),
            wscale_pod: clamp_wscale(wscale_pod),
            _pad: [0; 2],
        }
    }
}

const fn clamp_wscale(shift: u8) -> u8 {
    if shift > MAX_WSCALE {
        MAX_WSCALE
    } else {
        shift
    }
}

impl SteerFlow {
    /// The key of the other direction's entry: the 5-tuple this entry's packets leave with,
    /// reversed (what the peer's packets arrive with).
    pub const fn reply_key(&self) -> FlowKey {
        FlowKey {
            src_addr: self.dst_addr,
            dst_addr: self.src_addr,
            src_port: self.dst_port,
            dst_port: self.src_port,
            family: self.family,
            protocol: crate::nat::PROTO_TCP,
            _pad: [0; 2],
        }
    }
}

// SAFETY (both impls): each type is `#[repr(C)]`, made only of integers and byte arrays with explicit
// padding fields (sizes and offsets asserted above, so no implicit padding), and every bit pattern is
// a valid value.
#[cfg(feature = "user")]
mod pod {
    use super::*;

    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SteerTcp {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SteerFlow {}
}
