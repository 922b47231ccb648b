//! The `XDP_STATS` per-CPU counter map and the one function that writes it.
//!
//! Map: `BPF_MAP_TYPE_PERCPU_ARRAY`, BTF-defined (`#[btf_map]`, so `bpftool map dump` prints the
//! named `packets`/`bytes` fields), `max_entries = STATS_LEN` (21), no flags, key `u32` counter
//! index, value `PacketCounter` (16 bytes per CPU), both host byte order. Index layout:
//! `router_common::stats`. Writers: `xdp_front` and `nat_reverse`, each CPU into its own slot
//! (both run with migration disabled, so a plain read-modify-write is race free). Reader:
//! userspace, summing CPUs.

use aya_ebpf::{btf_maps::PerCpuArray, macros::btf_map};
use router_common::stats::{PacketCounter, STATS_LEN};

/// Spelled like `router_common::maps::XDP_STATS`: a BTF map takes its name from the identifier.
#[btf_map]
static XDP_STATS: PerCpuArray<PacketCounter, { STATS_LEN as usize }> = PerCpuArray::new();

/// Adds one packet of `bytes` bytes to counter `index` on this CPU. An index outside the map is
/// ignored (cannot happen with the `router_common::stats` constants).
#[inline(always)]
pub fn count(index: u32, bytes: u64) {
    if let Some(counter) = XDP_STATS.get_ptr_mut(index) {
        // SAFETY: the pointer comes from a successful per-CPU array lookup, so it points at this
        // CPU's valid, 8-byte aligned `PacketCounter`; no other writer touches this CPU's slot
        // while the program runs.
        unsafe {
            (*counter).packets += 1;
            (*counter).bytes += bytes;
        }
    }
}
