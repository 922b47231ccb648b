//! Key and value layouts of the nodePort maps (`NODE_ADDRS`, `NODE_PORTS`, `EP_SLOTS`) and of
//! conntrack (`CONNTRACK`, `CONNTRACK_REV`).
//!
//! Byte order, for every type here:
//! - addresses (`addr`, `src_addr`, `dst_addr`): 16 bytes in network order; an IPv4 address fills
//!   the first 4 bytes and the other 12 are zero (`family` says which);
//! - ports, counts, flags and timestamps: host byte order, so `bpftool map dump` prints them as
//!   plain numbers; the eBPF programs convert from the wire with `from_be_bytes`.
//!
//! Padding is explicit (`_pad` fields, always zero) and every size is asserted, so a key built by
//! userspace hashes to the same bucket as the one the kernel builds.

use core::net::IpAddr;

/// `family` value of an IPv4 address or flow.
pub const FAMILY_IPV4: u8 = 4;
/// `family` value of an IPv6 address or flow.
pub const FAMILY_IPV6: u8 = 6;
/// `protocol` value of TCP (IANA protocol number).
pub const PROTO_TCP: u8 = 6;

/// `CtEntry::flags`: a FIN was seen in this direction.
pub const CT_FIN: u16 = 1;
/// `CtEntry::flags`: a RST was seen in this direction.
pub const CT_RST: u16 = 2;

/// Key of `NODE_ADDRS`: one destination address that counts as this node's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeAddrKey {
    /// Network order; IPv4 in the first 4 bytes.
    pub addr: [u8; 16],
    /// [`FAMILY_IPV4`] or [`FAMILY_IPV6`].
    pub family: u8,
    pub _pad: [u8; 3],
}

/// Value of `NODE_ADDRS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeAddr {
    /// Interface the address was read from; 0 when it came from the `--xdp-node-addresses` setting.
    pub if_index: u32,
}

/// Key of `NODE_PORTS`: a nodePort of the router's Service, per address family.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodePortKey {
    /// The nodePort, host order.
    pub port: u16,
    pub family: u8,
    /// [`PROTO_TCP`].
    pub protocol: u8,
}

/// Value of `NODE_PORTS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodePort {
    /// Distinct local endpoints in this nodePort's `EP_SLOTS` table; 0 means "no local endpoint":
    /// new flows are dropped, as kube-proxy does for `externalTrafficPolicy: Local`.
    pub endpoints: u32,
    /// Reserved for the passthrough offload (always 0 today).
    pub flags: u32,
}

/// Key of `EP_SLOTS`: slot `slot` (< `RING_SIZE`) of one nodePort's Maglev table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotKey {
    pub port: u16,
    pub family: u8,
    pub protocol: u8,
    pub slot: u32,
}

/// Value of `EP_SLOTS`: the local endpoint a slot sends new flows to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub addr: [u8; 16],
    /// Host order.
    pub port: u16,
    pub family: u8,
    pub _pad: u8,
}

/// Key of `CONNTRACK` (a client -> nodePort flow, as it arrives) and of `CONNTRACK_REV` (the
/// endpoint -> client reply, as it leaves). The future passthrough flow table uses it too.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src_addr: [u8; 16],
    pub dst_addr: [u8; 16],
    /// Host order.
    pub src_port: u16,
    /// Host order.
    pub dst_port: u16,
    pub family: u8,
    pub protocol: u8,
    pub _pad: [u8; 2],
}

/// Value of both conntrack maps: the address and port the packet is rewritten to, and when the
/// flow was last seen.
///
/// In `CONNTRACK` (`xdp_front`, forward): the destination becomes `addr:port`, the endpoint. In
/// `CONNTRACK_REV` (`nat_reverse`, replies): the source becomes `addr:port`, the nodePort address
/// the client connected to.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtEntry {
    /// `bpf_ktime_get_ns()` (CLOCK_MONOTONIC) of the last packet, refreshed at most once a second.
    pub last_seen_ns: u64,
    pub addr: [u8; 16],
    /// Host order.
    pub port: u16,
    /// [`CT_FIN`] | [`CT_RST`] as seen in this map's direction.
    pub flags: u16,
    pub _pad: u32,
}

