//! Internet checksum arithmetic (RFC 1071 sums, RFC 1624 incremental updates) over 16-bit words in
//! network order, as `xdp_front` applies it when it rewrites an address or port, and as tests use
//! it to check a rewritten packet from scratch.
//!
//! A checksum field is handled as the `u16` read big endian from the packet; updates return the
//! new field value in the same form.

/// Folds a 32-bit ones' complement sum to 16 bits.
#[inline(always)]
pub const fn fold(mut sum: u32) -> u16 {
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum as u16
}

/// The checksum field after a 16-bit word of the covered data changed from `old` to `new`
/// (RFC 1624, eqn. 3: `HC' = ~(~HC + ~m + m')`).
#[inline(always)]
pub const fn replace16(check: u16, old: u16, new: u16) -> u16 {
    !fold(!check as u32 + !old as u32 + new as u32)
}

/// The checksum field after `N` bytes (N even) of the covered data changed from `old` to `new`,
/// e.g. an address.
#[inline(always)]
pub fn replace_bytes<const N: usize>(check: u16, old: &[u8; N], new: &[u8; N]) -> u16 {
    let mut sum = !check as u32;
    let mut i = 0;
    while i + 1 < N {
        sum += !u16::from_be_bytes([old[i], old[i + 1]]) as u32;
        sum += u16::from_be_bytes([new[i], new[i + 1]]) as u32;
        // Fold as we go so the sum cannot overflow for long inputs.
        sum = (sum & 0xffff) + (sum >> 16);
        i += 2;
    }
    !fold(sum)
}

/// Ones' complement sum of `bytes` (a trailing odd byte is padded with zero), unfolded.
pub fn sum_bytes(bytes: &[u8]) -> u32 {
    let mut sum: u32 = 0;
    let mut chunks = bytes.chunks_exact(2);
    for pair in &mut chunks {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([pair[0], pair[1]])));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checksum of `data` with the field (at `at`) taken as zero.
    fn full(data: &[u8], at: usize) -> u16 {
        let mut copy = [0u8; 64];
        copy[..data.len()].copy_from_slice(data);
        copy[at] = 0;
        copy[at + 1] = 0;
        !fold(sum_bytes(&copy[..data.len()]))
    }

    #[test]
    fn incremental_updates_match_a_full_recomputation() {
        // An IPv4 header; checksum at bytes 10..12.
        let mut header = [0x45, 0, 0, 60, 0x1c, 0x46, 0x40, 0, 0x40, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let check = full(&header, 10);
        header[10..12].copy_from_slice(&check.to_be_bytes());
        let new_dst = [192, 168, 77, 254];
        let old_dst: [u8; 4] = header[16..20].try_into().expect("4 bytes");
        let updated = replace_bytes(check, &old_dst, &new_dst);
        header[16..20].copy_from_slice(&new_dst);
        assert_eq!(updated, full(&header, 10));
        let ttl_proto = u16::from_be_bytes([header[8], header[9]]);
        let again = replace16(updated, ttl_proto, ttl_proto - 0x100);
        header[8] -= 1;
        assert_eq!(again, full(&header, 10));
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum_bytes(&[0x01, 0x02, 0x03]), 0x0102 + 0x0300);
    }
}
