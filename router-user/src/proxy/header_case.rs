//! Header-name case on HTTP/1 (ROUTER_H1_CASE_ADJUST), for clients and pods that wrongly read names
//! case-sensitively. HTTP/1 header names leave the router in lower case; OpenShift turns each listed name
//! into HAProxy's `h1-case-adjust <lowercase> <as listed>` and sets `option h1-case-adjust-bogus-client`
//! for every frontend (response heads to HTTP/1 clients) and `option h1-case-adjust-bogus-server` on the
//! backends of routes annotated `haproxy.router.openshift.io/h1-adjust-case` (request heads to their pods).
//!
//! The pod side writes the case directly (`pod::head`, through [`AdjustedCase`] in the request's
//! extensions). The client side is written by hyper, which has no public way to set a name's case, so
//! [`CaseAdjustedWrites`] rewrites the names in the response heads hyper writes to the socket: it follows the
//! byte stream (head, then a Content-Length or chunked body, none for HEAD, 1xx, 204 and 304) and changes only
//! the listed names in heads, never a body byte; a body delimited by the connection's close, an upgrade, or
//! anything it cannot follow ends the rewriting for the rest of the connection.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A response head larger than this is not rewritten (and rewriting stops).
const MAX_HEAD: usize = 64 * 1024;

/// Lower-case name -> name as the administrator spelled it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HeaderCaseMap {
    names: HashMap<Vec<u8>, Vec<u8>>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid HTTP header name: {0:?}")]
pub struct InvalidHeaderName(pub String);

impl HeaderCaseMap {
    /// ROUTER_H1_CASE_ADJUST: names separated by commas (nothing trimmed), each an RFC 2616 token as
    /// OpenShift checks it. Empty: no adjustment.
    pub fn parse(list: &str) -> Result<Option<HeaderCaseMap>, InvalidHeaderName> {
        if list.is_empty() {
            return Ok(None);
        }
        let mut names = HashMap::new();
        for name in list.split(',') {
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(InvalidHeaderName(name.to_string()));
            }
            names.insert(name.to_ascii_lowercase().into_bytes(), name.as_bytes().to_vec());
        }
        Ok(Some(HeaderCaseMap { names }))
    }

    /// `name` as it is to be written (unchanged when not listed).
    pub fn adjust<'a>(&'a self, name: &'a [u8]) -> &'a [u8] {
        if name.iter().any(u8::is_ascii_uppercase) {
            return self.names.get(&name.to_ascii_lowercase()).map_or(name, Vec::as_slice);
        }
        self.names.get(name).map_or(name, Vec::as_slice)
    }
}

/// OpenShift's token check: `[\x21\x23-\x27\x2a\x2b\x2d\x2e\x30-\x39\x41-\x5a\x5e-\x7a\x7c\x7e]`.
fn is_token_byte(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x27 | 0x2a | 0x2b | 0x2d | 0x2e | 0x30..=0x39 | 0x41..=0x5a | 0x5e..=0x7a | 0x7c | 0x7e)
}

/// A request extension: write this request's header names to the pod with the map's case.
#[derive(Clone, Debug)]
pub struct AdjustedCase(pub Arc<HeaderCaseMap>);

/// The requests of one HTTP/1 connection, in order, as far as the response framing depends on them: whether
/// each was a HEAD (its response has no body whatever its headers say).
#[derive(Debug, Default)]
pub struct RequestMethods(Mutex<VecDeque<bool>>);

impl RequestMethods {
    /// Called for each request the service receives, in order.
    pub fn push(&self, is_head: bool) {
        if let Ok(mut queue) = self.0.lock() {
            queue.push_back(is_head);
        }
    }

    /// The next final response's request: a HEAD? Responses hyper makes itself (parse errors) have no
    /// request here and are not HEAD responses.
    fn pop(&self) -> bool {
        self.0.lock().ok().and_then(|mut queue| queue.pop_front()).unwrap_or(false)
    }
}

/// Where the writer is in the response stream.
#[derive(Debug)]
enum Stage {
    /// Collecting a head until its blank line.
    Head(Vec<u8>),
    /// `n` body bytes to pass on.
    Length(u64),
    /// Chunked body: reading a chunk-size line.
    ChunkSize(Vec<u8>),
    /// Chunk data then its CRLF: `n` bytes to pass on.
    ChunkData(u64),
    /// After the last chunk: trailer lines until an empty one; the bytes of the current line.
    Trailers(Vec<u8>),
    /// Bytes pass unchanged to the end of the connection.
    Verbatim,
}

/// The client socket of an HTTP/1 connection with response header names rewritten by a [`HeaderCaseMap`].
pub struct CaseAdjustedWrites<S> {
    inner: S,
    /// `None`: no adjustment configured, every call goes straight through.
    map: Option<Arc<HeaderCaseMap>>,
    methods: Arc<RequestMethods>,
    stage: Stage,
    /// Bytes accepted from the writer and not yet written to the socket.
    pending: Vec<u8>,
    sent: usize,
}

