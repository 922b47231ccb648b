//! A request body read off the client connection on demand. The connection loop owns the socket and its read
//! buffer; the handler (and the pod exchange under it) holds an [`OwnRequestBody`]. When the body is polled and
//! has nothing to give, it says so (`wanted`) and the loop's [`BodyFeed`] reads and decodes the next piece:
//! no bytes are read from the client before the pod side asks for them, as with hyper's server before. Both
//! halves usually run in the connection's task; hyper's clients (h2c, reencrypt) poll the body from their own
//! task, so each half wakes the other through the shared slot.
//!
//! `Expect: 100-continue`: the `100 Continue` goes out when the body is first wanted.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite};

use super::request_head::BodyFraming;
use crate::proxy::pod::chunked::{ChunkedDecoder, Decoded};

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
/// Room made in the read buffer before each read of body bytes.
const READ_ROOM: usize = 16 * 1024;

/// A body that could not be read whole: the client closed or reset the connection, its chunked framing was
/// malformed, or the client timeout passed.
#[derive(Clone, Debug, thiserror::Error)]
#[error("request body: {0}")]
pub struct BodyError(String);

/// What the two halves share.
#[derive(Debug, Default)]
struct Slot {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
    /// The last piece was delivered (after `data` or `trailers`, if set).
    end: bool,
    error: Option<BodyError>,
    /// The body was polled and had nothing to give.
    wanted: bool,
    body_waker: Option<Waker>,
    feeder_waker: Option<Waker>,
    /// The body was dropped before its end: nothing more is read for it.
    abandoned: bool,
}

fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn store_waker(place: &mut Option<Waker>, cx: &Context<'_>) {
    if !place.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
        *place = Some(cx.waker().clone());
    }
}

/// The handler's side.
#[derive(Debug)]
pub struct OwnRequestBody {
    /// `None` for a request without a body.
    slot: Option<Arc<Mutex<Slot>>>,
    hint: SizeHint,
    ended: bool,
}

impl OwnRequestBody {
    pub fn empty() -> OwnRequestBody {
        OwnRequestBody { slot: None, hint: SizeHint::with_exact(0), ended: true }
    }
}

impl Body for OwnRequestBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let Some(slot) = self.slot.clone() else { return Poll::Ready(None) };
        let mut shared = lock(&slot);
        if let Some(data) = shared.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(trailers) = shared.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        if shared.end {
            drop(shared);
            self.ended = true;
            return Poll::Ready(None);
        }
        if let Some(error) = &shared.error {
            return Poll::Ready(Some(Err(error.clone())));
        }
        shared.wanted = true;
        store_waker(&mut shared.body_waker, cx);
        // The loop polls the feed right after the handler in its own task; another task must wake it.
        let feeder = shared.feeder_waker.as_ref().filter(|waker| !waker.will_wake(cx.waker())).cloned();
        drop(shared);
        if let Some(feeder) = feeder {
            feeder.wake();
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

impl Drop for OwnRequestBody {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            lock(slot).abandoned = true;
        }
    }
}

enum Decoder {
    Length(u64),
    Chunked(ChunkedDecoder),
}

/// The connection loop's side.
pub struct BodyFeed {
    slot: Arc<Mutex<Slot>>,
    decoder: Decoder,
    /// Bytes of the `100 Continue` written, while one is owed.
    continue_written: Option<usize>,
    /// The whole body was read off the connection.
    finished: bool,
    /// Reading failed: the connection cannot go on.
    failed: bool,
}

impl BodyFeed {
    /// The two halves of a body framed by `framing` (`None` and an empty body for a request without one).
    pub fn new(framing: BodyFraming, expect_continue: bool) -> (Option<BodyFeed>, OwnRequestBody) {
        let (decoder, hint) = match framing {
            BodyFraming::Empty => return (None, OwnRequestBody::empty()),
            BodyFraming::Length(length) => (Decoder::Length(length), SizeHint::with_exact(length)),
            BodyFraming::Chunked => (Decoder::Chunked(ChunkedDecoder::strict()), SizeHint::default()),
        };
        let slot = Arc::new(Mutex::new(Slot::default()));
        let continue_written = expect_continue.then_some(0);
        let feed = BodyFeed { slot: slot.clone(), decoder, continue_written, finished: false, failed: false };
        (Some(feed), OwnRequestBody { slot: Some(slot), hint, ended: false })
    }

