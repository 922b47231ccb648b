//! The setup stage of a steered flow, the datapath's half (contract: `router_common::steer::setup`):
//! [`record_syn`] keeps a client SYN to one of the router's TLS ports in `STEER_SYNS`, and
//! [`record_answer`] keeps the pod's SYN-ACK or RST to leg B's SYN in `STEER_ANSWERS` and announces
//! it on `STEER_EVENTS`. Neither decides a verdict: the caller passes the SYN on and drops the
//! answer.

use aya_ebpf::{helpers::bpf_ktime_get_ns, programs::XdpContext};
use router_common::steer::{
    setup::{SteerAnswer, SteerPortKey, SteerSyn, ANSWER_RST, ANSWER_SYN_ACK},
    SynOptions,
};

use super::{
    maps::{STEER_ANSWERS, STEER_EVENTS, STEER_PORTS, STEER_SYNS},
    packet::{arrival, Arrival, PacketTcp},
};
use crate::{
    headers::{EthHdr, TcpHdr, TCP_ACK, TCP_RST, TCP_SYN},
    maps::CONNTRACK_REV,
    parse::{ptr_at, Tcp},
};

/// `bpf_map_update_elem` flag: create or replace.
const BPF_ANY: u64 = 0;

/// The Ethernet source and destination of the frame.
#[inline(always)]
fn macs(ctx: &XdpContext) -> Option<([u8; 6], [u8; 6])> {
    let eth = ptr_at::<EthHdr>(ctx, 0).ok()?;
    // SAFETY: `ptr_at` checked that the whole header lies inside the packet; alignment 1.
    Some(unsafe { ((*eth).src, (*eth).dst) })
}

/// Whether the packet is a client SYN (SYN without ACK): the only packet [`record_syn`] records.
/// Expects `tcp` from the parser.
#[inline(always)]
pub fn is_client_syn(ctx: &XdpContext, tcp: &Tcp) -> bool {
    let Ok(th) = ptr_at::<TcpHdr>(ctx, tcp.l4_off) else {
        return false;
    };
    // SAFETY: `ptr_at` checked that the whole header lies inside the packet; alignment 1.
    let flags = unsafe { (*th).off_flags[1] };
    flags & (TCP_SYN | TCP_ACK) == TCP_SYN
}

/// Records the client SYN in the packet (read after the nodePort stage, so its 5-tuple is what R
/// sees) when its destination port is in `STEER_PORTS`, with the destination C sent it to: the
/// packet's own when the nodePort stage left it alone, else the nodePort address the stage's
/// `CONNTRACK_REV` entry keeps for the replies (`nat` true). That entry is read here rather than the
/// destination being carried over the nodePort stage: 18 bytes of an IPv6 address held in
/// `xdp_front`'s frame ran the call chain past the 512-byte stack. Expects a SYN without ACK
/// ([`is_client_syn`]), `tcp` from the parser. Returns whether it was recorded; a SYN whose options
/// do not parse, or a full map, is not. Not inlined, like `super::program::stage`: its own stack
/// frame.
#[inline(never)]
pub fn record_syn(ctx: &XdpContext, tcp: &Tcp, nat: bool) -> bool {
    let Ok(arrived) = arrival(ctx, tcp) else {
        return false;
    };
    let packet = &arrived;
    let port = SteerPortKey { port: packet.key.dst_port, family: packet.key.family, _pad: 0 };
    if STEER_PORTS.get_ptr(port).is_none() {
        return false;
    }
    let (arrival_dst_addr, arrival_dst_port) = if nat {
        let Some(reply) = CONNTRACK_REV.get_ptr(packet.key.reversed()) else {
            return false;
        };
        // SAFETY: a valid pointer to a live map value of plain data.
        unsafe { ((*reply).addr, (*reply).port) }
    } else {
        (packet.key.dst_addr, packet.key.dst_port)
    };
    let Ok(options) = PacketTcp::new(ctx, tcp).syn_options(packet.header_len) else {
        return false;
    };
    let Some((peer_mac, local_mac)) = macs(ctx) else {
        return false;
    };
    let syn = SteerSyn {
        // SAFETY: bpf_ktime_get_ns has no preconditions.
        seen_ns: unsafe { bpf_ktime_get_ns() },
        isn: packet.seq,
        tsval: options.tsval,
        arrival_dst_addr,
        arrival_dst_port,
        mss: options.mss,
        wscale: options.wscale,
        options: options.present,
        family: packet.key.family,
        _pad: 0,
        if_index: ctx.ingress_ifindex() as u32,
        peer_mac,
        local_mac,
    };
    STEER_SYNS.insert(packet.key, syn, BPF_ANY).is_ok()
}

/// Records the pod's answer `packet` to a connecting leg B (its `STEER_FLOWS` entry is keyed like
/// `packet.key`, P -> Q): a SYN-ACK or a RST goes into `STEER_ANSWERS` and its key onto
/// `STEER_EVENTS`. Returns whether both happened; anything else (another packet, options that do
/// not parse, a full map or ring) records nothing or leaves the answer without its event, and the
/// router gives up on the flow after its timeout. Expects `tcp` from the parser.
/// Not inlined: its own stack frame.
#[inline(never)]
pub fn record_answer(ctx: &XdpContext, tcp: &Tcp) -> bool {
    let Ok(arrived) = arrival(ctx, tcp) else {
        return false;
    };
    let packet = &arrived;
    let options = if packet.flags & (TCP_SYN | TCP_ACK | TCP_RST) == TCP_SYN | TCP_ACK {
        match PacketTcp::new(ctx, tcp).syn_options(packet.header_len) {
            Ok(options) => options,
            Err(_) => return false,
        }
    } else {
        SynOptions::default()
    };
    let Some(macs) = macs(ctx) else {
        return false;
    };
    record_answer_of(packet, &options, macs, ctx.ingress_ifindex() as u32)
}

/// The record of [`record_answer`], from what the hook read: the packet's fixed fields, its SYN
/// options (read when it is a SYN-ACK), its (source, destination) MACs and its arrival interface.
/// Shared with `super::tc`, which records the pods' answers on the pod-facing interfaces.
#[inline(always)]
pub fn record_answer_of(packet: &Arrival, options: &SynOptions, macs: ([u8; 6], [u8; 6]), if_index: u32) -> bool {
    let flags = if packet.flags & TCP_RST != 0 {
        ANSWER_RST
    } else if packet.flags & (TCP_SYN | TCP_ACK) == TCP_SYN | TCP_ACK {
        ANSWER_SYN_ACK
    } else {
        return false;
    };
    let answer = SteerAnswer {
        // SAFETY: bpf_ktime_get_ns has no preconditions.
        seen_ns: unsafe { bpf_ktime_get_ns() },
        isn: packet.seq,
        ack: packet.ack,
        tsval: options.tsval,
        tsecr: options.tsecr,
        window: packet.window,
        mss: options.mss,
        wscale: options.wscale,
        options: options.present,
        flags,
        _pad: 0,
        if_index,
        peer_mac: macs.0,
        local_mac: macs.1,
    };
    STEER_ANSWERS.insert(packet.key, answer, BPF_ANY).is_ok() && STEER_EVENTS.output(packet.key, 0).is_ok()
}
