//! Open descriptors passed between processes over a unix socket (`SCM_RIGHTS`): the kernel installs a
//! copy of each in the receiver, pointing at the same open socket. A listening socket passed this way keeps
//! one accept queue, so no connection waiting in it is lost when the sender stops accepting.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The most descriptors one message carries (admin, :80 and :443, two address families each).
pub const MAX_FDS: usize = 16;
/// The longest message text.
pub const MAX_TEXT: usize = 16 * 1024;

/// Sends `text` with `fds` attached, in one message.
pub fn send_with_fds(socket: &UnixStream, text: &[u8], fds: &[RawFd]) -> io::Result<()> {
    if fds.len() > MAX_FDS || text.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "too many descriptors, or no text"));
    }
    let fd_bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec { iov_base: text.as_ptr() as *mut libc::c_void, iov_len: text.len() };
    // SAFETY: msghdr is plain data, valid zeroed; the pointers set below outlive the sendmsg call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer is CMSG_SPACE(fd_bytes) long, so the first header and its data fit.
        unsafe {
            let header = libc::CMSG_FIRSTHDR(&msg);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(header), fd_bytes);
        }
    }
    // SAFETY: `msg` points at valid buffers for the lengths it names; the socket is open.
    let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    match sent {
        n if n < 0 => Err(io::Error::last_os_error()),
        n if n as usize != text.len() => Err(io::Error::new(io::ErrorKind::WriteZero, "short hand-over message")),
        _ => Ok(()),
    }
}

/// Receives one message: its text and the descriptors that came with it (owned: closed when dropped).
pub fn recv_with_fds(socket: &UnixStream) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut text = vec![0u8; MAX_TEXT];
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * size_of::<RawFd>()) as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec { iov_base: text.as_mut_ptr().cast(), iov_len: text.len() };
    // SAFETY: as in `send_with_fds`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: the buffers are valid for the lengths `msg` names; MSG_CMSG_CLOEXEC keeps the received
    // descriptors from leaking into children.
    let len = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled `msg_controllen` bytes of `control` with well-formed headers; CMSG_NXTHDR
    // stays within them, and each SCM_RIGHTS header's data holds whole descriptors now owned by this process.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data_len = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let data = libc::CMSG_DATA(header);
                for i in 0..data_len / size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.add(i * size_of::<RawFd>()).cast::<RawFd>());
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            header = libc::CMSG_NXTHDR(&msg, header);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "more descriptors than a hand-over carries"));
    }
    text.truncate(len as usize);
    Ok((text, fds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn a_listening_socket_passed_over_keeps_its_accept_queue() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        // A connection waits in the queue before the hand-over.
        let mut waiting = std::net::TcpStream::connect(addr).expect("connect");
        let (a, b) = UnixStream::pair().expect("pair");
        send_with_fds(&a, b"listeners", &[listener.as_raw_fd()]).expect("send");
        drop(listener);
        let (text, mut fds) = recv_with_fds(&b).expect("recv");
        assert_eq!(text, b"listeners");
        assert_eq!(fds.len(), 1);
        let taken = TcpListener::from(fds.remove(0));
        assert_eq!(taken.local_addr().expect("addr"), addr);
        let (mut accepted, _) = taken.accept().expect("the waiting connection is there");
        waiting.write_all(b"x").expect("write");
        let mut byte = [0u8; 1];
        accepted.read_exact(&mut byte).expect("read");
        assert_eq!(&byte, b"x");
    }

    #[test]
    fn a_message_without_descriptors_is_text_only() {
        let (a, b) = UnixStream::pair().expect("pair");
        send_with_fds(&a, b"TAKEN\n", &[]).expect("send");
        let (text, fds) = recv_with_fds(&b).expect("recv");
        assert_eq!((text.as_slice(), fds.len()), (&b"TAKEN\n"[..], 0));
    }
}
