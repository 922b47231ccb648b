//! One pure function per field a steered packet changes, exactly as the design notes' "The rewrite,
//! per direction" says. Sequence numbers and timestamps are modulo 2^32 (`wrapping_*`), compared
//! serially (RFC 1982 style: `a` is before `b` when `a - b`, as a signed 32-bit number, is negative).
//!
//! C -> P: [`ack_to_pod`], [`sack_edge_to_pod`], [`tsecr_to_pod`]; seq, window and TSval unchanged.
//! P -> C: [`seq_to_client`], [`window_to_client`], [`tsval_to_client`]; ack, TSecr and SACK unchanged.
//! Bookkeeping of the P -> C entry: [`acked_max`] (how far P acknowledged C's bytes).

use super::flow::MAX_WSCALE;

/// `a` is serially before `b` (mod 2^32; RFC 1982 with 32-bit serial numbers).
#[inline(always)]
pub const fn serial_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// C -> P: C acknowledges R's sequence space; P's is `seq_offset` (D) further on.
#[inline(always)]
pub const fn ack_to_pod(ack: u32, seq_offset: u32) -> u32 {
    ack.wrapping_add(seq_offset)
}

/// C -> P: a SACK edge (C acknowledging P's data) moves like the ack.
#[inline(always)]
pub const fn sack_edge_to_pod(edge: u32, seq_offset: u32) -> u32 {
    edge.wrapping_add(seq_offset)
}

/// P -> C: P's sequence numbers back into R's space, the one C synchronised with.
#[inline(always)]
pub const fn seq_to_client(seq: u32, seq_offset: u32) -> u32 {
    seq.wrapping_sub(seq_offset)
}

/// P -> C: P's TSval moved by T, so that P's first TSval (Tp0) reaches C as `Tr_last + 1`, after
/// every TSval R sent: C's PAWS check (RFC 7323 section 5) keeps accepting the flow.
#[inline(always)]
pub const fn tsval_to_client(tsval: u32, ts_offset: u32) -> u32 {
    tsval.wrapping_add(ts_offset)
}

/// C -> P: C echoes a TSval it received. Values from `Tr_last + 1` on are P's, moved by T, and go
/// back by T; values serially below `Tr_last + 1` echo R's own TSvals, which mean nothing on leg B,
/// so P gets its own first TSval (`ts_pod_first`, Tp0) and takes no absurd RTT sample.
#[inline(always)]
pub const fn tsecr_to_pod(tsecr: u32, ts_offset: u32, ts_pod_first: u32, ts_router_last: u32) -> u32 {
    if serial_before(tsecr, ts_router_last.wrapping_add(1)) {
        ts_pod_first
    } else {
        tsecr.wrapping_sub(ts_offset)
    }
}

/// P -> C: P's window is in units of 2^Wp, C reads it in units of 2^Wr (R's shift). The result is
/// `min(65535, (window << Wp) >> Wr)`: rounded down when Wr > Wp, clamped when it does not fit, so C
/// never sees more room than P offered. Shifts above 14 count as 14 (RFC 7323 section 2.3).
#[inline(always)]
pub const fn window_to_client(window: u16, wscale_pod: u8, wscale_router: u8) -> u16 {
    let pod = if wscale_pod > MAX_WSCALE { MAX_WSCALE } else { wscale_pod };
    let router = if wscale_router > MAX_WSCALE { MAX_WSCALE } else { wscale_router };
    // At most 16 + 14 bits: fits a u32.
    let bytes = (window as u32) << pod;
    let scaled = bytes >> router;
    if scaled > u16::MAX as u32 {
        u16::MAX
    } else {
        scaled as u16
    }
}

/// P -> C: the entry's `acked` after P sent acknowledgement number `ack`: the serial maximum of
/// the two, so that a reordered older ACK never moves it back, across the 2^32 wrap too. 0 means
/// "nothing yet" (userspace may write the entry with `acked` 0), so the first ACK always counts.
#[inline(always)]
pub const fn acked_max(acked: u32, ack: u32) -> u32 {
    if acked == 0 || serial_before(acked, ack) {
        ack
    } else {
        acked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_order_wraps() {
        assert!(serial_before(1, 2));
        assert!(!serial_before(2, 2));
        assert!(serial_before(u32::MAX, 0), "2^32 - 1 comes just before 0");
        assert!(!serial_before(0, u32::MAX));
        assert!(serial_before(0, 0x7fff_ffff), "less than half the space ahead is after");
        assert!(!serial_before(0, 0x8000_0001), "more than half the space ahead is before");
    }

    #[test]
    fn acked_is_a_serial_maximum_across_the_wrap() {
        assert_eq!(acked_max(0, 0x9000_0001), 0x9000_0001, "0 is unset: the first ACK counts");
        assert_eq!(acked_max(100, 200), 200);
        assert_eq!(acked_max(200, 100), 200, "an older ACK does not move it back");
        assert_eq!(acked_max(0xffff_fff0, 0x0000_0010), 0x0000_0010, "forward across the wrap");
        assert_eq!(acked_max(0x0000_0010, 0xffff_fff0), 0x0000_0010, "backward across the wrap");
    }
}
