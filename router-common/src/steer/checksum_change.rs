//! The TCP checksum of a translated segment as the kernel's checksum helpers take it, for segments
//! whose checksum may be partial.
//!
//! A sender with TX checksum offload (every veth by default, so every pod) hands over segments whose
//! checksum field holds only the sum of the pseudo-header (addresses, protocol, TCP length), not
//! complemented; the sum over the TCP header and payload is added later, by the NIC or by the kernel
//! (`CHECKSUM_PARTIAL`). Updating such a field as if it were a complete checksum corrupts it: a
//! changed port, sequence number or option word must leave it alone (those bytes are summed later
//! anyway), and a changed address must move the pseudo-header sum itself. Only the kernel knows which
//! kind an skb carries, so the TC program hands it two differences instead of a field value
//! ([`ChecksumChange::pseudo_diff`] with `BPF_F_PSEUDO_HDR`, [`ChecksumChange::field_diff`]
//! without) and `bpf_l4_csum_replace` applies each as that skb needs.
//!
//! XDP sees bytes only; [`may_be_partial`] (and [`may_be_partial_v6`]) tells it when a field looks like a bare pseudo-header sum,
//! and such a segment goes to the TC program rather than being rewritten in XDP.

use crate::checksum::fold;

/// One translation's checksum field: before, after the pseudo-header's address change alone, and
/// after every change (the value a complete checksum takes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChecksumChange {
    pub old: u16,
    pub pseudo: u16,
    pub full: u16,
}

impl ChecksumChange {
    /// The ones' complement sum the pseudo-header's change added (`new - old` of its words): for
    /// `bpf_l4_csum_replace(skb, off, 0, diff, BPF_F_PSEUDO_HDR)`.
    pub const fn pseudo_diff(&self) -> u32 {
        complement_diff(self.old, self.pseudo)
    }

    /// The ones' complement sum every other change added (ports, sequence numbers, window,
    /// options): for `bpf_l4_csum_replace(skb, off, 0, diff, 0)`, which a partial checksum ignores.
    pub const fn field_diff(&self) -> u32 {
        complement_diff(self.pseudo, self.full)
    }

    /// What a partial checksum field `field` becomes: the pseudo-header difference added to the
    /// (uncomplemented) sum it holds, as the kernel does for `CHECKSUM_PARTIAL` with
    /// `BPF_F_PSEUDO_HDR`.
    pub const fn apply_to_partial(&self, field: u16) -> u16 {
        fold(field as u32 + self.pseudo_diff())
    }

    /// What a complete checksum field `field` becomes after both differences, as the kernel applies
    /// them to any other skb: equal to [`ChecksumChange::full`] when `field` was `old`.
    pub const fn apply_to_complete(&self, field: u16) -> u16 {
        let after_pseudo = !fold(self.pseudo_diff() + !field as u32);
        !fold(self.field_diff() + !after_pseudo as u32)
    }
}

/// The difference between two checksum fields, as the sum that turns the data summed under `from`
/// into the data summed under `to`: a field is the complement of its sum, so `~to - ~from` =
/// `~to + from`.
const fn complement_diff(from: u16, to: u16) -> u32 {
    fold(!to as u32 + from as u32) as u32
}

/// Whether an IPv4 TCP segment's checksum field equals the bare pseudo-header sum of its own
/// addresses and TCP length: what a sender with checksum offload leaves there. A complete checksum
/// matches by chance once in 65,536 segments; that one is then handled by the TC program, which is
/// right for both kinds.
pub const fn may_be_partial(check: u16, src: [u8; 4], dst: [u8; 4], tcp_len: u16) -> bool {
    check == fold(address_sum(&src) + address_sum(&dst) + 6 + tcp_len as u32)
}

/// [`may_be_partial`] for an IPv6 segment: the pseudo-header of RFC 8200 section 8.1 sums both
/// 128-bit addresses, the upper-layer length (32 bits, here the payload length, as no extension
/// header is steered) and the next-header value 6. Its sum has the same shape as IPv4's, over eight
/// words per address instead of two.
pub const fn may_be_partial_v6(check: u16, src: &[u8; 16], dst: &[u8; 16], tcp_len: u16) -> bool {
    check == fold(address_sum(src) + address_sum(dst) + 6 + tcp_len as u32)
}

/// The unfolded sum of an address's 16-bit words (network order). At most eight words of 0xffff:
/// no overflow.
const fn address_sum<const N: usize>(addr: &[u8; N]) -> u32 {
    let mut sum = 0u32;
    let mut i = 0;
    while i + 1 < N {
        sum += u16::from_be_bytes([addr[i], addr[i + 1]]) as u32;
        i += 2;
    }
    sum
}
