//! The kernel's own answer to "how does this node reach that pod": an rtnetlink `RTM_GETROUTE` for one
//! IPv4 or IPv6 address, as `ip route get` asks it. The reply names the interface the node sends on
//! (`RTA_OIF`), which is where the pod's packets come back in, and the source address the node would use
//! (`RTA_PREFSRC`). Passthrough steering uses both: the source is leg B's address, and the interface is
//! where `steer_ingress` must run before leg B's SYN leaves ([`super::pod_facing`]).

use std::{
    io,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
};

use super::netlink::{attributes, read_i32, read_u16, read_u32, RouteSocket, NLMSG_HDR_LEN, RTA_HDR_LEN};

/// `struct rtmsg`: family, dst_len, src_len, tos, table, protocol, scope, type (one byte each), flags.
const RTMSG_LEN: usize = 12;
/// linux/rtnetlink.h attribute types.
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_PREFSRC: u16 = 7;

/// How the node reaches one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteTo {
    /// The source address the node's packets to it carry (of the asked address's family).
    pub source: IpAddr,
    /// The interface they leave by (the pod's answers arrive there).
    pub if_index: u32,
}

/// Asks the kernel's FIB, in the caller's network namespace, how it reaches `dst`.
pub fn route_to(dst: IpAddr) -> io::Result<RouteTo> {
    let socket = RouteSocket::open()?;
    socket.send(&getroute_request(dst))?;
    let mut buf = vec![0u8; 8 * 1024];
    let len = socket.recv(&mut buf)?;
    parse_getroute_reply(&buf[..len])
}

/// An `RTM_GETROUTE` request for the single address `dst`.
fn getroute_request(dst: IpAddr) -> Vec<u8> {
    let (family, prefix_len, addr) = match dst.to_canonical() {
        IpAddr::V4(v4) => (libc::AF_INET, 32, v4.octets().to_vec()),
        IpAddr::V6(v6) => (libc::AF_INET6, 128, v6.octets().to_vec()),
    };
    let len = NLMSG_HDR_LEN + RTMSG_LEN + RTA_HDR_LEN + addr.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_GETROUTE.to_ne_bytes());
    msg.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    // struct rtmsg: a host route of the address's family, everything else left to the kernel.
    msg.extend_from_slice(&[family as u8, prefix_len, 0, 0, 0, 0, 0, 0]);
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&((RTA_HDR_LEN + addr.len()) as u16).to_ne_bytes());
    msg.extend_from_slice(&RTA_DST.to_ne_bytes());
    msg.extend_from_slice(&addr);
    msg
}

/// The address in an `RTA_PREFSRC` value: 4 bytes for IPv4, 16 for IPv6.
fn source_address(value: &[u8]) -> Option<IpAddr> {
    match value.len() {
        4 => <[u8; 4]>::try_from(value).ok().map(|b| IpAddr::V4(Ipv4Addr::from(b))),
        16 => <[u8; 16]>::try_from(value).ok().map(|b| IpAddr::V6(Ipv6Addr::from(b))),
        _ => None,
    }
}

