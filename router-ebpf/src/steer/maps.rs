//! The `STEER_FLOWS` map of `steer_translate`. Layout, byte order, writers and the reason it is a
//! plain hash rather than an LRU: `router_common::steer::flow`.

use aya_ebpf::{bindings::BPF_F_NO_PREALLOC, btf_maps::HashMap, macros::btf_map};
use router_common::{
    nat::FlowKey,
    steer::{SteerFlow, STEER_FLOWS_MAX},
};

/// Steered flows by arrival 5-tuple, one entry per direction (`BPF_MAP_TYPE_HASH`,
/// `BPF_F_NO_PREALLOC`, 65,536 entries, 40-byte key, 120-byte value). Spelled like
/// `router_common::steer::STEER_FLOWS`: a BTF map takes its name from the identifier.
#[btf_map]
pub static STEER_FLOWS: HashMap<FlowKey, SteerFlow, { STEER_FLOWS_MAX as usize }, { BPF_F_NO_PREALLOC as usize }> =
    HashMap::new();
