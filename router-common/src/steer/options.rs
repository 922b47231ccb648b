//! The TCP option walker: where a segment's timestamp and SACK options are, for the rewrite.
//!
//! Bounded for the eBPF verifier: at most [`MAX_OPTION_STEPS`] steps (each consumes at least one of
//! the at most 40 option bytes), every read through [`TcpBytes::load`] at an offset below the
//! header length (at most 60), no recursion, no allocation, no panics.
//!
//! Strict, because a rewrite of a misread option corrupts the flow: an option whose length byte is
//! below 2 or runs past the header, a known option with the wrong length (MSS 4, window scale 3,
//! SACK-permitted 2, timestamps 10, SACK 2 + 8n with 1 <= n <= 4), or a second timestamp or SACK
//! option, makes the segment [`SteerError::Options`]. Unknown kinds are skipped by their length.
//! EOL ends the walk; what follows it is padding.

use super::segment::{SteerError, TcpBytes};

/// End of option list (RFC 9293).
pub const OPT_EOL: u8 = 0;
/// No-operation, one byte.
pub const OPT_NOP: u8 = 1;
/// Maximum segment size, 4 bytes, SYN only.
pub const OPT_MSS: u8 = 2;
/// Window scale, 3 bytes, SYN only (RFC 7323).
pub const OPT_WSCALE: u8 = 3;
/// SACK permitted, 2 bytes, SYN only (RFC 2018).
pub const OPT_SACK_PERMITTED: u8 = 4;
/// SACK blocks, 2 + 8n bytes (RFC 2018).
pub const OPT_SACK: u8 = 5;
/// Timestamps, 10 bytes: kind, length, TSval, TSecr (RFC 7323).
pub const OPT_TIMESTAMPS: u8 = 8;

/// Length of the fixed TCP header; options start here.
pub const TCP_FIXED_LEN: usize = 20;
/// Longest TCP header (data offset 15).
pub const TCP_MAX_LEN: usize = 60;
/// Most SACK blocks one option can hold (2 + 4 x 8 = 34 bytes of 40).
pub const MAX_SACK_BLOCKS: usize = 4;
/// Walk steps: one per option byte at most.
pub const MAX_OPTION_STEPS: usize = TCP_MAX_LEN - TCP_FIXED_LEN;

/// Where the options the rewrite touches are, as byte offsets from the TCP header start (0 when
/// absent; an option can never start at offset 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptionLayout {
    /// Offset of the timestamp option's kind byte; TSval is 2 bytes further, TSecr 6.
    pub timestamps: usize,
    /// Offset of the SACK option's kind byte; block `i`'s left edge is `2 + 8i` bytes further, its
    /// right edge `6 + 8i`.
    pub sack: usize,
    /// SACK blocks in that option (0..=4).
    pub sack_blocks: usize,
}

impl OptionLayout {
    /// Offset of the TSval field, when the segment has timestamps.
    pub const fn tsval(&self) -> Option<usize> {
        if self.timestamps == 0 {
            None
        } else {
            Some(self.timestamps + 2)
        }
    }

    /// Offset of the TSecr field, when the segment has timestamps.
    pub const fn tsecr(&self) -> Option<usize> {
        if self.timestamps == 0 {
            None
        } else {
            Some(self.timestamps + 6)
        }
    }

    /// Offset of edge `edge` (0..8: left, right of block 0, left of block 1, ...), when present.
    pub const fn sack_edge(&self, edge: usize) -> Option<usize> {
        if edge >= self.sack_blocks * 2 {
            None
        } else {
            Some(self.sack + 2 + edge * 4)
        }
    }
}

/// The walk between two steps: where the next option starts and what was found so far. One
/// [`step`](OptionWalk::step) reads one option; [`walk`] runs up to [`MAX_OPTION_STEPS`] of them in a
/// loop, and the eBPF program runs the same steps from `bpf_loop`, which the verifier checks once
/// instead of once per path through 40 iterations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptionWalk {
    /// Offset of the next option's first byte.
    pub at: usize,
    /// The data offset in bytes: options end here.
    pub header_len: usize,
    /// What the steps found so far.
    pub layout: OptionLayout,
}

impl OptionWalk {
    /// A walk over the options of a header of `header_len` bytes (the caller checks 20..=60).
    pub const fn new(header_len: usize) -> OptionWalk {
        OptionWalk { at: TCP_FIXED_LEN, header_len, layout: OptionLayout { timestamps: 0, sack: 0, sack_blocks: 0 } }
    }

    /// Reads the option at `at` and moves past it. `Ok(true)`: the walk is over (end of the header
    /// or EOL) and `layout` is final; `Ok(false)`: call again.
    #[inline(always)]
    pub fn step<S: TcpBytes + ?Sized>(&mut self, segment: &S) -> Result<bool, SteerError> {
        let at = self.at;
        let header_len = self.header_len;
        if header_len > TCP_MAX_LEN {
            return Err(SteerError::Header);
        }
        if at >= header_len {
            return Ok(true);
        }
        let [kind] = segment.load::<1>(at).ok_or(SteerError::Truncated)?;
        if kind == OPT_EOL {
            return Ok(true);
        }
        if kind == OPT_NOP {
            self.at = at + 1;
            return Ok(false);
        }
        if at + 2 > header_len {
            return Err(SteerError::Options);
        }
        let [len] = segment.load::<1>(at + 1).ok_or(SteerError::Truncated)?;
        let len = len as usize;
        if len < 2 || at + len > header_len {
            return Err(SteerError::Options);
        }
        let layout = &mut self.layout;
        let expected = match kind {
            OPT_MSS => len == 4,
            OPT_WSCALE => len == 3,
            OPT_SACK_PERMITTED => len == 2,
            OPT_TIMESTAMPS => {
                let first = layout.timestamps == 0;
                layout.timestamps = at;
                first && len == 10
            }
            OPT_SACK => {
                let blocks = (len - 2) / 8;
                let first = layout.sack == 0;
                layout.sack = at;
                layout.sack_blocks = blocks;
                first && (len - 2).is_multiple_of(8) && (1..=MAX_SACK_BLOCKS).contains(&blocks)
            }
            _ => true,
        };
        if !expected {
            return Err(SteerError::Options);
        }
        self.at = at + len;
        Ok(false)
    }
}

/// Walks the options between [`TCP_FIXED_LEN`] and `header_len` (the data offset in bytes,
/// 20..=60) in a bounded loop of [`OptionWalk::step`]s. Returns where the timestamp and SACK
/// options are, or [`SteerError::Options`] / [`SteerError::Truncated`] / [`SteerError::Header`].
#[inline(always)]
pub fn walk<S: TcpBytes + ?Sized>(segment: &S, header_len: usize) -> Result<OptionLayout, SteerError> {
    let mut walk = OptionWalk::new(header_len);
    let mut step = 0;
    // Each step consumes at least one option byte, so MAX_OPTION_STEPS steps reach the end.
    while step < MAX_OPTION_STEPS {
        step += 1;
        if walk.step(segment)? {
            break;
        }
    }
    Ok(walk.layout)
}
