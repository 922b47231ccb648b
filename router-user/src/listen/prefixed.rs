//! A stream that replays bytes already read off it (a PROXY header's leftovers, an inspected ClientHello)
//! before reading on from the stream itself; writes go straight through.

#![forbid(unsafe_code)]

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `S` with `prefix` put back in front of its read side.
///
/// Reads return the prefix first (as much as fits each caller buffer), then whatever `S` returns. Writes,
/// flushes and shutdowns are `S`'s own. Hand it to hyper or rustls in place of `S` after inspecting the
/// first bytes of a connection.
#[derive(Debug)]
pub struct Prefixed<S> {
    /// Bytes not yet handed to a reader.
    prefix: Bytes,
    inner: S,
}

impl<S> Prefixed<S> {
    /// Wraps `inner` so reads yield `prefix` before reading from `inner`.
    pub fn new(prefix: impl Into<Bytes>, inner: S) -> Self {
        Prefixed { prefix: prefix.into(), inner }
    }

    /// The prefix bytes not read yet.
    pub fn remaining_prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped stream, mutably. Reading from it directly skips the unread prefix.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The unread part of the prefix and the wrapped stream.
    pub fn into_parts(self) -> (Bytes, S) {
        (self.prefix, self.inner)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            // A zero-capacity buffer gets nothing, as a read on the stream itself would.
            let n = this.prefix.len().min(buf.remaining());
            buf.put_slice(this.prefix.get(..n).unwrap_or_default());
            this.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A connected loopback pair: (the end we wrap, its peer).
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (connected, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (accepted.expect("accept").0, connected.expect("connect"))
    }

    #[tokio::test]
    async fn prefix_then_stream_then_eof() {
        let (ours, mut peer) = pair().await;
        peer.write_all(b" world").await.expect("write");
        peer.shutdown().await.expect("shutdown");
        let mut s = Prefixed::new(Bytes::from_static(b"hello"), ours);
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.expect("read");
        assert_eq!(out, b"hello world");
    }

    #[tokio::test]
    async fn small_reads_split_the_prefix() {
        let (ours, mut peer) = pair().await;
        peer.write_all(b"xyz").await.expect("write");
        let mut s = Prefixed::new(b"abcde".to_vec(), ours);
        let mut two = [0u8; 2];
        assert_eq!(s.read(&mut two).await.expect("read"), 2);
        assert_eq!(&two, b"ab");
        assert_eq!(s.remaining_prefix(), b"cde");
        assert_eq!(s.read(&mut two).await.expect("read"), 2);
        assert_eq!(&two, b"cd");
        // The last prefix byte comes alone: a read never mixes prefix and stream bytes.
        assert_eq!(s.read(&mut two).await.expect("read"), 1);
        assert_eq!(two[0], b'e');
        let mut three = [0u8; 3];
        s.read_exact(&mut three).await.expect("read");
        assert_eq!(&three, b"xyz");
    }

    #[tokio::test]
    async fn empty_prefix_reads_the_stream() {
        let (ours, mut peer) = pair().await;
        peer.write_all(b"data").await.expect("write");
        drop(peer);
        let mut s = Prefixed::new(Vec::new(), ours);
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.expect("read");
        assert_eq!(out, b"data");
    }

    #[tokio::test]
    async fn writes_pass_through_while_prefix_unread() {
        let (ours, mut peer) = pair().await;
        let mut s = Prefixed::new(Bytes::from_static(b"unread"), ours);
        assert!(s.is_write_vectored(), "a TcpStream writes vectored");
        s.write_all(b"plain ").await.expect("write");
        let slices = [IoSlice::new(b"vec"), IoSlice::new(b"tored")];
        // Loopback takes 8 bytes in one call; a short count here would mean the slices were not passed on.
        assert_eq!(s.write_vectored(&slices).await.expect("write_vectored"), 8);
        s.flush().await.expect("flush");
        s.shutdown().await.expect("shutdown");
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), peer.read_to_end(&mut got)).await.expect("in time").expect("read");
        assert_eq!(got, b"plain vectored");
        assert_eq!(s.remaining_prefix(), b"unread", "writing does not touch the prefix");
    }

    #[tokio::test]
    async fn into_parts_returns_the_unread_prefix() {
        let (ours, mut peer) = pair().await;
        let mut s = Prefixed::new(Bytes::from_static(b"0123456789"), ours);
        let mut four = [0u8; 4];
        s.read_exact(&mut four).await.expect("read");
        let (rest, mut inner) = s.into_parts();
        assert_eq!(&rest[..], b"456789");
        peer.write_all(b"!").await.expect("write");
        let mut one = [0u8; 1];
        inner.read_exact(&mut one).await.expect("read");
        assert_eq!(&one, b"!");
    }
}