/// Parses the reply to [`getroute_request`]: an `RTM_NEWROUTE` message, or an `NLMSG_ERROR`
/// (`ENETUNREACH` when no route reaches the address).
fn parse_getroute_reply(buf: &[u8]) -> io::Result<RouteTo> {
    let malformed = || io::Error::new(io::ErrorKind::InvalidData, "malformed rtnetlink route reply");
    let msg_len = read_u32(buf, 0).ok_or_else(malformed)? as usize;
    let msg_type = read_u16(buf, 4).ok_or_else(malformed)?;
    if msg_len < NLMSG_HDR_LEN || msg_len > buf.len() {
        return Err(malformed());
    }
    let msg = &buf[..msg_len];
    if msg_type == libc::NLMSG_ERROR as u16 {
        let errno = read_i32(msg, NLMSG_HDR_LEN).ok_or_else(malformed)?;
        return Err(if errno == 0 { malformed() } else { io::Error::from_raw_os_error(-errno) });
    }
    if msg_type != libc::RTM_NEWROUTE {
        return Err(malformed());
    }
    let attrs = msg.get(NLMSG_HDR_LEN + RTMSG_LEN..).ok_or_else(malformed)?;
    let (mut source, mut if_index) = (None, None);
    for (kind, value) in attributes(attrs) {
        match kind {
            RTA_OIF => if_index = read_u32(value, 0),
            RTA_PREFSRC => source = source_address(value),
            _ => {}
        }
    }
    match (source, if_index) {
        (Some(source), Some(if_index)) => Ok(RouteTo { source, if_index }),
        _ => Err(io::Error::new(io::ErrorKind::NotFound, "the route names no source address or no interface")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdp::netlink::test_attr as attr;

    fn message(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut msg = Vec::new();
        msg.extend_from_slice(&((NLMSG_HDR_LEN + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&kind.to_ne_bytes());
        msg.extend_from_slice(&[0; 10]);
        msg.extend_from_slice(body);
        msg
    }

    #[test]
    fn the_request_asks_for_one_ipv4_host_route() {
        let msg = getroute_request(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)));
        assert_eq!(read_u32(&msg, 0), Some(msg.len() as u32));
        assert_eq!(read_u16(&msg, 4), Some(libc::RTM_GETROUTE));
        assert_eq!(msg[NLMSG_HDR_LEN], libc::AF_INET as u8);
        assert_eq!(msg[NLMSG_HDR_LEN + 1], 32, "dst_len");
        let attrs: Vec<_> = attributes(&msg[NLMSG_HDR_LEN + RTMSG_LEN..]).collect();
        assert_eq!(attrs, vec![(RTA_DST, &[10u8, 1, 2, 3][..])]);
    }

    #[test]
    fn the_reply_gives_the_source_and_the_interface() {
        let mut body = vec![0u8; RTMSG_LEN];
        body.extend(attr(RTA_DST, &[10, 1, 2, 3]));
        body.extend(attr(RTA_OIF, &9u32.to_ne_bytes()));
        body.extend(attr(RTA_PREFSRC, &[10, 1, 2, 1]));
        let reply = message(libc::RTM_NEWROUTE, &body);
        assert_eq!(
            parse_getroute_reply(&reply).expect("parses"),
            RouteTo { source: IpAddr::V4(Ipv4Addr::new(10, 1, 2, 1)), if_index: 9 }
        );
    }

    #[test]
    fn no_route_is_the_kernels_error() {
        let mut body = (-libc::ENETUNREACH).to_ne_bytes().to_vec();
        body.extend([0; 16]);
        let err = parse_getroute_reply(&message(libc::NLMSG_ERROR as u16, &body)).expect_err("error reply");
        assert_eq!(err.raw_os_error(), Some(libc::ENETUNREACH));
    }

    #[test]
    fn a_reply_without_an_interface_is_an_error_not_index_zero() {
        let mut body = vec![0u8; RTMSG_LEN];
        body.extend(attr(RTA_PREFSRC, &[10, 1, 2, 1]));
        let err = parse_getroute_reply(&message(libc::RTM_NEWROUTE, &body)).expect_err("no RTA_OIF");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn the_kernel_answers_for_loopback_with_lo() {
        // Every network namespace has `lo` as interface 1; 127.0.0.1 is reached through it, from itself.
        let route = route_to(IpAddr::V4(Ipv4Addr::LOCALHOST)).expect("the kernel answers");
        assert_eq!(route, RouteTo { source: IpAddr::V4(Ipv4Addr::LOCALHOST), if_index: 1 });
    }

    #[test]
    fn the_ipv6_request_asks_for_one_host_route_of_sixteen_bytes() {
        let pod = Ipv6Addr::new(0xfd00, 0x211, 1, 0, 0, 0, 0, 2);
        let msg = getroute_request(IpAddr::V6(pod));
        assert_eq!(read_u32(&msg, 0), Some(msg.len() as u32));
        assert_eq!(msg[NLMSG_HDR_LEN], libc::AF_INET6 as u8);
        assert_eq!(msg[NLMSG_HDR_LEN + 1], 128, "dst_len");
        let attrs: Vec<_> = attributes(&msg[NLMSG_HDR_LEN + RTMSG_LEN..]).collect();
        assert_eq!(attrs, vec![(RTA_DST, &pod.octets()[..])]);
    }

    #[test]
    fn an_ipv6_reply_gives_a_sixteen_byte_source() {
        let node = Ipv6Addr::new(0xfd00, 0x211, 1, 0, 0, 0, 0, 1);
        let mut body = vec![0u8; RTMSG_LEN];
        body.extend(attr(RTA_OIF, &5u32.to_ne_bytes()));
        body.extend(attr(RTA_PREFSRC, &node.octets()));
        let reply = message(libc::RTM_NEWROUTE, &body);
        assert_eq!(parse_getroute_reply(&reply).expect("parses"), RouteTo { source: IpAddr::V6(node), if_index: 5 });
    }

    #[test]
    fn the_kernel_answers_for_ipv6_loopback_with_lo() {
        // `lo` has ::1 in every network namespace where IPv6 is on (the tests' are).
        let route = route_to(IpAddr::V6(Ipv6Addr::LOCALHOST)).expect("the kernel answers");
        assert_eq!(route, RouteTo { source: IpAddr::V6(Ipv6Addr::LOCALHOST), if_index: 1 });
    }
}
