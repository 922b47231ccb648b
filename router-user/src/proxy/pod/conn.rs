//! One TCP connection to a pod with the bytes read off it and not consumed yet.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use tokio::net::TcpStream;

/// Reads start with this much room and grow while they fill it, up to the maximum (bulk downloads).
const FIRST_READ: usize = 16 * 1024;
const MAX_READ: usize = 256 * 1024;

#[derive(Debug)]
pub struct PodConn {
    pub stream: TcpStream,
    /// Read and not yet consumed.
    pub buf: BytesMut,
    pub addr: SocketAddr,
    /// The connection carried an exchange before this one.
    pub reused: bool,
    read_size: usize,
}

impl PodConn {
    pub async fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<PodConn> {
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
            Ok(connected) => connected?,
            Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, format!("no connection within {timeout:?}"))),
        };
        stream.set_nodelay(true)?;
        Ok(PodConn { stream, buf: BytesMut::new(), addr, reused: false, read_size: FIRST_READ })
    }

    /// Reads more into `buf`. `Ok(0)`: the pod closed its side.
    pub fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.buf.capacity() - self.buf.len() < self.read_size / 2 {
            self.buf.reserve(self.read_size);
        }
        let room = self.buf.capacity() - self.buf.len();
        // AsyncRead (not try_read) so a short read clears the socket's readiness: the next wait needs no syscall.
        let read = tokio_util::io::poll_read_buf(Pin::new(&mut self.stream), cx, &mut self.buf);
        if let Poll::Ready(Ok(n)) = read {
            if n == room && self.read_size < MAX_READ {
                self.read_size *= 2;
            }
        }
        read
    }

    /// An idle connection is usable when the pod has neither closed it nor sent anything unasked. Costs a
    /// syscall only when the socket became readable since the last read.
    pub fn idle_and_open(&self) -> bool {
        self.buf.is_empty()
            && matches!(self.stream.try_read(&mut [0u8; 1]), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}
