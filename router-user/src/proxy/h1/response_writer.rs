//! Writing one response to the client: the head already encoded, then the body's frames as they come,
//! framed by the head's [`BodyEncoding`]. Frames ready at once go out with the head in one write; small
//! frames are copied behind what is pending, large ones written from their own buffer.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::{HeaderMap, HeaderName};
use hyper::body::Body;
use tokio::io::AsyncWrite;

use super::response_head::BodyEncoding;
use crate::proxy::request_body::BoxError;

/// Frames up to this size are copied behind the pending bytes; larger ones are written from their buffer.
const COPY_LIMIT: usize = 16 * 1024;
/// Pending bytes beyond which no further frame is taken before writing.
const COALESCE_LIMIT: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("writing to the client: {0}")]
    Io(#[from] io::Error),
    #[error("the response body failed: {0}")]
    Body(BoxError),
    #[error("the response body did not match its length")]
    Length,
}

pub struct ResponseWriter<'a> {
    /// The encoded head, then copied frames; `written` of it went out.
    out: &'a mut Vec<u8>,
    written: usize,
    /// A large frame behind `out`, and what follows it (`\r\n` after chunk data).
    large: Option<Bytes>,
    large_suffix: &'static [u8],
    encoding: BodyEncoding,
    /// Bytes still owed by a `Length` body.
    remaining: u64,
    body_done: bool,
}

impl<'a> ResponseWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>, encoding: BodyEncoding) -> Self {
        let remaining = match encoding {
            BodyEncoding::Length(length) => length,
            _ => 0,
        };
        // A body with nothing to send is not polled at all (HEAD, 204, 304, an empty length).
        let body_done = encoding == BodyEncoding::Length(0);
        ResponseWriter { out, written: 0, large: None, large_suffix: b"", encoding, remaining, body_done }
    }

    /// Drives the response out.
    pub fn poll_write<S, B>(&mut self, cx: &mut Context<'_>, io: &mut S, body: &mut B) -> Poll<Result<(), WriteError>>
    where
        S: AsyncWrite + Unpin,
        B: Body<Data = Bytes> + Unpin,
        B::Error: Into<BoxError>,
    {
        loop {
            if !self.body_done && self.large.is_none() && self.out.len() - self.written < COALESCE_LIMIT {
                match Pin::new(&mut *body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => {
                        match frame.into_data() {
                            Ok(data) => self.add_data(data)?,
                            Err(frame) => {
                                if let Ok(trailers) = frame.into_trailers() {
                                    self.finish(Some(&trailers))?;
                                }
                            }
                        }
                        continue;
                    }
                    Poll::Ready(Some(Err(error))) => return Poll::Ready(Err(WriteError::Body(error.into()))),
                    Poll::Ready(None) => {
                        self.finish(None)?;
                        continue;
                    }
                    Poll::Pending => {}
                }
            }
            if self.pending() {
                match self.poll_write_pending(cx, io) {
                    Poll::Ready(Ok(())) => continue,
                    Poll::Ready(Err(error)) => return Poll::Ready(Err(error.into())),
                    Poll::Pending => {}
                }
            } else if self.body_done {
                return Pin::new(&mut *io).poll_flush(cx).map_err(WriteError::Io);
            }
            return Poll::Pending;
        }
    }

    fn pending(&self) -> bool {
        self.written < self.out.len() || self.large.is_some()
    }

    fn add_data(&mut self, data: Bytes) -> Result<(), WriteError> {
        if data.is_empty() {
            return Ok(());
        }
        let suffix: &'static [u8] = match self.encoding {
            BodyEncoding::Length(_) => {
                if data.len() as u64 > self.remaining {
                    return Err(WriteError::Length);
                }
                self.remaining -= data.len() as u64;
                b""
            }
            BodyEncoding::Chunked(_) => {
                self.out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                b"\r\n"
            }
            BodyEncoding::UntilClose => b"",
        };
        if data.len() <= COPY_LIMIT {
            self.out.extend_from_slice(&data);
            self.out.extend_from_slice(suffix);
        } else {
            self.large = Some(data);
            self.large_suffix = suffix;
        }
        Ok(())
    }

    /// The body ended (with `trailers`, if it had some).
    fn finish(&mut self, trailers: Option<&HeaderMap>) -> Result<(), WriteError> {
        self.body_done = true;
        match &self.encoding {
            BodyEncoding::Length(_) if self.remaining > 0 => return Err(WriteError::Length),
            BodyEncoding::Chunked(allowed) => {
                let allowed: &[HeaderName] = allowed;
                // Queued behind any large frame: `out` is only appended to once that went out.
                let mut end = b"0\r\n".to_vec();
                for (name, value) in trailers.into_iter().flatten().filter(|(name, _)| allowed.contains(name)) {
                    end.extend_from_slice(name.as_str().as_bytes());
                    end.extend_from_slice(b": ");
                    end.extend_from_slice(value.as_bytes());
                    end.extend_from_slice(b"\r\n");
                }
                end.extend_from_slice(b"\r\n");
                self.queue_after_large(end);
            }
            _ => {}
        }
        Ok(())
    }

    fn queue_after_large(&mut self, bytes: Vec<u8>) {
        match self.large.take() {
            // Rare (a large frame then the end in the same poll): copy the frame so the order holds.
            Some(large) => {
                self.out.extend_from_slice(&large);
                self.out.extend_from_slice(self.large_suffix);
                self.out.extend_from_slice(&bytes);
            }
            None => self.out.extend_from_slice(&bytes),
        }
    }

    /// Writes what is pending; `Ready(Ok)` once all of it went.
    fn poll_write_pending<S: AsyncWrite + Unpin>(&mut self, cx: &mut Context<'_>, io: &mut S) -> Poll<io::Result<()>> {
        while self.pending() {
            let head = &self.out[self.written..];
            let large: &[u8] = self.large.as_deref().unwrap_or_default();
            let polled = if self.large.is_some() && io.is_write_vectored() {
                let slices = [IoSlice::new(head), IoSlice::new(large), IoSlice::new(self.large_suffix)];
                Pin::new(&mut *io).poll_write_vectored(cx, &slices)
            } else {
                let piece = [head, large, self.large_suffix].into_iter().find(|piece| !piece.is_empty());
                Pin::new(&mut *io).poll_write(cx, piece.unwrap_or_default())
            };
            let mut n = match polled {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            };
            let from_out = n.min(head.len());
            self.written += from_out;
            n -= from_out;
            if self.written == self.out.len() {
                self.out.clear();
                self.written = 0;
            }
            if let Some(large) = self.large.as_mut() {
                let from_large = n.min(large.len());
                large.advance(from_large);
                n -= from_large;
                if large.is_empty() {
                    if n >= self.large_suffix.len() || self.large_suffix.is_empty() {
                        self.large = None;
                        self.large_suffix = b"";
                    } else {
                        self.large_suffix = &self.large_suffix[n..];
                    }
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}
