//! The steering setup's raw system calls, the one place in it that needs `unsafe`: the raw IPv4
//! and IPv6 sockets leg B's segments leave by, TCP_REPAIR on the router's socket R (its sequence numbers,
//! timestamp clock and window scales, and its silent close), CLOCK_MONOTONIC in the unit of
//! `bpf_ktime_get_ns`, and the `STEER_EVENTS` ring buffer's registration with the runtime.

#![allow(unsafe_code)]

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::IpAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use aya::maps::{MapData, RingBuf};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// uapi linux/tcp.h.
const TCP_REPAIR: libc::c_int = 19;
const TCP_REPAIR_QUEUE: libc::c_int = 20;
const TCP_QUEUE_SEQ: libc::c_int = 21;
const TCP_TIMESTAMP: libc::c_int = 24;
const TCP_REPAIR_ON: libc::c_int = 1;
/// Repair off without the window probe that plain "off" sends.
const TCP_REPAIR_OFF_NO_WP: libc::c_int = -1;
const TCP_RECV_QUEUE: libc::c_int = 1;
const TCP_SEND_QUEUE: libc::c_int = 2;

/// The ring buffer registered with the runtime, which then reports when records are waiting.
pub fn watch_ring(ring: RingBuf<MapData>) -> io::Result<AsyncFd<RingBuf<MapData>>> {
    // SAFETY: the `RingBuf` owns its map descriptor and neither changes nor closes it while alive, so it
    // stays the same open ring buffer for the AsyncFd's whole life.
    unsafe { AsyncFd::register_with_interest(ring, Interest::READABLE) }.map_err(io::Error::from)
}

/// Raw sockets whose packets carry their own IP header (`IPPROTO_RAW`, which for IPv6 implies
/// `IPV6_HDRINCL`): one per family. The IPv6 one is optional: a node without IPv6 steers IPv4 only.
#[derive(Debug)]
pub struct RawSocket {
    v4: OwnedFd,
    v6: Option<OwnedFd>,
}

fn raw_socket(family: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with valid constants.
    let fd = unsafe { libc::socket(family, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_RAW) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: socket succeeded, so `fd` is an open descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl RawSocket {
    pub fn open() -> io::Result<RawSocket> {
        let v4 = raw_socket(libc::AF_INET)?;
        let v6 = raw_socket(libc::AF_INET6)
            .inspect_err(|error| tracing::info!(%error, "no raw IPv6 socket: IPv6 passthrough stays on the relay"))
            .ok();
        Ok(RawSocket { v4, v6 })
    }

    /// Sends one whole IP packet (of `dst`'s family) to `dst` (the kernel routes it by its destination).
    pub fn send(&self, dst: IpAddr, packet: &[u8]) -> io::Result<()> {
        let n = match dst {
            IpAddr::V4(dst) => {
                let addr = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: 0,
                    sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(dst.octets()) },
                    sin_zero: [0; 8],
                };
                send_to(&self.v4, packet, &addr)
            }
            IpAddr::V6(dst) => {
                let Some(v6) = &self.v6 else {
                    return Err(io::Error::new(io::ErrorKind::Unsupported, "no raw IPv6 socket"));
                };
                // Port 0: the protocol comes from the packet's own header (IPPROTO_RAW).
                let addr = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: 0,
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr { s6_addr: dst.octets() },
                    sin6_scope_id: 0,
                };
                send_to(v6, packet, &addr)
            }
        }?;
        if n != packet.len() {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "raw packet sent in part"));
        }
        Ok(())
    }
}

/// `sendto(2)` of `packet` on `fd` to the socket address `addr` (a `sockaddr_in` or `sockaddr_in6`).
fn send_to<A>(fd: &OwnedFd, packet: &[u8], addr: &A) -> io::Result<usize> {
    // SAFETY: `packet` is readable for its length; `addr` is a valid socket address of its family
    // passed with its size; the descriptor is owned and open.
    let n = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            packet.as_ptr().cast(),
            packet.len(),
            libc::MSG_DONTWAIT,
            (addr as *const A).cast(),
            size_of::<A>() as libc::socklen_t,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

fn set_int(fd: BorrowedFd<'_>, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is one c_int passed with its size; the descriptor is borrowed from a
    // live socket.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn get_u32(fd: BorrowedFd<'_>, name: libc::c_int) -> io::Result<u32> {
    let mut value: u32 = 0;
    let mut len = size_of::<u32>() as libc::socklen_t;
    // SAFETY: `value` is a writable u32 and `len` its size; the descriptor is borrowed from a live
    // socket.
    let rc =
        unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, name, (&mut value as *mut u32).cast(), &mut len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// Puts the socket in repair mode: from now on it sends nothing, and its close is silent.
pub fn repair_on(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_int(fd, TCP_REPAIR, TCP_REPAIR_ON)
}

/// Leaves repair mode without sending a window probe.
pub fn repair_off(fd: BorrowedFd<'_>) -> io::Result<()> {
    set_int(fd, TCP_REPAIR, TCP_REPAIR_OFF_NO_WP)
}

/// In repair mode: the next sequence number of the send queue and of the receive queue.
pub fn queue_sequences(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    set_int(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)?;
    let send = get_u32(fd, TCP_QUEUE_SEQ)?;
    set_int(fd, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)?;
    let receive = get_u32(fd, TCP_QUEUE_SEQ)?;
    Ok((send, receive))
}

/// The socket's TSval clock now (`TCP_TIMESTAMP`: the clock plus the socket's offset).
pub fn timestamp_now(fd: BorrowedFd<'_>) -> io::Result<u32> {
    get_u32(fd, TCP_TIMESTAMP)
}

/// The head of `struct tcp_info` up to the window-scale byte.
#[repr(C)]
#[derive(Clone, Copy)]
struct TcpInfoHead {
    /// `tcpi_state` .. `tcpi_options`.
    _head: [u8; 6],
    /// `tcpi_snd_wscale : 4, tcpi_rcv_wscale : 4` (low nibble first on the little-endian ABIs).
    wscales: u8,
    _flags: u8,
}

/// (snd_wscale, rcv_wscale): the peer's shift as this socket applies it, and the one it advertised.
pub fn window_scales(fd: BorrowedFd<'_>) -> io::Result<(u8, u8)> {
    let mut info = MaybeUninit::<TcpInfoHead>::zeroed();
    let mut len = size_of::<TcpInfoHead>() as libc::socklen_t;
    // SAFETY: `info` is a writable buffer of `len` bytes (the kernel copies at most that much); the
    // descriptor is borrowed from a live socket.
    let rc = unsafe {
        libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, info.as_mut_ptr().cast(), &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: zero-initialised, then overwritten by the kernel; every bit pattern is valid.
    let info = unsafe { info.assume_init() };
    Ok((info.wscales & 0x0f, info.wscales >> 4))
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    #[tokio::test]
    async fn window_scales_of_a_loopback_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (client, accepted) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
        let client = client.expect("connect");
        let (server, _) = accepted.expect("accept");
        let (snd, rcv) = window_scales(server.as_fd()).expect("tcp_info");
        let (client_snd, client_rcv) = window_scales(client.as_fd()).expect("tcp_info");
        assert_eq!(snd, client_rcv, "what one side applies is what the other advertised");
        assert_eq!(rcv, client_snd);
    }
}
