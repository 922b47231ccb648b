//! Debug records of packets the programs did not handle the common way, through aya-log (its
//! `AYA_LOGS` ring buffer; the userspace side forwards them to tracing). Off unless asked: the
//! loader sets aya-log's `AYA_LOG_LEVEL` global (in `.rodata`, so the verifier prunes the disabled
//! records) to 0 by default and to debug with `--xdp-debug-log`.
//!
//! One BPF function of its own (`#[inline(never)]`), called near the counter it explains: its
//! record lives in its own frame, not in the `xdp_front` -> `stage` chain, which is near the
//! 512-byte stack limit (so `steer_ingress` calls it after its translation returned). It takes
//! only the kind: with a packet length as a second argument, or with a call placed after
//! `nat::forward` in `xdp_front`, the compiler kept a value in an argument register across a BPF
//! call, which the verifier refuses. The counters stay the source of figures.

use aya_log_ebpf::debug;

/// What was unusual about a packet; the argument of [`unusual`].
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Unusual {
    /// `xdp_front`: headers cut short or malformed, passed up.
    Unparsed = 1,
    /// `xdp_front`: an IPv4 fragment, passed up (no TCP stage reads it).
    Fragment,
    /// `xdp_front`: a steered flow's packet dropped (a SYN, or options the translation refused).
    SteerDrop,
    /// `xdp_front`: a steered packet whose checksum may be partial, handed to `steer_ingress`.
    HandoffPartial,
    /// `xdp_front`: a steered packet longer than a standard frame, handed to `steer_ingress`.
    HandoffLarge,
    /// `xdp_front`: nodePort traffic without a local endpoint, dropped.
    NoEndpoint,
    /// `xdp_front`: nodePort traffic whose endpoint slot is missing, dropped.
    NoSlot,
    /// `xdp_front`: nodePort traffic while conntrack is full, dropped.
    ConntrackFull,
    /// `steer_ingress`: a steered flow's packet dropped (a SYN, or a translation that failed).
    TcSteerDrop,
}

/// Writes the debug record of `what` (when debug records are on).
#[inline(never)]
pub fn unusual(what: Unusual) {
    // aya-log's macros take a context they do not read (records go to a ring buffer).
    let ctx = &();
    match what {
        Unusual::Unparsed => debug!(ctx, "xdp_front: a packet unparsed (cut short or malformed) passed"),
        Unusual::Fragment => debug!(ctx, "xdp_front: an IP fragment passed"),
        Unusual::SteerDrop => debug!(ctx, "xdp_front: a packet of a steered flow dropped (SYN or bad options)"),
        Unusual::HandoffPartial => debug!(ctx, "xdp_front: a packet steered with a partial checksum, to TC"),
        Unusual::HandoffLarge => debug!(ctx, "xdp_front: a packet steered, longer than 1514, to TC"),
        Unusual::NoEndpoint => debug!(ctx, "xdp_front: a packet to a nodePort without local endpoint, dropped"),
        Unusual::NoSlot => {
            debug!(ctx, "xdp_front: a packet to a nodePort whose endpoint slot is missing, dropped")
        }
        Unusual::ConntrackFull => debug!(ctx, "xdp_front: a packet to a nodePort, conntrack full, dropped"),
        Unusual::TcSteerDrop => {
            debug!(ctx, "steer_ingress: a packet of a steered flow dropped (SYN or failed rewrite)")
        }
    }
}
