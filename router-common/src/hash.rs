//! The flow hash that picks a new flow's endpoint slot: `flow_hash(key) % RING_SIZE`.
//!
//! Computed by `xdp_front` for each conntrack miss and by userspace (tests, `router xdp status`
//! predictions), from this one function, so both agree; a golden test in `router-user` runs
//! packets through the kernel and checks the endpoint it chose against this function.
//!
//! Inputs, in order, as 32-bit words: the source address (4 words, each read big endian from the
//! 16 address bytes), the destination address (4 words), `src_port << 16 | dst_port`, and
//! `family << 8 | protocol`. Mixing: the MurmurHash3 (x86, 32-bit) block and finalisation steps
//! over those 10 words with seed [`FLOW_HASH_SEED`] and length 40. The seed is fixed: a restart
//! picks the same slots, so flows whose conntrack entry was lost keep their endpoint.

use crate::nat::FlowKey;

/// Seed of [`flow_hash`].
pub const FLOW_HASH_SEED: u32 = 0x7a3c_51e9;

/// Hashes a flow key (see the module comment for the exact inputs).
#[inline(always)]
pub fn flow_hash(key: &FlowKey) -> u32 {
    let mut h = FLOW_HASH_SEED;
    h = block(h, word(&key.src_addr, 0));
    h = block(h, word(&key.src_addr, 4));
    h = block(h, word(&key.src_addr, 8));
    h = block(h, word(&key.src_addr, 12));
    h = block(h, word(&key.dst_addr, 0));
    h = block(h, word(&key.dst_addr, 4));
    h = block(h, word(&key.dst_addr, 8));
    h = block(h, word(&key.dst_addr, 12));
    h = block(h, (u32::from(key.src_port) << 16) | u32::from(key.dst_port));
    h = block(h, (u32::from(key.family) << 8) | u32::from(key.protocol));
    finish(h ^ 40)
}

#[inline(always)]
fn word(bytes: &[u8; 16], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

#[inline(always)]
fn block(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
    (h ^ k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

#[inline(always)]
fn finish(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn v4(d: u8, port: u16) -> FlowKey {
        FlowKey::tcp(IpAddr::V4(Ipv4Addr::new(10, 0, 0, d)), port, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 30080)
    }

    /// Pins the function: a change here changes every flow's slot (and the kernel's, in step).
    #[test]
    fn golden_values() {
        let six = FlowKey::tcp(
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
            40000,
            IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)),
            30080,
        );
        let got = [flow_hash(&v4(1, 40000)), flow_hash(&v4(1, 40001)), flow_hash(&six)];
        assert_eq!(got, GOLDEN, "flow_hash changed: {got:#010x?}");
    }

    const GOLDEN: [u32; 3] = [0xafa4_b74d, 0x718f_4707, 0x6f73_5ace];

    #[test]
    fn every_field_moves_the_hash() {
        let base = v4(1, 40000);
        let mut other = base;
        other.dst_port = 30081;
        assert_ne!(flow_hash(&base), flow_hash(&other));
        other = base;
        other.family = 6;
        assert_ne!(flow_hash(&base), flow_hash(&other));
        other = base;
        other.dst_addr[3] = 3;
        assert_ne!(flow_hash(&base), flow_hash(&other));
    }

    #[test]
    fn source_ports_spread_over_the_ring() {
        let ring = crate::maps::RING_SIZE;
        let mut hit = [false; 257];
        for port in 0..4096u16 {
            hit[(flow_hash(&v4(1, 30000 + port)) % ring) as usize] = true;
        }
        assert!(hit.iter().all(|&h| h), "some slot never chosen");
    }
}
