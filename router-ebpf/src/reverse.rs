//! `nat_reverse`: the TC egress half of the nodePort path. A reply leaving the node whose flow
//! (endpoint -> client) is in `CONNTRACK_REV` gets its source address and port set back to the
//! nodePort address the client connected to, so the client sees one consistent peer.
//!
//! - Verdict policy: `TC_ACT_OK` for every packet, rewritten or not; nothing is dropped.
//! - Bounds and access: headers are read with `bpf_skb_load_bytes` (`TcContext::load`), which
//!   works on non-linear skbs too; writes go through `bpf_skb_store_bytes` and the checksum
//!   helpers `bpf_l3_csum_replace`/`bpf_l4_csum_replace` (with `BPF_F_PSEUDO_HDR` for
//!   addresses), which also handle `CHECKSUM_PARTIAL` skbs from the local TCP stack.
//! - Maps: `CONNTRACK_REV` (lookup; timestamp and FIN/RST flags refreshed as `conntrack.rs`
//!   says), `XDP_STATS` index 14.
//! - Kernel: TC (tcx) attach needs >= 6.6 with aya 0.14 (netlink clsact before that).

use aya_ebpf::{
    bindings::{BPF_F_PSEUDO_HDR, TC_ACT_OK},
    helpers::bpf_ktime_get_ns,
    programs::TcContext,
};
use router_common::{
    nat::{CtEntry, FlowKey, FAMILY_IPV4, FAMILY_IPV6, PROTO_TCP},
    stats::STATS_REV_NAT,
};

use crate::{
    conntrack::{refresh, seen_flags},
    headers::{
        EthHdr, Ipv4Hdr, Ipv6Hdr, ETH_P_IP, ETH_P_IPV6, IPPROTO_TCP, IPV4_CHECK_OFF, IPV4_SRC_OFF, IPV6_SRC_OFF,
        TCP_CHECK_OFF,
    },
    maps::CONNTRACK_REV,
    stats::count,
};

const ETH_LEN: usize = size_of::<EthHdr>();
const IPV4_MF_OFFSET: u16 = 0x3fff;

/// A helper call failed (packet too short, or a store refused).
pub struct Skip;

/// Where the TCP header of an egress packet is and what its flow is.
struct Reply {
    key: FlowKey,
    l3_off: usize,
    l4_off: usize,
    flags: u8,
}

/// Returns the TC verdict (always `TC_ACT_OK`). Expects nothing validated.
#[inline(always)]
pub fn reverse(ctx: &TcContext) -> i32 {
    if let Ok(reply) = read_reply(ctx) {
        if let Some(entry) = CONNTRACK_REV.get_ptr_mut(reply.key) {
            // SAFETY: a valid pointer to this flow's entry; entries are plain data.
            let current: CtEntry = unsafe { *entry };
            if rewrite_source(ctx, &reply, &current).is_ok() {
                count(STATS_REV_NAT, u64::from(ctx.len()));
            }
            // SAFETY: bpf_ktime_get_ns has no preconditions.
            let now = unsafe { bpf_ktime_get_ns() };
            // SAFETY: as above; a racing writer writes the same kind of values.
            unsafe { refresh(entry, &current, now, seen_flags(reply.flags)) };
        }
    }
    TC_ACT_OK as i32
}

#[inline(always)]
fn read_reply(ctx: &TcContext) -> Result<Reply, Skip> {
    let ether_type: [u8; 2] = ctx.load(12).map_err(|_| Skip)?;
    let mut key = FlowKey { protocol: PROTO_TCP, ..FlowKey::default() };
    let l3_off = ETH_LEN;
    let l4_off = match u16::from_be_bytes(ether_type) {
        ETH_P_IP => {
            let ip: Ipv4Hdr = ctx.load(l3_off).map_err(|_| Skip)?;
            let ihl = usize::from(ip.version_ihl & 0x0f);
            if ip.version_ihl >> 4 != 4
                || ihl < 5
                || ip.protocol != IPPROTO_TCP
                || u16::from_be_bytes(ip.frag_off) & IPV4_MF_OFFSET != 0
            {
                return Err(Skip);
            }
            key.family = FAMILY_IPV4;
            key.src_addr[..4].copy_from_slice(&ip.src);
            key.dst_addr[..4].copy_from_slice(&ip.dst);
            l3_off + ihl * 4
        }
        ETH_P_IPV6 => {
            let ip: Ipv6Hdr = ctx.load(l3_off).map_err(|_| Skip)?;
            if ip.version_tc_flow[0] >> 4 != 6 || ip.next_header != IPPROTO_TCP {
                return Err(Skip);
            }
            key.family = FAMILY_IPV6;
            key.src_addr = ip.src;
            key.dst_addr = ip.dst;
            l3_off + size_of::<Ipv6Hdr>()
        }
        _ => return Err(Skip),
    };
    // Ports (4 bytes) and the flags byte (offset 13).
    let ports: [u8; 4] = ctx.load(l4_off).map_err(|_| Skip)?;
    let flags: u8 = ctx.load(l4_off + 13).map_err(|_| Skip)?;
    key.src_port = u16::from_be_bytes([ports[0], ports[1]]);
    key.dst_port = u16::from_be_bytes([ports[2], ports[3]]);
    Ok(Reply { key, l3_off, l4_off, flags })
}

/// Sets the source address (when it differs) and port to `entry`'s, with checksum fix-ups.
#[inline(always)]
fn rewrite_source(ctx: &TcContext, reply: &Reply, entry: &CtEntry) -> Result<(), Skip> {
    let tcp_check = reply.l4_off + TCP_CHECK_OFF;
    let old = &reply.key.src_addr;
    let new = &entry.addr;
    if reply.key.family == FAMILY_IPV4 {
        let old4 = u32::from_ne_bytes([old[0], old[1], old[2], old[3]]);
        let new4 = u32::from_ne_bytes([new[0], new[1], new[2], new[3]]);
        if old4 != new4 {
            ctx.l3_csum_replace(reply.l3_off + IPV4_CHECK_OFF, u64::from(old4), u64::from(new4), 4)
                .map_err(|_| Skip)?;
            ctx.l4_csum_replace(tcp_check, u64::from(old4), u64::from(new4), u64::from(BPF_F_PSEUDO_HDR) | 4)
                .map_err(|_| Skip)?;
            ctx.store(reply.l3_off + IPV4_SRC_OFF, &new4, 0).map_err(|_| Skip)?;
        }
    } else if old != new {
        let mut i = 0;
        while i < 16 {
            let from = u32::from_ne_bytes([old[i], old[i + 1], old[i + 2], old[i + 3]]);
            let to = u32::from_ne_bytes([new[i], new[i + 1], new[i + 2], new[i + 3]]);
            ctx.l4_csum_replace(tcp_check, u64::from(from), u64::from(to), u64::from(BPF_F_PSEUDO_HDR) | 4)
                .map_err(|_| Skip)?;
            i += 4;
        }
        ctx.store(reply.l3_off + IPV6_SRC_OFF, new, 0).map_err(|_| Skip)?;
    }
    if reply.key.src_port != entry.port {
        let from = u16::from_ne_bytes(reply.key.src_port.to_be_bytes());
        let to = u16::from_ne_bytes(entry.port.to_be_bytes());
        ctx.l4_csum_replace(tcp_check, u64::from(from), u64::from(to), 2).map_err(|_| Skip)?;
        ctx.store(reply.l4_off, &to, 0).map_err(|_| Skip)?;
    }
    Ok(())
}
