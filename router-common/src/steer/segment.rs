//! The whole TCP header rewrite of a steered packet, over any byte access ([`TcpBytes`]): a slice
//! on the host, the packet itself in the eBPF program. One implementation, so the host tests and the
//! `BPF_PROG_TEST_RUN` tests prove the same code.
//!
//! [`translate`] applies the [`super::rules`] of the entry's direction to ports, seq/ack, window,
//! TSval/TSecr and SACK edges, and keeps the TCP checksum by RFC 1624 updates of every changed word,
//! including the pseudo-header addresses. The IP header and the Ethernet addresses are the
//! caller's (they are outside the TCP header).

use core::fmt;

use super::{
    checksum_change::ChecksumChange,
    field_checksum::{replace16_at, replace32_at},
    flow::{SteerFlow, STEER_TO_CLIENT, STEER_TO_POD},
    options::{walk, OptionLayout, MAX_SACK_BLOCKS, TCP_FIXED_LEN, TCP_MAX_LEN},
    rules::{ack_to_pod, sack_edge_to_pod, seq_to_client, tsecr_to_pod, tsval_to_client, window_to_client},
};
use crate::{
    checksum::replace_bytes,
    nat::{FlowKey, FAMILY_IPV4, FAMILY_IPV6},
};

/// Byte offsets of the fixed TCP header fields (`CHECK` also for the TC program's checksum helpers).
const SRC_PORT: usize = 0;
const DST_PORT: usize = 2;
const SEQ: usize = 4;
const ACK: usize = 8;
const DATA_OFFSET: usize = 12;
const FLAGS: usize = 13;
const WINDOW: usize = 14;
pub const CHECK: usize = 16;
/// SYN bit of the flags byte: a SYN's window is never scaled (RFC 7323 section 2.2).
const TCP_SYN: u8 = 0x02;

/// Byte access to one TCP segment, offsets counted from the TCP header start.
pub trait TcpBytes {
    /// The `N` bytes at `offset`, or `None` when they are not all inside the segment.
    fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]>;
    /// Writes `bytes` at `offset`; `None` (and nothing written) when they do not all fit.
    fn store<const N: usize>(&mut self, offset: usize, bytes: [u8; N]) -> Option<()>;

    /// Where the timestamp and SACK options of a header of `header_len` bytes are: [`walk`] by
    /// default. The eBPF program drives the same [`OptionWalk`](super::options::OptionWalk) steps
    /// from `bpf_loop` instead, to keep the verifier's work small.
    fn walk_options(&self, header_len: usize) -> Result<OptionLayout, SteerError> {
        walk(self, header_len)
    }

    /// Writes the translated segment's checksum field. By default the complete checksum's new value
    /// (`change.full`); the TC program hands both differences to the kernel instead, which knows
    /// whether the skb's checksum is partial (see [`super::checksum_change`]).
    fn store_checksum(&mut self, change: ChecksumChange) -> Option<()> {
        self.store(CHECK, change.full.to_be_bytes())
    }
}

impl TcpBytes for [u8] {
    fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        self.get(offset..offset.checked_add(N)?)?.try_into().ok()
    }

    fn store<const N: usize>(&mut self, offset: usize, bytes: [u8; N]) -> Option<()> {
        self.get_mut(offset..offset.checked_add(N)?)?.copy_from_slice(&bytes);
        Some(())
    }
}

/// Why a steered segment was not translated. Nothing was written when this is returned (every
/// check runs before the first store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteerError {
    /// The segment ends inside its header or options.
    Truncated,
    /// The data offset is below 5 or above 15 words.
    Header,
    /// The options do not parse (see [`super::options`]).
    Options,
    /// The entry's family differs from the packet's, or is neither IPv4 nor IPv6.
    Family,
    /// The entry's direction is neither [`STEER_TO_POD`] nor [`STEER_TO_CLIENT`].
    Direction,
}

impl fmt::Display for SteerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SteerError::Truncated => "TCP segment ends inside its header",
            SteerError::Header => "TCP data offset outside 5..=15 words",
            SteerError::Options => "malformed TCP options",
            SteerError::Family => "steering entry and packet disagree on the address family",
            SteerError::Direction => "steering entry has no valid direction",
        })
    }
}

impl core::error::Error for SteerError {}

/// What [`translate`] saw, for the caller's bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translated {
    /// The TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ...).
    pub flags: u8,
    /// Where the timestamp and SACK options were.
    pub layout: OptionLayout,
    /// The checksum field before and after.
    pub checksum: ChecksumChange,
}