const _: () = assert!(size_of::<NodeAddrKey>() == 20);
const _: () = assert!(size_of::<NodeAddr>() == 4);
const _: () = assert!(size_of::<NodePortKey>() == 4);
const _: () = assert!(size_of::<NodePort>() == 8);
const _: () = assert!(size_of::<SlotKey>() == 8);
const _: () = assert!(size_of::<Endpoint>() == 20);
const _: () = assert!(size_of::<FlowKey>() == 40);
const _: () = assert!(size_of::<CtEntry>() == 32);
const _: () = assert!(align_of::<CtEntry>() == 8);

/// An [`IpAddr`] as a `(family, 16-byte address)` pair in the maps' layout.
pub const fn addr_bytes(ip: IpAddr) -> (u8, [u8; 16]) {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (FAMILY_IPV4, [o[0], o[1], o[2], o[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        }
        IpAddr::V6(v6) => (FAMILY_IPV6, v6.octets()),
    }
}

/// The [`IpAddr`] a `(family, addr)` pair stands for; `None` for an unknown family.
pub const fn ip_from_bytes(family: u8, addr: [u8; 16]) -> Option<IpAddr> {
    match family {
        FAMILY_IPV4 => Some(IpAddr::V4(core::net::Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]))),
        FAMILY_IPV6 => Some(IpAddr::V6(core::net::Ipv6Addr::from_octets(addr))),
        _ => None,
    }
}

impl NodeAddrKey {
    pub const fn new(ip: IpAddr) -> NodeAddrKey {
        let (family, addr) = addr_bytes(ip);
        NodeAddrKey { addr, family, _pad: [0; 3] }
    }
}

impl NodePortKey {
    pub const fn tcp(port: u16, family: u8) -> NodePortKey {
        NodePortKey { port, family, protocol: PROTO_TCP }
    }

    pub const fn slot(&self, slot: u32) -> SlotKey {
        SlotKey { port: self.port, family: self.family, protocol: self.protocol, slot }
    }
}

impl SlotKey {
    pub const fn node_port(&self) -> NodePortKey {
        NodePortKey { port: self.port, family: self.family, protocol: self.protocol }
    }
}

impl Endpoint {
    pub const fn new(ip: IpAddr, port: u16) -> Endpoint {
        let (family, addr) = addr_bytes(ip);
        Endpoint { addr, port, family, _pad: 0 }
    }
}

impl FlowKey {
    /// A TCP flow between two addresses of the same family (the family of `src`).
    pub const fn tcp(src: IpAddr, src_port: u16, dst: IpAddr, dst_port: u16) -> FlowKey {
        let (family, src_addr) = addr_bytes(src);
        let (_, dst_addr) = addr_bytes(dst);
        FlowKey { src_addr, dst_addr, src_port, dst_port, family, protocol: PROTO_TCP, _pad: [0; 2] }
    }

    /// The same flow seen from the other end: source and destination swapped.
    pub const fn reversed(&self) -> FlowKey {
        FlowKey {
            src_addr: self.dst_addr,
            dst_addr: self.src_addr,
            src_port: self.dst_port,
            dst_port: self.src_port,
            family: self.family,
            protocol: self.protocol,
            _pad: [0; 2],
        }
    }
}

// SAFETY (all impls below): each type is `#[repr(C)]`, made only of integers and byte arrays with
// explicit padding fields (sizes asserted above, so no implicit padding), and every bit pattern is
// a valid value.
#[cfg(feature = "user")]
mod pod {
    use super::*;

    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for NodeAddrKey {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for NodeAddr {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for NodePortKey {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for NodePort {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for SlotKey {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for Endpoint {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for FlowKey {}
    // SAFETY: see the module comment above.
    unsafe impl aya::Pod for CtEntry {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn addresses_round_trip_through_the_map_layout() {
        let v4 = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3));
        let (family, bytes) = addr_bytes(v4);
        assert_eq!(family, FAMILY_IPV4);
        assert_eq!(bytes[..4], [10, 1, 2, 3]);
        assert!(bytes[4..].iter().all(|&b| b == 0));
        assert_eq!(ip_from_bytes(family, bytes), Some(v4));
        let v6 = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2));
        assert_eq!(ip_from_bytes(FAMILY_IPV6, addr_bytes(v6).1), Some(v6));
        assert_eq!(ip_from_bytes(5, [0; 16]), None);
    }

    #[test]
    fn reversed_swaps_ends_and_keeps_the_rest() {
        let key =
            FlowKey::tcp(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 80);
        let back = key.reversed();
        assert_eq!((back.src_port, back.dst_port), (80, 40000));
        assert_eq!(back.src_addr, key.dst_addr);
        assert_eq!(back.reversed(), key);
    }
}
