//! The eBPF object, built by `build.rs` (aya-build) and embedded in the binary.

/// The ELF object holding `xdp_front` and its maps, 8-byte aligned as aya's parser wants.
pub(crate) static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/router-ebpf"));

/// Name of the XDP program in the object (the `#[xdp]` function in `router-ebpf`).
pub(crate) const PROGRAM: &str = "xdp_front";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_holds_the_program_and_every_pinned_map() {
        assert_eq!(&OBJECT[..4], b"\x7fELF", "not an ELF object");
        let contains = |name: &str| OBJECT.windows(name.len()).any(|w| w == name.as_bytes());
        assert!(contains(PROGRAM), "object lacks {PROGRAM}");
        for map in router_common::maps::PINNED_MAPS {
            assert!(contains(map), "object lacks map {map}");
        }
    }
}
