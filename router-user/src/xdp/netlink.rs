//! Which XDP programs an interface already has, asked from the kernel over rtnetlink
//! (`RTM_GETLINK`, attribute `IFLA_XDP`). This sees programs attached by any means: a `bpf_link`,
//! `ip link set xdp`, libbpf or another router. The socket and attribute reading serve
//! [`super::route_get`] too.

#![allow(unsafe_code)]

use std::{
    io,
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
};

/// `IFLA_XDP`: the nested XDP attribute of a link message (linux/if_link.h).
const IFLA_XDP: u16 = 43;
/// `IFLA_XDP_DRV_PROG_ID`, `IFLA_XDP_SKB_PROG_ID`, `IFLA_XDP_HW_PROG_ID`: program id per mode.
const IFLA_XDP_DRV_PROG_ID: u16 = 5;
const IFLA_XDP_SKB_PROG_ID: u16 = 6;
const IFLA_XDP_HW_PROG_ID: u16 = 7;
/// `NLA_TYPE_MASK`: strips the nested/byte-order flags from an attribute type.
const NLA_TYPE_MASK: u16 = !(1 << 15 | 1 << 14);

pub(super) const NLMSG_HDR_LEN: usize = 16;
const IFINFOMSG_LEN: usize = 16;
pub(super) const RTA_HDR_LEN: usize = 4;

/// One XDP program attached to an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct XdpAttachment {
    pub prog_id: u32,
    pub mode: AttachedMode,
}

/// The mode the kernel reports an XDP program attached in (one program id attribute per mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttachedMode {
    /// Native, in the driver (`IFLA_XDP_DRV_PROG_ID`).
    Driver,
    /// Generic, on the skb (`IFLA_XDP_SKB_PROG_ID`).
    Skb,
    /// Offloaded to the NIC (`IFLA_XDP_HW_PROG_ID`).
    Hw,
}

impl AttachedMode {
    /// The name in the router's messages, as `--xdp-mode` spells it: `driver`, `skb`, `hw`.
    pub fn name(self) -> &'static str {
        match self {
            AttachedMode::Driver => "driver",
            AttachedMode::Skb => "skb",
            AttachedMode::Hw => "hw",
        }
    }

    /// The word `ip link show` prints for an interface with a program in this mode (iproute2):
    /// `xdp` (driver), `xdpgeneric`, `xdpoffload`.
    pub fn ip_link_name(self) -> &'static str {
        match self {
            AttachedMode::Driver => "xdp",
            AttachedMode::Skb => "xdpgeneric",
            AttachedMode::Hw => "xdpoffload",
        }
    }
}

/// Lists the XDP programs attached to interface `if_index` in the caller's network namespace.
pub(crate) fn xdp_attachments(if_index: u32) -> io::Result<Vec<XdpAttachment>> {
    let socket = RouteSocket::open()?;
    socket.send(&getlink_request(if_index))?;
    let mut buf = vec![0u8; 64 * 1024];
    let len = socket.recv(&mut buf)?;
    parse_getlink_reply(&buf[..len])
}

/// An `RTM_GETLINK` request for one interface.
fn getlink_request(if_index: u32) -> Vec<u8> {
    let len = NLMSG_HDR_LEN + IFINFOMSG_LEN;
    let mut msg = Vec::with_capacity(len);
    // struct nlmsghdr: len, type, flags, seq, pid.
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_GETLINK.to_ne_bytes());
    msg.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifinfomsg: family, pad, type, index, flags, change.
    msg.push(libc::AF_UNSPEC as u8);
    msg.push(0);
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&if_index.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg
}

/// Parses the reply to [`getlink_request`]: an `RTM_NEWLINK` message, or an `NLMSG_ERROR`.
fn parse_getlink_reply(mut buf: &[u8]) -> io::Result<Vec<XdpAttachment>> {
    let malformed = || io::Error::new(io::ErrorKind::InvalidData, "malformed rtnetlink reply");
    while buf.len() >= NLMSG_HDR_LEN {
        let msg_len = read_u32(buf, 0).ok_or_else(malformed)? as usize;
        let msg_type = read_u16(buf, 4).ok_or_else(malformed)?;
        if msg_len < NLMSG_HDR_LEN || msg_len > buf.len() {
            return Err(malformed());
        }
        let msg = &buf[..msg_len];
        match msg_type {
            t if t == libc::NLMSG_ERROR as u16 => {
                let errno = read_i32(msg, NLMSG_HDR_LEN).ok_or_else(malformed)?;
                if errno != 0 {
                    return Err(io::Error::from_raw_os_error(-errno));
                }
            }
            libc::RTM_NEWLINK => {
                let attrs = msg.get(NLMSG_HDR_LEN + IFINFOMSG_LEN..).ok_or_else(malformed)?;
                let xdp = attributes(attrs).find(|&(kind, _)| kind == IFLA_XDP);
                let Some((_, xdp)) = xdp else {
                    return Ok(Vec::new());
                };
                let attached = attributes(xdp)
                    .filter_map(|(kind, value)| {
                        let mode = match kind {
                            IFLA_XDP_DRV_PROG_ID => AttachedMode::Driver,
                            IFLA_XDP_SKB_PROG_ID => AttachedMode::Skb,
                            IFLA_XDP_HW_PROG_ID => AttachedMode::Hw,
                            _ => return None,
                        };
                        let prog_id = read_u32(value, 0)?;
                        (prog_id != 0).then_some(XdpAttachment { prog_id, mode })
                    })
                    .collect();
                return Ok(attached);
            }
            _ => {}
        }
        buf = buf.get(align4(msg_len)..).unwrap_or_default();
    }
    Err(io::Error::new(io::ErrorKind::UnexpectedEof, "rtnetlink reply held no link message"))
}

