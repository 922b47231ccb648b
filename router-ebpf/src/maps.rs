//! The nodePort and conntrack maps (BTF-defined, so `bpftool map dump` prints named fields).
//! Layouts, byte order and writers: `router_common::nat` and `router_common::maps`.
//!
//! Each static is spelled exactly like its `router_common::maps` name constant: a BTF map takes
//! its name from the identifier. Sizes are the `router_common::maps` constants; the loader may
//! override the conntrack sizes (`--xdp-conntrack-size`) before loading.

use aya_ebpf::{
    btf_maps::{HashMap, LruHashMap},
    macros::btf_map,
};
use router_common::{
    maps::{CONNTRACK_DEFAULT_MAX, EP_SLOTS_MAX, NODE_ADDRS_MAX, NODE_PORTS_MAX},
    nat::{CtEntry, Endpoint, FlowKey, NodeAddr, NodeAddrKey, NodePort, NodePortKey, SlotKey},
};

/// Destination addresses that are this node's (`BPF_MAP_TYPE_HASH`, 64 entries, 20-byte key,
/// 4-byte value). Written by userspace only.
#[btf_map]
pub static NODE_ADDRS: HashMap<NodeAddrKey, NodeAddr, { NODE_ADDRS_MAX as usize }> = HashMap::new();

/// The router Service's nodePorts per family (`BPF_MAP_TYPE_HASH`, 16 entries, 4-byte key, 8-byte
/// value). Written by userspace only.
#[btf_map]
pub static NODE_PORTS: HashMap<NodePortKey, NodePort, { NODE_PORTS_MAX as usize }> = HashMap::new();

/// Each nodePort's Maglev table, slot -> endpoint (`BPF_MAP_TYPE_HASH`, 16 x 257 entries, 8-byte
/// key, 20-byte value). Written by userspace only, slots that changed only.
#[btf_map]
pub static EP_SLOTS: HashMap<SlotKey, Endpoint, { EP_SLOTS_MAX as usize }> = HashMap::new();

/// Forward conntrack, client -> nodePort flow to its endpoint (`BPF_MAP_TYPE_LRU_HASH`, 40-byte
/// key, 32-byte value; entries evicted least recently used first when full). Written by
/// `xdp_front`; idle entries deleted by userspace.
#[btf_map]
pub static CONNTRACK: LruHashMap<FlowKey, CtEntry, { CONNTRACK_DEFAULT_MAX as usize }> = LruHashMap::new();

/// Reverse conntrack, endpoint -> client reply to the nodePort address (`BPF_MAP_TYPE_LRU_HASH`,
/// 40-byte key, 32-byte value). Written by `xdp_front` (insert, stale removal) and `nat_reverse`
/// (timestamps, flags); idle entries deleted by userspace.
#[btf_map]
pub static CONNTRACK_REV: LruHashMap<FlowKey, CtEntry, { CONNTRACK_DEFAULT_MAX as usize }> = LruHashMap::new();