impl<S> CaseAdjustedWrites<S> {
    pub fn new(inner: S, map: Option<Arc<HeaderCaseMap>>, methods: Arc<RequestMethods>) -> Self {
        Self { inner, map, methods, stage: Stage::Head(Vec::new()), pending: Vec::new(), sent: 0 }
    }

    /// Runs `data` through the stream's stages into `pending`.
    fn absorb(&mut self, mut data: &[u8]) {
        let Some(map) = self.map.clone() else {
            self.pending.extend_from_slice(data);
            return;
        };
        while !data.is_empty() {
            match &mut self.stage {
                Stage::Verbatim => {
                    self.pending.extend_from_slice(data);
                    return;
                }
                Stage::Head(head) => {
                    let scan_from = head.len().saturating_sub(3);
                    head.extend_from_slice(data);
                    let Some(end) = find(&head[scan_from..], b"\r\n\r\n").map(|i| scan_from + i + 4) else {
                        if head.len() > MAX_HEAD {
                            let head = std::mem::take(head);
                            self.pending.extend_from_slice(&head);
                            self.stage = Stage::Verbatim;
                        }
                        return;
                    };
                    let mut head = std::mem::take(head);
                    let rest_start = data.len() - (head.len() - end);
                    head.truncate(end);
                    data = &data[rest_start..];
                    self.stage = self.after_head(&head);
                    rewrite_names(&mut head, &map);
                    self.pending.extend_from_slice(&head);
                }
                Stage::Length(left) | Stage::ChunkData(left) => {
                    let take = (*left).min(data.len() as u64) as usize;
                    self.pending.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    *left -= take as u64;
                    if *left == 0 {
                        let in_chunk = matches!(self.stage, Stage::ChunkData(_));
                        self.stage = if in_chunk { Stage::ChunkSize(Vec::new()) } else { Stage::Head(Vec::new()) };
                    }
                }
                Stage::ChunkSize(line) | Stage::Trailers(line) => {
                    let Some(lf) = data.iter().position(|&b| b == b'\n') else {
                        line.extend_from_slice(data);
                        self.pending.extend_from_slice(data);
                        if line.len() > MAX_HEAD {
                            self.stage = Stage::Verbatim;
                        }
                        return;
                    };
                    line.extend_from_slice(&data[..=lf]);
                    self.pending.extend_from_slice(&data[..=lf]);
                    data = &data[lf + 1..];
                    let line = std::mem::take(line);
                    self.stage = match self.stage {
                        Stage::Trailers(_) if line == b"\r\n" || line == b"\n" => Stage::Head(Vec::new()),
                        Stage::Trailers(_) => Stage::Trailers(Vec::new()),
                        _ => match chunk_size(&line) {
                            Some(0) => Stage::Trailers(Vec::new()),
                            // The data and the CRLF after it.
                            Some(size) => Stage::ChunkData(size + 2),
                            None => Stage::Verbatim,
                        },
                    };
                }
            }
        }
    }