/// Rewrites the TCP header of a packet that arrived as `from` (its 5-tuple, read from the packet)
/// and belongs to `flow`'s direction: ports become `flow`'s, sequence fields, window, timestamps
/// and SACK edges move by the entry's offsets, and the checksum follows every changed word,
/// including the pseudo-header's addresses (`from`'s -> `flow`'s).
///
/// Expects `segment` to start at the TCP header; checks everything else itself. On error nothing
/// was written.
#[inline(always)]
pub fn translate<S: TcpBytes + ?Sized>(
    segment: &mut S,
    from: &FlowKey,
    flow: &SteerFlow,
) -> Result<Translated, SteerError> {
    let head = segment.load::<TCP_FIXED_LEN>(0).ok_or(SteerError::Truncated)?;
    let header_len = usize::from(head[DATA_OFFSET] >> 4) * 4;
    if !(TCP_FIXED_LEN..=TCP_MAX_LEN).contains(&header_len) {
        return Err(SteerError::Header);
    }
    if flow.family != from.family {
        return Err(SteerError::Family);
    }
    if flow.direction != STEER_TO_POD && flow.direction != STEER_TO_CLIENT {
        return Err(SteerError::Direction);
    }
    // The whole header must be present, so that no store below can fail half way.
    segment.load::<1>(header_len - 1).ok_or(SteerError::Truncated)?;
    let layout = segment.walk_options(header_len)?;
    let flags = head[FLAGS];
    let word = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let half = |at: usize| u16::from_be_bytes([head[at], head[at + 1]]);

    let old_check = half(CHECK);
    let pseudo_check = pseudo_header_update(old_check, from, flow)?;
    let mut check = pseudo_check;
    check = replace16_at(check, SRC_PORT, half(SRC_PORT), flow.src_port);
    check = replace16_at(check, DST_PORT, half(DST_PORT), flow.dst_port);
    store(segment, SRC_PORT, flow.src_port.to_be_bytes())?;
    store(segment, DST_PORT, flow.dst_port.to_be_bytes())?;

    let tcp = &flow.tcp;
    if flow.direction == STEER_TO_POD {
        let ack = word(ACK);
        let new_ack = ack_to_pod(ack, tcp.seq_offset);
        check = replace32_at(check, ACK, ack, new_ack);
        store(segment, ACK, new_ack.to_be_bytes())?;
        if let Some(at) = layout.tsecr() {
            check = rewrite_word(segment, at, check, |tsecr| {
                tsecr_to_pod(tsecr, tcp.ts_offset, tcp.ts_pod_first, tcp.ts_router_last)
            })?;
        }
        let mut edge = 0;
        while edge < MAX_SACK_BLOCKS * 2 {
            let Some(at) = layout.sack_edge(edge) else { break };
            check = rewrite_word(segment, at, check, |edge| sack_edge_to_pod(edge, tcp.seq_offset))?;
            edge += 1;
        }
    } else {
        let seq = word(SEQ);
        let new_seq = seq_to_client(seq, tcp.seq_offset);
        check = replace32_at(check, SEQ, seq, new_seq);
        store(segment, SEQ, new_seq.to_be_bytes())?;
        if flags & TCP_SYN == 0 {
            let window = half(WINDOW);
            let new_window = window_to_client(window, tcp.wscale_pod, tcp.wscale_router);
            check = replace16_at(check, WINDOW, window, new_window);
            store(segment, WINDOW, new_window.to_be_bytes())?;
        }
        if let Some(at) = layout.tsval() {
            check = rewrite_word(segment, at, check, |tsval| tsval_to_client(tsval, tcp.ts_offset))?;
        }
    }
    let change = ChecksumChange { old: old_check, pseudo: pseudo_check, full: check };
    segment.store_checksum(change).ok_or(SteerError::Truncated)?;
    Ok(Translated { flags, layout, checksum: change })
}

/// The checksum after the pseudo-header's addresses change from `from`'s to `flow`'s.
///
/// Not inlined: in eBPF it is a BPF function of its own. Inlined, the IPv6 arm (eight words per
/// address) added enough register spills to run the translation frames of `xdp_front` and
/// `steer_ingress` past the 512-byte stack; as a call it costs one small frame.
#[inline(never)]
fn pseudo_header_update(check: u16, from: &FlowKey, flow: &SteerFlow) -> Result<u16, SteerError> {
    match from.family {
        FAMILY_IPV4 => {
            let v4 = |a: &[u8; 16]| [a[0], a[1], a[2], a[3]];
            let check = replace_bytes(check, &v4(&from.src_addr), &v4(&flow.src_addr));
            Ok(replace_bytes(check, &v4(&from.dst_addr), &v4(&flow.dst_addr)))
        }
        FAMILY_IPV6 => {
            let check = replace_bytes(check, &from.src_addr, &flow.src_addr);
            Ok(replace_bytes(check, &from.dst_addr, &flow.dst_addr))
        }
        _ => Err(SteerError::Family),
    }
}

/// Replaces the 32-bit word at `at` by `rule(word)` and returns the updated checksum.
#[inline(always)]
fn rewrite_word<S: TcpBytes + ?Sized>(
    segment: &mut S,
    at: usize,
    check: u16,
    rule: impl FnOnce(u32) -> u32,
) -> Result<u16, SteerError> {
    let old = u32::from_be_bytes(segment.load::<4>(at).ok_or(SteerError::Truncated)?);
    let new = rule(old);
    store(segment, at, new.to_be_bytes())?;
    Ok(replace32_at(check, at, old, new))
}

#[inline(always)]
fn store<S: TcpBytes + ?Sized, const N: usize>(segment: &mut S, at: usize, bytes: [u8; N]) -> Result<(), SteerError> {
    segment.store(at, bytes).ok_or(SteerError::Truncated)
}
