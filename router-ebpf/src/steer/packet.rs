//! The packet side of the steering stages: the arrival 5-tuple of an IPv4 or IPv6 TCP packet with the
//! header fields the stages decide on ([`Arrival`]), and [`PacketTcp`], the bounds-checked byte
//! access `router_common::steer::translate` and the SYN option reader work through, whose option
//! walks run in `bpf_loop`.

use core::ffi::c_void;

use aya_ebpf::{
    bindings::xdp_md,
    helpers::{bpf_loop, bpf_xdp_load_bytes, bpf_xdp_store_bytes},
    programs::XdpContext,
};
use router_common::{
    nat::{FlowKey, FAMILY_IPV6, PROTO_TCP},
    steer::{options::MAX_OPTION_STEPS, OptionLayout, OptionWalk, SteerError, SynOptionWalk, SynOptions, TcpBytes},
};

use crate::{
    headers::{Ipv4Hdr, Ipv6Hdr, TcpHdr, IPV6_SRC_OFF},
    parse::{ptr_at, Tcp, Unparsed},
};

/// What the steering stages read from an IPv4 or IPv6 TCP packet's fixed headers.
#[derive(Clone, Copy)]
pub struct Arrival {
    /// The 5-tuple the packet arrived with.
    pub key: FlowKey,
    /// The TCP flags byte.
    pub flags: u8,
    /// The TCP header length in bytes (data offset x 4; the parser checked >= 20).
    pub header_len: usize,
    pub seq: u32,
    pub ack: u32,
    pub window: u16,
    /// The TCP checksum field as it arrived.
    pub check: u16,
    /// The TCP segment's length by the IP header (IPv4: total length less its header length;
    /// IPv6: the payload length).
    pub tcp_len: u16,
}

/// The arrival 5-tuple and fixed TCP fields of an IPv4 or IPv6 packet. Expects `tcp` from the
/// parser (for IPv6 the TCP header right after the fixed header: no extension header).
#[inline(always)]
pub fn arrival(ctx: &XdpContext, tcp: &Tcp) -> Result<Arrival, Unparsed> {
    let th = ptr_at::<TcpHdr>(ctx, tcp.l4_off)?;
    let mut key = FlowKey { family: tcp.family, protocol: PROTO_TCP, ..FlowKey::default() };
    let tcp_len = if tcp.family == FAMILY_IPV6 {
        let ip = ptr_at::<Ipv6Hdr>(ctx, tcp.l3_off)?;
        // The addresses go straight from the packet into the key through the helper: copied by
        // hand, 32 single-byte moves spilled enough registers to run `record_answer` past the
        // 512-byte stack (and as a BPF function of its own, LLVM passed it 32-bit packet pointers
        // the verifier refuses).
        let at = (tcp.l3_off + IPV6_SRC_OFF) as u32;
        // SAFETY: `ctx.ctx` is the program's context; each destination is a live 16-byte array. The
        // helper fails (non-zero) instead of reading past the packet.
        let failed = unsafe {
            bpf_xdp_load_bytes(ctx.ctx, at, key.src_addr.as_mut_ptr().cast(), 16) != 0
                || bpf_xdp_load_bytes(ctx.ctx, at + 16, key.dst_addr.as_mut_ptr().cast(), 16) != 0
        };
        if failed {
            return Err(Unparsed);
        }
        // SAFETY: `ptr_at` checked that the whole header lies inside the packet; alignment 1.
        // No extension header (the parser's condition): the payload is the TCP segment.
        u16::from_be_bytes(unsafe { (*ip).payload_len })
    } else {
        let ip = ptr_at::<Ipv4Hdr>(ctx, tcp.l3_off)?;
        // SAFETY: as above.
        let (src, dst, total_len, ihl) =
            unsafe { ((*ip).src, (*ip).dst, u16::from_be_bytes((*ip).total_len), (*ip).version_ihl & 0x0f) };
        key.src_addr[..4].copy_from_slice(&src);
        key.dst_addr[..4].copy_from_slice(&dst);
        total_len.wrapping_sub(u16::from(ihl) * 4)
    };
    // SAFETY: `ptr_at` checked that the whole TCP header lies inside the packet; alignment 1.
    let th = unsafe { &*th };
    key.src_port = u16::from_be_bytes(th.src_port);
    key.dst_port = u16::from_be_bytes(th.dst_port);
    Ok(Arrival {
        key,
        flags: th.off_flags[1],
        header_len: usize::from(th.off_flags[0] >> 4) * 4,
        seq: u32::from_be_bytes(th.seq),
        ack: u32::from_be_bytes(th.ack),
        window: u16::from_be_bytes(th.window),
        check: u16::from_be_bytes(th.check),
        tcp_len,
    })
}

