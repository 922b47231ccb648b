//! The SYN option reader: MSS, window scale, SACK-permitted and timestamps of a SYN or SYN-ACK,
//! which the setup stage records ([`super::setup::SteerSyn`], [`super::setup::SteerAnswer`]) so that
//! userspace can open leg B with the client's own options and compute the offsets from the pod's.
//!
//! Bounded for the eBPF verifier like [`super::options`]: one [`SynOptionWalk::step`] reads one
//! option through [`TcpBytes::load`] at an offset below the header length (at most 60); at most
//! [`MAX_OPTION_STEPS`] steps (each consumes at least one of the at most 40 option bytes); no
//! recursion, no allocation, no panics. The eBPF program runs the steps from `bpf_loop`.
//!
//! Strict, because userspace repeats these values to the pod: an option whose length byte is
//! below 2 or runs past the header, one of the four kinds with the wrong length (MSS 4, window
//! scale 3, SACK-permitted 2, timestamps 10), or any of them twice, makes the segment
//! [`SteerError::Options`] (the SYN is then not recorded and the connection stays on the userspace
//! relay). Other kinds (SACK blocks, TCP Fast Open, MD5, ...) are skipped by their length. EOL ends
//! the walk. Values are kept as sent (a window-scale shift above 14 included; `SteerTcp::new`
//! clamps it).

use super::{
    options::{
        MAX_OPTION_STEPS, OPT_EOL, OPT_MSS, OPT_NOP, OPT_SACK_PERMITTED, OPT_TIMESTAMPS, OPT_WSCALE, TCP_FIXED_LEN,
        TCP_MAX_LEN,
    },
    segment::{SteerError, TcpBytes},
    setup::{SYN_OPT_MSS, SYN_OPT_SACK_OK, SYN_OPT_TIMESTAMPS, SYN_OPT_WSCALE},
};

/// The options of a SYN or SYN-ACK. A field is valid only with its bit in `present`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    /// [`SYN_OPT_MSS`] | [`SYN_OPT_WSCALE`] | [`SYN_OPT_SACK_OK`] | [`SYN_OPT_TIMESTAMPS`].
    pub present: u8,
    /// MSS option value.
    pub mss: u16,
    /// Window-scale shift, as sent.
    pub wscale: u8,
    /// TSval of the timestamp option.
    pub tsval: u32,
    /// TSecr of the timestamp option (0 in a client's SYN).
    pub tsecr: u32,
}

/// The walk between two steps: where the next option starts and what was found so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptionWalk {
    /// Offset of the next option's first byte, from the TCP header start.
    pub at: usize,
    /// The data offset in bytes: options end here.
    pub header_len: usize,
    /// What the steps found so far.
    pub found: SynOptions,
}

impl SynOptionWalk {
    /// A walk over the options of a header of `header_len` bytes (20..=60; checked by `step`).
    pub const fn new(header_len: usize) -> SynOptionWalk {
        SynOptionWalk {
            at: TCP_FIXED_LEN,
            header_len,
            found: SynOptions { present: 0, mss: 0, wscale: 0, tsval: 0, tsecr: 0 },
        }
    }