    /// The whole body was read: the connection may carry the next request.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Reads and decodes while the body wants more. `Ready(Ok)` once there is nothing more to do for it (read
    /// whole, failed as a body, or abandoned); `Ready(Err)` when the connection failed.
    pub fn poll_feed<S>(&mut self, cx: &mut Context<'_>, io: &mut S, buf: &mut BytesMut) -> Poll<io::Result<()>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        loop {
            if self.finished || self.failed {
                return Poll::Ready(Ok(()));
            }
            {
                let mut shared = lock(&self.slot);
                if shared.abandoned {
                    return Poll::Ready(Ok(()));
                }
                store_waker(&mut shared.feeder_waker, cx);
                if !shared.wanted || shared.data.is_some() || shared.trailers.is_some() {
                    return Poll::Pending;
                }
            }
            if let Some(written) = self.continue_written.as_mut() {
                while *written < CONTINUE.len() {
                    match Pin::new(&mut *io).poll_write(cx, &CONTINUE[*written..]) {
                        Poll::Ready(Ok(0)) => return self.fail(io::ErrorKind::WriteZero.into()),
                        Poll::Ready(Ok(n)) => *written += n,
                        Poll::Ready(Err(error)) => return self.fail(error),
                        Poll::Pending => return Poll::Pending,
                    }
                }
                match Pin::new(&mut *io).poll_flush(cx) {
                    Poll::Ready(Ok(())) => self.continue_written = None,
                    Poll::Ready(Err(error)) => return self.fail(error),
                    Poll::Pending => return Poll::Pending,
                }
            }
            match self.decode(buf) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(error) => {
                    self.deliver_error(error);
                    return Poll::Ready(Ok(()));
                }
            }
            buf.reserve(READ_ROOM);
            match tokio_util::io::poll_read_buf(Pin::new(&mut *io), cx, buf) {
                Poll::Ready(Ok(0)) => {
                    return self.fail(io::Error::new(io::ErrorKind::UnexpectedEof, "client closed in the body"))
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(error)) => return self.fail(error),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// After the response: takes what of the body is already buffered (no read), so that a body the pod did not
    /// want but the client sent whole does not cost the connection. True when the body is then finished.
    pub fn take_buffered(&mut self, buf: &mut BytesMut) -> bool {
        while !self.finished && !self.failed {
            match self.decode_piece(buf) {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        self.finished
    }

    /// Decodes one piece into the slot; false when more bytes are needed.
    fn decode(&mut self, buf: &mut BytesMut) -> Result<bool, BodyError> {
        let Some(piece) = self.decode_piece(buf)? else { return Ok(false) };
        let mut shared = lock(&self.slot);
        match piece {
            Piece::Data(data) => shared.data = Some(data),
            Piece::Trailers(trailers) => shared.trailers = Some(trailers),
            Piece::End => {}
        }
        shared.end = self.finished;
        shared.wanted = false;
        let waker = shared.body_waker.take();
        drop(shared);
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(true)
    }

    fn decode_piece(&mut self, buf: &mut BytesMut) -> Result<Option<Piece>, BodyError> {
        match &mut self.decoder {
            Decoder::Length(remaining) => {
                if buf.is_empty() {
                    return Ok(None);
                }
                let take = (*remaining).min(buf.len() as u64);
                *remaining -= take;
                self.finished = *remaining == 0;
                Ok(Some(Piece::Data(buf.split_to(take as usize).freeze())))
            }
            Decoder::Chunked(decoder) => match decoder.decode(buf) {
                Ok(Decoded::Data(data)) => Ok(Some(Piece::Data(data))),
                Ok(Decoded::Trailers(trailers)) => Ok(Some(Piece::Trailers(trailers))),
                Ok(Decoded::End) => {
                    self.finished = true;
                    Ok(Some(Piece::End))
                }
                Ok(Decoded::NeedMore) => Ok(None),
                Err(error) => {
                    self.failed = true;
                    Err(BodyError(error.to_string()))
                }
            },
        }
    }

    fn deliver_error(&mut self, error: BodyError) {
        self.failed = true;
        let mut shared = lock(&self.slot);
        shared.error = Some(error);
        let waker = shared.body_waker.take();
        drop(shared);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn fail(&mut self, error: io::Error) -> Poll<io::Result<()>> {
        self.deliver_error(BodyError(error.to_string()));
        Poll::Ready(Err(error))
    }
}

enum Piece {
    Data(Bytes),
    Trailers(HeaderMap),
    End,
}
