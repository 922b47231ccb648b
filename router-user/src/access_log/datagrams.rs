//! Datagrams out in batches: `sendmmsg(2)` sends each message of a buffer as its own datagram, up to 64 per
//! system call, on a connected non-blocking socket, and says how many were lost. (`unsafe` is allowed here
//! alone in the access log: the system call and its message headers.)

#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;

/// What one batch of datagrams came to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DatagramsSent {
    pub lost: usize,
    /// The socket's peer is gone (a unix socket to reconnect later).
    pub gone: bool,
}

/// Datagrams sent per `sendmmsg(2)` call at most.
const DATAGRAMS_PER_CALL: usize = 64;

/// Sends each message of `buffer` (ending at `ends`) as one datagram on the connected socket `fd` (`unix`: a
/// unix datagram socket). When the kernel cannot take more now (`EAGAIN`), or a unix socket's peer is gone,
/// the rest of the batch is lost; a UDP message refused otherwise (an ICMP error reported late, a message too
/// long) is lost alone and the next ones are tried.
pub fn send_datagrams(fd: RawFd, buffer: &[u8], ends: &[usize], unix: bool) -> DatagramsSent {
    let mut result = DatagramsSent::default();
    let mut next = 0;
    while next < ends.len() {
        let chunk = &ends[next..ends.len().min(next + DATAGRAMS_PER_CALL)];
        let start = if next == 0 { 0 } else { ends[next - 1] };
        match sendmmsg_chunk(fd, buffer, start, chunk) {
            Ok(sent) => next += sent.max(1).min(chunk.len()),
            Err(error) => {
                let rest = ends.len() - next;
                match error.raw_os_error() {
                    Some(libc::EAGAIN | libc::ENOBUFS) => {
                        result.lost += rest;
                        return result;
                    }
                    _ if unix => {
                        result.lost += rest;
                        result.gone = true;
                        return result;
                    }
                    _ => {
                        result.lost += 1;
                        next += 1;
                    }
                }
            }
        }
    }
    result
}

/// One `sendmmsg(2)` call for the messages ending at `ends` (the first starting at `start`): how many went.
fn sendmmsg_chunk(fd: RawFd, buffer: &[u8], start: usize, ends: &[usize]) -> io::Result<usize> {
    let mut iovecs = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; DATAGRAMS_PER_CALL];
    // SAFETY: mmsghdr is a plain C struct for which all-zero bytes are a valid (empty) value.
    let mut headers: [libc::mmsghdr; DATAGRAMS_PER_CALL] = unsafe { std::mem::zeroed() };
    let count = ends.len().min(DATAGRAMS_PER_CALL);
    let mut from = start;
    for (i, &end) in ends.iter().take(count).enumerate() {
        let message = &buffer[from..end];
        iovecs[i] = libc::iovec { iov_base: message.as_ptr() as *mut libc::c_void, iov_len: message.len() };
        headers[i].msg_hdr.msg_iov = &mut iovecs[i];
        headers[i].msg_hdr.msg_iovlen = 1;
        from = end;
    }
    // SAFETY: `headers[..count]` each point at one iovec of `iovecs`, which points into `buffer`; all of them
    // outlive the call, which only reads the messages (sendmmsg writes nothing but each header's msg_len).
    let sent = unsafe { libc::sendmmsg(fd, headers.as_mut_ptr(), count as libc::c_uint, libc::MSG_DONTWAIT) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sent as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixDatagram;
    use std::time::Duration;

    fn batch(messages: &[&str]) -> (Vec<u8>, Vec<usize>) {
        let mut buffer = Vec::new();
        let mut ends = Vec::new();
        for message in messages {
            buffer.extend_from_slice(message.as_bytes());
            ends.push(buffer.len());
        }
        (buffer, ends)
    }

    #[test]
    fn each_message_of_a_batch_arrives_as_its_own_datagram() {
        let receiver = std::net::UdpSocket::bind("127.0.0.1:0").expect("receiver");
        receiver.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").expect("sender");
        sender.connect(receiver.local_addr().expect("addr")).expect("connect");
        // More than one system call's worth, so the batch is split.
        let messages: Vec<String> = (0..DATAGRAMS_PER_CALL + 6).map(|i| format!("line {i}\n")).collect();
        let (buffer, ends) = batch(&messages.iter().map(String::as_str).collect::<Vec<_>>());
        let sent = send_datagrams(sender.as_raw_fd(), &buffer, &ends, false);
        assert_eq!(sent, DatagramsSent { lost: 0, gone: false });
        let mut datagram = [0u8; 64];
        for expected in &messages {
            let got = receiver.recv(&mut datagram).expect("a datagram");
            assert_eq!(&datagram[..got], expected.as_bytes());
        }
    }

    #[test]
    fn a_unix_peer_that_is_gone_loses_the_batch_and_says_so() {
        let (ours, theirs) = UnixDatagram::pair().expect("pair");
        drop(theirs);
        let (buffer, ends) = batch(&["a\n", "b\n", "c\n"]);
        let sent = send_datagrams(ours.as_raw_fd(), &buffer, &ends, true);
        assert_eq!(sent, DatagramsSent { lost: 3, gone: true });
    }
}
