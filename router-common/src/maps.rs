//! Names of the eBPF maps, as they appear in the object file, in the kernel (`bpftool map`) and as
//! file names under the router's bpffs pin directory (`<pin_dir>/<NAME>`).
//!
//! An eBPF `#[btf_map]` takes its name from the static's identifier, so each static in
//! `router-ebpf` is spelled exactly like the constant here. The kernel keeps at most 15 bytes of a
//! map name; every name here fits.
//!
//! | map             | kind (BTF-defined)        | key                       | value                    | writers                       |
//! |-----------------|---------------------------|---------------------------|--------------------------|-------------------------------|
//! | `XDP_STATS`     | per-CPU array, 21 entries | `u32` counter index       | [`PacketCounter`]        | `xdp_front`, `nat_reverse`    |
//! | `NODE_ADDRS`    | hash, 64 entries          | [`NodeAddrKey`]           | [`NodeAddr`]             | userspace (`xdp::sync`)       |
//! | `NODE_PORTS`    | hash, 16 entries          | [`NodePortKey`]           | [`NodePort`]             | userspace (`xdp::sync`)       |
//! | `EP_SLOTS`      | hash, 16 x 257 entries    | [`SlotKey`]               | [`Endpoint`]             | userspace (`xdp::sync`)       |
//! | `CONNTRACK`     | LRU hash, 65536 (loader)  | [`FlowKey`] client->node  | [`CtEntry`] endpoint     | `xdp_front`; userspace GC     |
//! | `CONNTRACK_REV` | LRU hash, 65536 (loader)  | [`FlowKey`] endpoint->client | [`CtEntry`] nodePort  | `xdp_front`, `nat_reverse`; GC |
//! | `STEER_PORTS`   | hash, 16 entries          | [`SteerPortKey`]          | `u8` 1                   | userspace (passthrough setup) |
//! | `STEER_SYNS`    | LRU hash, 65536           | [`FlowKey`] client->R     | [`SteerSyn`]             | `xdp_front`; userspace reads/removes |
//! | `STEER_ANSWERS` | hash (no prealloc), 16384 | [`FlowKey`] pod->Q        | [`SteerAnswer`]          | `xdp_front`; userspace reads/removes |
//! | `STEER_FLOWS`   | hash (no prealloc), 65536 | [`FlowKey`] as it arrives | [`SteerFlow`]            | userspace; `xdp_front` counters, `seen`, `acked` |
//! | `STEER_EVENTS`  | ring buffer, 256 KiB      | -                         | [`FlowKey`] records      | `xdp_front`; userspace consumes |
//!
//! Userspace never clears the steering maps on sync: `STEER_PORTS` belongs to the passthrough
//! setup, which fills it, and the others to the flows in them.
//!
//! The passthrough sockmap relay maps live in a second object (`router-sockmap`, loaded by
//! `relay::sockmap` whether or not XDP is attached) and are not pinned; `bpftool map dump name
//! SOCKMAP_PEERS` reads them:
//!
//! | map              | kind (BTF-defined)         | key          | value                 | writers                  |
//! |------------------|----------------------------|--------------|-----------------------|--------------------------|
//! | `SOCKMAP_SOCKS`   | SOCKHASH, 65536 entries    | [`SockKey`]  | socket                | userspace                |
//! | `SOCKMAP_TARGETS` | SOCKHASH, 65536 entries    | [`SockKey`]  | socket                | userspace                |
//! | `SOCKMAP_PEERS`   | hash (no prealloc), 65536  | [`SockKey`]  | [`SockmapPeer`]        | userspace; counters: `sockmap_verdict` |
//!
//! [`PacketCounter`]: crate::stats::PacketCounter
//! [`NodeAddrKey`]: crate::nat::NodeAddrKey
//! [`NodeAddr`]: crate::nat::NodeAddr
//! [`NodePortKey`]: crate::nat::NodePortKey
//! [`NodePort`]: crate::nat::NodePort
//! [`SlotKey`]: crate::nat::SlotKey
//! [`Endpoint`]: crate::nat::Endpoint
//! [`FlowKey`]: crate::nat::FlowKey
//! [`CtEntry`]: crate::nat::CtEntry
//! [`SockKey`]: crate::sockmap::SockKey
//! [`SockmapPeer`]: crate::sockmap::SockmapPeer
//! [`SteerPortKey`]: crate::steer::setup::SteerPortKey
//! [`SteerSyn`]: crate::steer::setup::SteerSyn
//! [`SteerAnswer`]: crate::steer::setup::SteerAnswer
//! [`SteerFlow`]: crate::steer::SteerFlow