    /// The stage after a response head: its body's framing (RFC 9112 section 6.3).
    fn after_head(&self, head: &[u8]) -> Stage {
        let status = head.get(9..12).and_then(|code| std::str::from_utf8(code).ok()?.parse::<u16>().ok());
        let Some(status) = status.filter(|_| head.starts_with(b"HTTP/1.")) else { return Stage::Verbatim };
        if status == 101 {
            return Stage::Verbatim;
        }
        if (100..200).contains(&status) {
            return Stage::Head(Vec::new());
        }
        let head_request = self.methods.pop();
        if head_request || status == 204 || status == 304 {
            return Stage::Head(Vec::new());
        }
        let mut length = None;
        let mut chunked = false;
        for line in head.split(|&b| b == b'\n').skip(1) {
            let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if name.eq_ignore_ascii_case(b"transfer-encoding") {
                chunked = value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if name.eq_ignore_ascii_case(b"content-length") {
                length = std::str::from_utf8(value).ok().and_then(|v| v.parse::<u64>().ok());
            }
        }
        match (chunked, length) {
            (true, _) => Stage::ChunkSize(Vec::new()),
            (false, Some(0)) => Stage::Head(Vec::new()),
            (false, Some(length)) => Stage::Length(length),
            (false, None) => Stage::Verbatim,
        }
    }

    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>
    where
        S: AsyncWrite + Unpin,
    {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

/// Rewrites the listed names of a complete head in place (same length: only the case changes).
fn rewrite_names(head: &mut [u8], map: &HeaderCaseMap) {
    let mut start = match head.iter().position(|&b| b == b'\n') {
        Some(i) => i + 1,
        None => return,
    };
    while start < head.len() {
        let end = head[start..].iter().position(|&b| b == b'\n').map_or(head.len(), |i| start + i + 1);
        if let Some(colon) = head[start..end].iter().position(|&b| b == b':') {
            let name = start..start + colon;
            let adjusted = map.adjust(&head[name.clone()]).to_vec();
            if adjusted.len() == colon {
                head[name].copy_from_slice(&adjusted);
            }
        }
        start = end;
    }
}

/// The size of a chunk-size line (`1a;ext=1\r\n`), `None` when it is not one.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.split(|&b| b == b';' || b == b'\r' || b == b'\n').next()?.trim_ascii();
    u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

impl<S: AsyncRead + Unpin> AsyncRead for CaseAdjustedWrites<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CaseAdjustedWrites<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        if self.map.is_none() {
            return Pin::new(&mut self.inner).poll_write(cx, data);
        }
        ready!(self.poll_drain(cx))?;
        self.absorb(data);
        // Start the socket write now; what it does not take waits for the next write or flush.
        if let Poll::Ready(Err(error)) = self.poll_drain(cx) {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(data.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.map.is_none() {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
        self.poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        self.map.is_none() && self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Stage::Head(head) = &mut self.stage {
            if !head.is_empty() {
                // A head flushed before its end: send it as it is and stop rewriting rather than hold it.
                let head = std::mem::take(head);
                self.pending.extend_from_slice(&head);
                self.stage = Stage::Verbatim;
            }
        }
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.as_mut().poll_flush(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn map(list: &str) -> Arc<HeaderCaseMap> {
        Arc::new(HeaderCaseMap::parse(list).expect("valid").expect("not empty"))
    }

    #[test]
    fn the_list_is_parsed_and_checked_as_openshift_does() {
        assert_eq!(HeaderCaseMap::parse("").expect("empty is fine"), None);
        let parsed = map("Host,X-Custom-ID,content-TYPE");
        assert_eq!(parsed.adjust(b"host"), b"Host");
        assert_eq!(parsed.adjust(b"x-custom-id"), b"X-Custom-ID");
        assert_eq!(parsed.adjust(b"Content-Type"), b"content-TYPE");
        assert_eq!(parsed.adjust(b"x-other"), b"x-other");
        for bad in ["Host, X-Space", "Host,,Date", "X:Colon", "Café"] {
            assert!(HeaderCaseMap::parse(bad).is_err(), "{bad:?}");
        }
    }

    async fn through(list: Option<&str>, heads: &[bool], writes: &[&[u8]]) -> Vec<u8> {
        let (near, mut far) = tokio::io::duplex(1 << 20);
        let methods = Arc::new(RequestMethods::default());
        for &head in heads {
            methods.push(head);
        }
        let mut writer = CaseAdjustedWrites::new(near, list.map(map), methods);
        for data in writes {
            writer.write_all(data).await.expect("write");
        }
        writer.shutdown().await.expect("shutdown");
        drop(writer);
        let mut out = Vec::new();
        far.read_to_end(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn names_in_heads_change_case_and_bodies_never_do() {
        let stream: &[&[u8]] = &[
            b"HTTP/1.1 200 OK\r\nx-pod: a\r\ncontent-length: 22\r\n\r\n",
            b"x-pod: body bytes stay",
            b"HTTP/1.1 200 OK\r\nx-pod: b\r\ntransfer-encoding: chunked\r\n\r\n",
            b"7\r\nx-pod: \r\n0\r\nx-pod: trailer\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nx-pod: c\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nx-pod: d\r\ncontent-length: 5\r\n\r\nHTTP/1.1 200 OK\r\nx-pod: e\r\ncontent-length: 0\r\n\r\n",
        ];
        // The fifth response answers a HEAD: its Content-Length announces no bytes on the wire.
        let out = through(Some("X-Pod,Content-Length"), &[false, false, false, true, false], stream).await;
        let expected = b"HTTP/1.1 200 OK\r\nX-Pod: a\r\nContent-Length: 22\r\n\r\nx-pod: body bytes stay\
HTTP/1.1 200 OK\r\nX-Pod: b\r\ntransfer-encoding: chunked\r\n\r\n7\r\nx-pod: \r\n0\r\nx-pod: trailer\r\n\r\n\
HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-Pod: c\r\n\r\n\
HTTP/1.1 200 OK\r\nX-Pod: d\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nX-Pod: e\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(expected));
    }

    #[tokio::test]
    async fn heads_split_across_writes_and_close_delimited_bodies_are_handled() {
        let out = through(
            Some("X-Pod"),
            &[false],
            &[b"HTTP/1.1 200 OK\r\nx-p", b"od: a\r", b"\n\r\nuntil close: x-pod: 1\r\n\r\n"],
        )
        .await;
        assert_eq!(out, b"HTTP/1.1 200 OK\r\nX-Pod: a\r\n\r\nuntil close: x-pod: 1\r\n\r\n");
        let untouched = through(None, &[], &[b"HTTP/1.1 200 OK\r\nx-pod: a\r\n\r\n"]).await;
        assert_eq!(untouched, b"HTTP/1.1 200 OK\r\nx-pod: a\r\n\r\n");
    }
}
