//! The eBPF object, built by `build.rs` (aya-build) and embedded in the binary.

/// The ELF object holding `xdp_front`, `nat_reverse` and their maps, 8-byte aligned as aya's parser wants.
pub(crate) static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/router-ebpf"));

/// Name of the XDP program in the object (the `#[xdp]` function in `router-ebpf`).
pub(crate) const PROGRAM: &str = "xdp_front";

/// Name of the TC egress program that restores nodePort addresses on replies (`#[classifier]`).
pub(crate) const TC_PROGRAM: &str = "nat_reverse";

/// The TC ingress program of the steering datapath (the packets `xdp_front` hands over).
pub(crate) const STEER_TC_PROGRAM: &str = "steer_ingress";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_holds_the_program_and_every_pinned_map() {
        assert_eq!(&OBJECT[..4], b"\x7fELF", "not an ELF object");
        let contains = |name: &str| OBJECT.windows(name.len()).any(|w| w == name.as_bytes());
        assert!(contains(PROGRAM), "object lacks {PROGRAM}");
        assert!(contains(TC_PROGRAM), "object lacks {TC_PROGRAM}");
        assert!(contains(STEER_TC_PROGRAM), "object lacks {STEER_TC_PROGRAM}");
        for map in router_common::maps::PINNED_MAPS {
            assert!(contains(map), "object lacks map {map}");
        }
    }
}