pub use crate::steer::{
    setup::{STEER_ANSWERS, STEER_EVENTS, STEER_PORTS, STEER_SYNS},
    STEER_FLOWS,
};

/// Per-CPU packet counters of `xdp_front` and `nat_reverse` (`BPF_MAP_TYPE_PERCPU_ARRAY`, key
/// `u32` counter index from [`crate::stats`], value [`crate::stats::PacketCounter`]).
pub const XDP_STATS: &str = "XDP_STATS";
/// Destination addresses that count as "this node" for nodePort traffic.
pub const NODE_ADDRS: &str = "NODE_ADDRS";
/// The router Service's nodePorts, per address family, with their local endpoint count.
pub const NODE_PORTS: &str = "NODE_PORTS";
/// Each nodePort's Maglev lookup table: slot -> local endpoint.
pub const EP_SLOTS: &str = "EP_SLOTS";
/// Forward conntrack: client -> nodePort flow to the endpoint it was sent to.
pub const CONNTRACK: &str = "CONNTRACK";
/// Reverse conntrack: endpoint -> client reply flow to the nodePort address it must come from.
pub const CONNTRACK_REV: &str = "CONNTRACK_REV";

/// Relayed sockets with `sockmap_verdict` attached (`BPF_MAP_TYPE_SOCKHASH`): a socket's received
/// bytes go through the program once it is here.
pub const SOCKMAP_SOCKS: &str = "SOCKMAP_SOCKS";
/// Relayed sockets as redirect targets (`BPF_MAP_TYPE_SOCKHASH`, no program attached): a socket is
/// here before its peer's bytes may be redirected to it, and stays until they are all sent.
pub const SOCKMAP_TARGETS: &str = "SOCKMAP_TARGETS";
/// Relayed socket -> its peer and the bytes redirected so far (`BPF_MAP_TYPE_HASH`).
pub const SOCKMAP_PEERS: &str = "SOCKMAP_PEERS";
/// `max_entries` of each sockmap relay map: sockets, two per relayed connection.
pub const SOCKMAP_MAX_SOCKETS: u32 = 65_536;

/// Every map the userspace loader pins, in pin order: the nodePort path's, then the steering
/// maps (names in `crate::steer`).
pub const PINNED_MAPS: &[&str] = &[
    XDP_STATS,
    NODE_ADDRS,
    NODE_PORTS,
    EP_SLOTS,
    CONNTRACK,
    CONNTRACK_REV,
    STEER_PORTS,
    STEER_SYNS,
    STEER_ANSWERS,
    STEER_FLOWS,
    STEER_EVENTS,
];

/// `max_entries` of `NODE_ADDRS`.
pub const NODE_ADDRS_MAX: u32 = 64;
/// `max_entries` of `NODE_PORTS`: (nodePort, family) pairs.
pub const NODE_PORTS_MAX: u32 = 16;
/// Slots in each nodePort's Maglev table (prime, so every skip value walks the whole table).
pub const RING_SIZE: u32 = 257;
/// `max_entries` of `EP_SLOTS`: one full table per `NODE_PORTS` entry.
pub const EP_SLOTS_MAX: u32 = NODE_PORTS_MAX * RING_SIZE;
/// `max_entries` of `CONNTRACK` and `CONNTRACK_REV` in the object; the loader overrides it with
/// the `--xdp-conntrack-size` setting.
pub const CONNTRACK_DEFAULT_MAX: u32 = 65_536;

const _: () = {
    let mut i = 0;
    while i < PINNED_MAPS.len() {
        assert!(PINNED_MAPS[i].len() <= 15, "map names are truncated to 15 bytes by the kernel");
        i += 1;
    }
};