/// The TCP header (and what follows) of the packet in an XDP context, offsets from the TCP header
/// start, read and written with `bpf_xdp_load_bytes`/`bpf_xdp_store_bytes` (kernel >= 5.18).
///
/// Why helpers and not `crate::parse::ptr_at`: the option offsets are variable, and LLVM rewrites
/// bounds checks on variable packet offsets into forms the verifier cannot follow: it deleted
/// checks it proved redundant from an earlier one, turned `start + 1 > end` into `start >= end`
/// (which gives no readable range), and recomputed a checked pointer from another base inside the
/// SACK loop. The helpers check the bounds in the kernel, so the verifier only sees constant
/// lengths into stack buffers. The price is a helper call per field (about a dozen per packet).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PacketTcp {
    /// The program's context (`xdp_md`), as `XdpContext` holds it.
    ctx: *mut xdp_md,
    /// Offset of the TCP header from `data` (at most 74: Ethernet and the longest IPv4 header; 54
    /// for IPv6).
    l4_off: usize,
}

impl PacketTcp {
    /// Expects `tcp` from the parser.
    #[inline(always)]
    pub fn new(ctx: &XdpContext, tcp: &Tcp) -> PacketTcp {
        PacketTcp { ctx: ctx.ctx, l4_off: tcp.l4_off }
    }

    /// The packet offset of `offset` bytes into the TCP header. Not clamped: the helpers check
    /// every access against the packet at run time, and a clamp here is a branch on values that
    /// come back from `bpf_loop`, which made the verifier tell option layouts apart and walk
    /// 133,000 instructions instead of 28,000.
    #[inline(always)]
    fn packet_offset(&self, offset: usize) -> u32 {
        (self.l4_off + offset) as u32
    }
}

impl TcpBytes for PacketTcp {
    #[inline(always)]
    fn load<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let at = self.packet_offset(offset);
        let mut bytes = [0u8; N];
        // SAFETY: `self.ctx` is the program's context; `bytes` is a live N-byte stack buffer. The
        // helper fails (non-zero) instead of reading past the packet.
        let failed = unsafe { bpf_xdp_load_bytes(self.ctx, at, bytes.as_mut_ptr().cast(), N as u32) };
        (failed == 0).then_some(bytes)
    }

    #[inline(always)]
    fn store<const N: usize>(&mut self, offset: usize, bytes: [u8; N]) -> Option<()> {
        let at = self.packet_offset(offset);
        let mut bytes = bytes;
        // SAFETY: as for `load`; the helper writes nothing unless all N bytes are in the packet.
        let failed = unsafe { bpf_xdp_store_bytes(self.ctx, at, bytes.as_mut_ptr().cast(), N as u32) };
        (failed == 0).then_some(())
    }

    /// The option walk as `bpf_loop` iterations of [`option_step`] (kernel >= 5.17): the verifier
    /// checks the callback on its own, where an inline loop of 40 steps had it explore every path
    /// through them and give up at a million instructions. What comes back is not clamped (see
    /// `packet_offset`).
    #[inline(always)]
    fn walk_options(&self, header_len: usize) -> Result<OptionLayout, SteerError> {
        walk_options_in_loop(*self, header_len)
    }
}

