//! The steering maps: `STEER_FLOWS` (the translation stage's) and the setup stage's `STEER_PORTS`,
//! `STEER_SYNS`, `STEER_ANSWERS` and `STEER_EVENTS`. Layouts, byte order, writers and the reason
//! `STEER_FLOWS` is a plain hash rather than an LRU: `router_common::steer::flow` and
//! `router_common::steer::setup`. Each static is spelled like its `router_common` name constant: a
//! BTF map takes its name from the identifier.

use aya_ebpf::{
    bindings::BPF_F_NO_PREALLOC,
    btf_maps::{HashMap, LruHashMap, RingBuf},
    macros::btf_map,
};
use router_common::{
    nat::FlowKey,
    steer::{
        setup::{
            SteerAnswer, SteerEvent, SteerPortKey, SteerSyn, STEER_ANSWERS_MAX, STEER_EVENTS_BYTES, STEER_PORTS_MAX,
            STEER_SYNS_MAX,
        },
        SteerFlow, STEER_FLOWS_MAX,
    },
};

/// Steered flows by arrival 5-tuple, one entry per direction (`BPF_MAP_TYPE_HASH`,
/// `BPF_F_NO_PREALLOC`, 65,536 entries, 40-byte key, 120-byte value).
#[btf_map]
pub static STEER_FLOWS: HashMap<FlowKey, SteerFlow, { STEER_FLOWS_MAX as usize }, { BPF_F_NO_PREALLOC as usize }> =
    HashMap::new();

/// The router's TLS ports whose client SYNs are recorded (`BPF_MAP_TYPE_HASH`, 16 entries, 4-byte
/// key, 1-byte value 1). Written by userspace only; read by `xdp_front`.
#[btf_map]
pub static STEER_PORTS: HashMap<SteerPortKey, u8, { STEER_PORTS_MAX as usize }> = HashMap::new();

/// Client SYNs by the 5-tuple R sees (`BPF_MAP_TYPE_LRU_HASH`, 65,536 entries, 40-byte key,
/// 56-byte value). Written by `xdp_front`; read (and removed) by userspace.
#[btf_map]
pub static STEER_SYNS: LruHashMap<FlowKey, SteerSyn, { STEER_SYNS_MAX as usize }> = LruHashMap::new();

/// The pod's answers to leg B's SYN, keyed P -> Q (`BPF_MAP_TYPE_HASH`, `BPF_F_NO_PREALLOC`,
/// 16,384 entries, 40-byte key, 48-byte value). Written by `steer_ingress` on the pod-facing
/// interfaces and by `xdp_front` (a pod reached through the NIC); read and removed by userspace.
#[btf_map]
pub static STEER_ANSWERS: HashMap<
    FlowKey,
    SteerAnswer,
    { STEER_ANSWERS_MAX as usize },
    { BPF_F_NO_PREALLOC as usize },
> = HashMap::new();

/// The keys of answers just recorded (`BPF_MAP_TYPE_RINGBUF`, 256 KiB of 40-byte `FlowKey`
/// records plus the ring buffer's 8-byte record headers). Written by whichever program recorded the
/// answer; userspace waits on it.
#[btf_map]
pub static STEER_EVENTS: RingBuf<SteerEvent, { STEER_EVENTS_BYTES as usize }> = RingBuf::new();