/// Iterates `(type, value)` over a run of netlink attributes; stops at the first malformed one.
pub(super) fn attributes(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(read_u16(buf, 0)?);
        let kind = read_u16(buf, 2)? & NLA_TYPE_MASK;
        let value = buf.get(RTA_HDR_LEN..len)?;
        buf = buf.get(align4(len)..).unwrap_or_default();
        Some((kind, value))
    })
}

pub(super) const fn align4(len: usize) -> usize {
    (len + 3) & !3
}

pub(super) fn read_u16(buf: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(buf.get(at..at + 2)?.try_into().ok()?))
}

pub(super) fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn read_i32(buf: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(buf.get(at..at + 4)?.try_into().ok()?))
}

/// A `NETLINK_ROUTE` socket talking to the kernel.
pub(super) struct RouteSocket(OwnedFd);

impl RouteSocket {
    pub(super) fn open() -> io::Result<RouteSocket> {
        // SAFETY: plain socket(2) call with constant arguments; the result is checked below.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
        Ok(RouteSocket(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(super) fn send(&self, msg: &[u8]) -> io::Result<()> {
        // SAFETY: `sockaddr_nl` is plain data, valid when zeroed; family set below, pid 0 = kernel.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `msg` and `kernel` are valid for the lengths passed, and the fd is open.
        let sent = unsafe {
            libc::sendto(
                self.0.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                std::ptr::from_ref(&kernel).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        match sent {
            n if n < 0 => Err(io::Error::last_os_error()),
            n if n as usize != msg.len() => Err(io::Error::new(io::ErrorKind::WriteZero, "short rtnetlink send")),
            _ => Ok(()),
        }
    }

    pub(super) fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid writable memory of `buf.len()` bytes, and the fd is open.
        let len = unsafe { libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if len < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(len as usize)
    }
}

/// One netlink attribute as the kernel writes it, for the parsers' tests.
#[cfg(test)]
pub(super) fn test_attr(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((RTA_HDR_LEN + value.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize(align4(out.len()), 0);
    out
}

#[cfg(test)]
mod tests {
    use super::test_attr as attr;
    use super::*;

    fn newlink(attrs: &[u8]) -> Vec<u8> {
        let mut msg = getlink_request(7);
        msg[4..6].copy_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
        msg.extend_from_slice(attrs);
        let len = msg.len() as u32;
        msg[..4].copy_from_slice(&len.to_ne_bytes());
        msg
    }

    #[test]
    fn reply_without_xdp_attribute_means_nothing_attached() {
        let reply = newlink(&attr(3, b"eth0\0"));
        assert_eq!(parse_getlink_reply(&reply).expect("parses"), vec![]);
    }

    #[test]
    fn reply_lists_each_mode_with_a_program() {
        let mut nested = attr(2, &[2]); // IFLA_XDP_ATTACHED = XDP_ATTACHED_SKB
        nested.extend(attr(IFLA_XDP_SKB_PROG_ID, &42u32.to_ne_bytes()));
        nested.extend(attr(4, &42u32.to_ne_bytes())); // IFLA_XDP_PROG_ID
        let mut attrs = attr(3, b"veth0\0");
        attrs.extend(attr(IFLA_XDP | 1 << 15, &nested));
        let reply = newlink(&attrs);
        assert_eq!(
            parse_getlink_reply(&reply).expect("parses"),
            vec![XdpAttachment { prog_id: 42, mode: AttachedMode::Skb }]
        );
    }

    #[test]
    fn each_mode_attribute_is_named_as_ip_link_names_it() {
        let cases = [
            (IFLA_XDP_DRV_PROG_ID, 1, AttachedMode::Driver, "xdp"),
            (IFLA_XDP_SKB_PROG_ID, 2, AttachedMode::Skb, "xdpgeneric"),
            (IFLA_XDP_HW_PROG_ID, 3, AttachedMode::Hw, "xdpoffload"),
        ];
        for (kind, attached, mode, ip_link) in cases {
            let mut nested = attr(2, &[attached]); // IFLA_XDP_ATTACHED
            nested.extend(attr(kind, &7u32.to_ne_bytes()));
            let reply = newlink(&attr(IFLA_XDP | 1 << 15, &nested));
            let found = parse_getlink_reply(&reply).expect("parses");
            assert_eq!(found, vec![XdpAttachment { prog_id: 7, mode }]);
            assert_eq!(found[0].mode.ip_link_name(), ip_link, "{mode:?}");
        }
    }

    #[test]
    fn error_reply_becomes_io_error() {
        let mut msg = getlink_request(7);
        msg[4..6].copy_from_slice(&(libc::NLMSG_ERROR as u16).to_ne_bytes());
        msg.truncate(NLMSG_HDR_LEN);
        msg.extend_from_slice(&(-libc::ENODEV).to_ne_bytes());
        msg.extend_from_slice(&[0; 16]);
        let len = msg.len() as u32;
        msg[..4].copy_from_slice(&len.to_ne_bytes());
        let err = parse_getlink_reply(&msg).expect_err("error reply");
        assert_eq!(err.raw_os_error(), Some(libc::ENODEV));
    }
}
