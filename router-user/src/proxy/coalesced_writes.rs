//! Write coalescing for HTTP/2 client connections. hyper's HTTP/2 server flushes as soon as it has written
//! the frames it has, and a stream's response usually wakes it alone, so each stream's response went out as
//! its own TLS record and writev(2). Here a flush first yields once to the scheduler: the other streams whose
//! pods have answered meanwhile add their frames, and one write carries them all.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes held before a write goes through without waiting for a flush.
const LIMIT: usize = 64 * 1024;

pub struct CoalescedWrites<S> {
    inner: S,
    pending: BytesMut,
    /// The current flush has yielded once already.
    yielded: bool,
}

impl<S> CoalescedWrites<S> {
    pub fn new(inner: S) -> Self {
        Self { inner, pending: BytesMut::new(), yielded: false }
    }
}

impl<S: AsyncWrite + Unpin> CoalescedWrites<S> {
    /// Writes out everything held.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.advance(written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CoalescedWrites<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CoalescedWrites<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        if self.pending.len() + data.len() > LIMIT {
            ready!(self.poll_drain(cx))?;
        }
        if data.len() >= LIMIT {
            return Pin::new(&mut self.inner).poll_write(cx, data);
        }
        self.pending.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.pending.is_empty() && !self.yielded {
            // Let the tasks that are ready run first; this task is polled again right after them.
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        ready!(self.poll_drain(cx))?;
        self.yielded = false;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn writes_are_held_until_a_flush_and_then_sent_together() {
        let (near, mut far) = tokio::io::duplex(1 << 20);
        let mut writer = CoalescedWrites::new(near);
        writer.write_all(b"one ").await.expect("write");
        writer.write_all(b"two").await.expect("write");
        let mut probe = [0u8; 16];
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), far.read(&mut probe)).await;
        assert!(early.is_err(), "nothing reaches the peer before a flush");
        writer.flush().await.expect("flush");
        let n = far.read(&mut probe).await.expect("read");
        assert_eq!(&probe[..n], b"one two", "one write carries both");
    }

    #[tokio::test]
    async fn large_writes_and_shutdown_deliver_every_byte() {
        let (near, mut far) = tokio::io::duplex(1 << 16);
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            far.read_to_end(&mut all).await.expect("read");
            all
        });
        let mut writer = CoalescedWrites::new(near);
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in data.chunks(7_000) {
            writer.write_all(chunk).await.expect("write");
        }
        writer.write_all(&data[..100_000]).await.expect("large write");
        writer.shutdown().await.expect("shutdown");
        let received = reader.await.expect("reader");
        let expected: Vec<u8> = data.iter().chain(&data[..100_000]).copied().collect();
        assert_eq!(received.len(), expected.len());
        assert!(received == expected, "bytes in order");
    }
}
