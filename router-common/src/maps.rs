//! Names of the eBPF maps, as they appear in the object file, in the kernel (`bpftool map`) and as
//! file names under the router's bpffs pin directory (`<pin_dir>/<NAME>`).
//!
//! An eBPF `#[btf_map]` takes its name from the static's identifier, so each static in
//! `router-ebpf` is spelled exactly like the constant here. The kernel keeps at most 15 bytes of a
//! map name; every name here fits.

/// Per-CPU packet counters of `xdp_front` (`BPF_MAP_TYPE_PERCPU_ARRAY`, key `u32` counter index
/// from [`crate::stats`], value [`crate::stats::PacketCounter`]).
pub const XDP_STATS: &str = "XDP_STATS";

/// Every map the userspace loader pins, in pin order.
pub const PINNED_MAPS: &[&str] = &[XDP_STATS];

const _: () = {
    let mut i = 0;
    while i < PINNED_MAPS.len() {
        assert!(PINNED_MAPS[i].len() <= 15, "map names are truncated to 15 bytes by the kernel");
        i += 1;
    }
};