/// The option walk of `packet` as `bpf_loop` iterations of [`option_step`]: for any byte access
/// (the XDP packet here, the skb in `super::tc`).
#[inline(always)]
pub fn walk_options_in_loop<P: TcpBytes>(packet: P, header_len: usize) -> Result<OptionLayout, SteerError> {
    let mut state = OptionLoop { packet, walk: OptionWalk::new(header_len), error: None };
    // SAFETY: `option_step::<P>` has the callback signature `bpf_loop` expects, and `state` lives on
    // this stack frame for the whole call.
    let ran = unsafe {
        bpf_loop(MAX_OPTION_STEPS as u32, option_step::<P> as *mut c_void, (&raw mut state).cast::<c_void>(), 0)
    };
    if ran < 0 {
        // Only for flags or a loop count the kernel refuses; neither is the case here.
        return Err(SteerError::Options);
    }
    if let Some(error) = state.error {
        return Err(error);
    }
    Ok(state.walk.layout)
}

impl PacketTcp {
    /// The options of a SYN or SYN-ACK whose TCP header is `header_len` bytes (see
    /// [`syn_options_in_loop`]).
    #[inline(always)]
    pub fn syn_options(&self, header_len: usize) -> Result<SynOptions, SteerError> {
        syn_options_in_loop(*self, header_len)
    }
}

/// The options of a SYN or SYN-ACK whose TCP header is `header_len` bytes, read as `bpf_loop`
/// iterations of [`syn_option_step`] (same reasons as `walk_options`), for any byte access (the XDP
/// packet, the skb in `super::tc`).
#[inline(always)]
pub fn syn_options_in_loop<P: TcpBytes>(packet: P, header_len: usize) -> Result<SynOptions, SteerError> {
    let mut state = SynOptionLoop { packet, walk: SynOptionWalk::new(header_len), error: None };
    // SAFETY: `syn_option_step::<P>` has the callback signature `bpf_loop` expects, and `state` lives
    // on this stack frame for the whole call.
    let ran = unsafe {
        bpf_loop(MAX_OPTION_STEPS as u32, syn_option_step::<P> as *mut c_void, (&raw mut state).cast::<c_void>(), 0)
    };
    if ran < 0 {
        return Err(SteerError::Options);
    }
    if let Some(error) = state.error {
        return Err(error);
    }
    Ok(state.walk.found)
}

/// What one `bpf_loop` iteration of the SYN option walk sees.
#[repr(C)]
struct SynOptionLoop<P> {
    packet: P,
    walk: SynOptionWalk,
    error: Option<SteerError>,
}

/// One SYN option-walk step; `bpf_loop` stops at a non-zero return (walk over, or failed).
#[inline(never)]
extern "C" fn syn_option_step<P: TcpBytes>(_index: u32, state: *mut c_void) -> i64 {
    // SAFETY: `bpf_loop` passes back the pointer `syn_options_in_loop` gave it: a live
    // `SynOptionLoop<P>` on that frame's stack, not otherwise accessed during the call.
    let state = unsafe { &mut *state.cast::<SynOptionLoop<P>>() };
    match state.walk.step(&state.packet) {
        Ok(false) => 0,
        Ok(true) => 1,
        Err(error) => {
            state.error = Some(error);
            1
        }
    }
}

/// What one `bpf_loop` iteration of the option walk sees.
#[repr(C)]
struct OptionLoop<P> {
    packet: P,
    walk: OptionWalk,
    error: Option<SteerError>,
}

/// One option-walk step; `bpf_loop` stops at a non-zero return (walk over, or failed).
#[inline(never)]
extern "C" fn option_step<P: TcpBytes>(_index: u32, state: *mut c_void) -> i64 {
    // SAFETY: `bpf_loop` passes back the pointer `walk_options_in_loop` gave it: a live
    // `OptionLoop<P>` on that frame's stack, not otherwise accessed during the call.
    let state = unsafe { &mut *state.cast::<OptionLoop<P>>() };
    match state.walk.step(&state.packet) {
        Ok(false) => 0,
        Ok(true) => 1,
        Err(error) => {
            state.error = Some(error);
            1
        }
    }
}
