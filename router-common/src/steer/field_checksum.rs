//! RFC 1624 incremental checksum updates for a 16- or 32-bit field at any byte offset of the
//! checksummed data, built on [`crate::checksum::replace16`].
//!
//! The Internet checksum sums 16-bit words from an even offset. A field at an odd offset straddles
//! two words, one byte in each; its contribution to the sum is the byte-swapped value of what it
//! would contribute at an even offset (RFC 1071 section 2(B): the sum is byte-order independent, and
//! `x * 256 = rotate(x, 8)` modulo 0xffff). So an odd-offset update is the even one on swapped
//! halves. TCP options are not 16-bit aligned in general (e.g. a timestamp option after a single
//! NOP), so every option word goes through here with its offset from the TCP header start (the TCP
//! header itself starts the segment's part of the sum).

use crate::checksum::replace16;

/// The checksum field after the 16-bit field at byte `offset` changed from `old` to `new`.
#[inline(always)]
pub const fn replace16_at(check: u16, offset: usize, old: u16, new: u16) -> u16 {
    if offset & 1 == 0 {
        replace16(check, old, new)
    } else {
        replace16(check, old.swap_bytes(), new.swap_bytes())
    }
}

/// The checksum field after the 32-bit field (big endian on the wire) at byte `offset` changed
/// from `old` to `new`. Unchanged values leave the field as it was.
#[inline(always)]
pub const fn replace32_at(check: u16, offset: usize, old: u32, new: u32) -> u16 {
    if old == new {
        return check;
    }
    let check = replace16_at(check, offset, (old >> 16) as u16, (new >> 16) as u16);
    replace16_at(check, offset + 2, old as u16, new as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{fold, sum_bytes};

    fn full(data: &[u8]) -> u16 {
        !fold(sum_bytes(data))
    }

    #[test]
    fn updates_at_every_offset_match_a_full_recomputation() {
        let base: [u8; 23] = core::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
        for offset in 0..base.len() - 4 {
            for (old_pick, new) in [(0u32, 0xdead_beefu32), (1, 0), (2, 0xffff_ffff), (3, 0x0001_0000)] {
                let mut data = base;
                data[offset..offset + 4].copy_from_slice(&(old_pick * 0x0101_0101).to_be_bytes());
                let before = full(&data);
                let old = u32::from_be_bytes(data[offset..offset + 4].try_into().expect("4 bytes"));
                data[offset..offset + 4].copy_from_slice(&new.to_be_bytes());
                assert_eq!(
                    replace32_at(before, offset, old, new),
                    full(&data),
                    "u32 at {offset}: {old:#x} -> {new:#x}"
                );

                let old16 = u16::from_be_bytes([data[offset], data[offset + 1]]);
                let before = full(&data);
                data[offset..offset + 2].copy_from_slice(&0x8001u16.to_be_bytes());
                assert_eq!(replace16_at(before, offset, old16, 0x8001), full(&data), "u16 at {offset}");
            }
        }
    }
}