    /// Reads the option at `at` and moves past it. `Ok(true)`: the walk is over (end of the header
    /// or EOL) and `found` is final; `Ok(false)`: call again.
    #[inline(always)]
    pub fn step<S: TcpBytes + ?Sized>(&mut self, segment: &S) -> Result<bool, SteerError> {
        let at = self.at;
        let header_len = self.header_len;
        if !(TCP_FIXED_LEN..=TCP_MAX_LEN).contains(&header_len) {
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
        let (bit, expected_len) = match kind {
            OPT_MSS => (SYN_OPT_MSS, 4),
            OPT_WSCALE => (SYN_OPT_WSCALE, 3),
            OPT_SACK_PERMITTED => (SYN_OPT_SACK_OK, 2),
            OPT_TIMESTAMPS => (SYN_OPT_TIMESTAMPS, 10),
            _ => (0, len),
        };
        if len != expected_len || self.found.present & bit != 0 {
            return Err(SteerError::Options);
        }
        let found = &mut self.found;
        match kind {
            OPT_MSS => {
                let mss = segment.load::<2>(at + 2).ok_or(SteerError::Truncated)?;
                found.mss = u16::from_be_bytes(mss);
            }
            OPT_WSCALE => {
                let [shift] = segment.load::<1>(at + 2).ok_or(SteerError::Truncated)?;
                found.wscale = shift;
            }
            OPT_TIMESTAMPS => {
                let tsval = segment.load::<4>(at + 2).ok_or(SteerError::Truncated)?;
                let tsecr = segment.load::<4>(at + 6).ok_or(SteerError::Truncated)?;
                found.tsval = u32::from_be_bytes(tsval);
                found.tsecr = u32::from_be_bytes(tsecr);
            }
            _ => {}
        }
        found.present |= bit;
        self.at = at + len;
        Ok(false)
    }
}

/// Reads the SYN options between [`TCP_FIXED_LEN`] and `header_len` (the data offset in bytes,
/// 20..=60) in a bounded loop of [`SynOptionWalk::step`]s.
#[inline(always)]
pub fn read_syn_options<S: TcpBytes + ?Sized>(segment: &S, header_len: usize) -> Result<SynOptions, SteerError> {
    let mut walk = SynOptionWalk::new(header_len);
    let mut step = 0;
    // Each step consumes at least one option byte, so MAX_OPTION_STEPS steps reach the end.
    while step < MAX_OPTION_STEPS {
        step += 1;
        if walk.step(segment)? {
            break;
        }
    }
    Ok(walk.found)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::{vec, vec::Vec};

    use super::*;

    /// A TCP header of 20 bytes plus `options`, padded with EOL to a word.
    fn header(options: &[u8]) -> Vec<u8> {
        let len = 20 + options.len().div_ceil(4) * 4;
        let mut seg = vec![0u8; 20];
        seg[12] = ((len / 4) as u8) << 4;
        seg.extend_from_slice(options);
        seg.resize(len, 0);
        seg
    }

    fn read(options: &[u8]) -> Result<SynOptions, SteerError> {
        let seg = header(options);
        read_syn_options(seg.as_slice(), seg.len())
    }

    /// Linux's SYN: MSS, SACK-permitted, timestamps, NOP, window scale.
    const LINUX_SYN: [u8; 20] = [2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0x30, 0x39, 0, 0, 0, 0, 1, 3, 3, 7];

    #[test]
    fn reads_every_field_of_a_linux_syn() {
        let found = read(&LINUX_SYN).expect("parses");
        assert_eq!(
            found,
            SynOptions {
                present: SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_SACK_OK | SYN_OPT_TIMESTAMPS,
                mss: 1460,
                wscale: 7,
                tsval: 12345,
                tsecr: 0,
            }
        );
    }

    #[test]
    fn reads_a_syn_ack_with_the_echo_and_odd_offsets() {
        // NOP first: every option after it starts at an odd offset.
        let options = [1, 2, 4, 0x23, 0x28, 1, 3, 3, 14, 8, 10, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0x30, 0x39];
        let found = read(&options).expect("parses");
        assert_eq!(found.present, SYN_OPT_MSS | SYN_OPT_WSCALE | SYN_OPT_TIMESTAMPS);
        assert_eq!((found.mss, found.wscale, found.tsval, found.tsecr), (9000, 14, 0xffff_fffe, 12345));
    }

    #[test]
    fn absent_options_leave_their_bits_clear() {
        assert_eq!(read(&[]).expect("no options"), SynOptions::default());
        let found = read(&[2, 4, 0x02, 0x18]).expect("MSS only");
        assert_eq!((found.present, found.mss), (SYN_OPT_MSS, 536));
        // Unknown kinds (TCP Fast Open cookie, kind 34) are skipped; EOL ends the walk.
        let found = read(&[34, 6, 1, 2, 3, 4, 4, 2, 0, 3, 3, 7]).expect("skip and EOL");
        assert_eq!(found.present, SYN_OPT_SACK_OK, "the window scale after EOL is padding");
    }

    #[test]
    fn malformed_options_are_refused() {
        for (name, options) in [
            ("length below 2", vec![30, 1, 0, 0]),
            ("runs past the header", vec![1, 1, 30, 9, 0, 0, 0, 0]),
            ("mss of 3 bytes", vec![2, 3, 5, 1]),
            ("window scale of 4 bytes", vec![3, 4, 7, 1]),
            ("sack-permitted of 3 bytes", vec![4, 3, 0, 1]),
            ("timestamps of 8 bytes", vec![8, 8, 0, 0, 0, 0, 0, 0]),
            ("two MSS options", vec![2, 4, 5, 0xb4, 2, 4, 5, 0xb4]),
            ("kind without its length byte", [vec![1; 3], vec![2]].concat()),
        ] {
            assert_eq!(read(&options), Err(SteerError::Options), "{name}");
        }
        let mut seg = header(&LINUX_SYN);
        seg[12] = 4 << 4;
        assert_eq!(read_syn_options(seg.as_slice(), 16), Err(SteerError::Header), "data offset 4");
        let seg = header(&LINUX_SYN);
        assert_eq!(read_syn_options(&seg[..30], 40), Err(SteerError::Truncated), "cut inside the options");
    }

    #[test]
    fn forty_option_bytes_are_walked_to_the_end() {
        let mut options = vec![1u8; 36];
        options.extend_from_slice(&[3, 3, 9]);
        options.push(1);
        let found = read(&options).expect("parses");
        assert_eq!((found.present, found.wscale), (SYN_OPT_WSCALE, 9), "the last option of 40 bytes is read");
    }
}
