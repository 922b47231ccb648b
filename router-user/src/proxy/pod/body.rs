//! A pod's response body, read off the pod connection by whoever polls it (the client connection's task):
//! by Content-Length, chunked (decoded; trailers passed on) or until the pod closes. When the body ends
//! cleanly on a connection that may persist, the connection goes back to the pool.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use super::chunked::{ChunkError, ChunkedDecoder, Decoded};
use super::conn::PodConn;
use super::head::ResponseFraming;
use super::pool::PodPool;
use super::PodConnection;

#[derive(Debug, thiserror::Error)]
pub enum PodBodyError {
    #[error("reading the pod's response body: {0}")]
    Io(#[from] std::io::Error),
    #[error("the pod closed the connection before the end of the response body")]
    Incomplete,
    #[error("pod response body: {0}")]
    Chunked(#[from] ChunkError),
}

#[derive(Debug)]
enum Framing {
    Length(u64),
    Chunked(ChunkedDecoder),
    Close,
    Done,
}

#[derive(Debug)]
pub struct PodBody {
    conn: Option<PodConn>,
    framing: Framing,
    /// Where the connection goes when the body ends, if it may carry another request.
    pool: Option<Arc<PodPool>>,
    /// How the exchange's connection was had (for the metrics; carried here rather than as a response
    /// extension, which would cost two allocations per request).
    connection: Option<PodConnection>,
}

impl PodBody {
    pub fn new(conn: PodConn, framing: ResponseFraming, pool: Option<Arc<PodPool>>) -> PodBody {
        let framing = match framing {
            ResponseFraming::Empty | ResponseFraming::Length(0) => Framing::Done,
            ResponseFraming::Length(length) => Framing::Length(length),
            ResponseFraming::Chunked => Framing::Chunked(ChunkedDecoder::default()),
            ResponseFraming::Close => Framing::Close,
        };
        let mut body = PodBody { conn: Some(conn), framing, pool, connection: None };
        if matches!(body.framing, Framing::Done) {
            body.finish();
        }
        body
    }

    /// A body with nothing to read (the connection went elsewhere, e.g. into a tunnel).
    pub fn empty() -> PodBody {
        PodBody { conn: None, framing: Framing::Done, pool: None, connection: None }
    }

    /// How the exchange's pod connection was had (set by `PodClient::send` on every response it returns).
    pub fn connection(&self) -> Option<PodConnection> {
        self.connection
    }

    pub(super) fn set_connection(&mut self, connection: PodConnection) {
        self.connection = Some(connection);
    }

    /// The body is complete: the connection is pooled when allowed and nothing unread is left on it.
    fn finish(&mut self) {
        self.framing = Framing::Done;
        if let (Some(conn), Some(pool)) = (self.conn.take(), self.pool.take()) {
            if conn.buf.is_empty() {
                pool.put(conn);
            }
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, PodBodyError>>> {
        loop {
            let Some(conn) = self.conn.as_mut() else { return Poll::Ready(None) };
            match &mut self.framing {
                Framing::Done => return Poll::Ready(None),
                Framing::Length(remaining) => {
                    if !conn.buf.is_empty() {
                        let take = (*remaining).min(conn.buf.len() as u64);
                        let data = conn.buf.split_to(take as usize).freeze();
                        *remaining -= take;
                        if *remaining == 0 {
                            self.finish();
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                }
                Framing::Chunked(decoder) => match decoder.decode(&mut conn.buf)? {
                    Decoded::Data(data) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                    Decoded::Trailers(trailers) => return Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
                    Decoded::End => {
                        self.finish();
                        return Poll::Ready(None);
                    }
                    Decoded::NeedMore => {}
                },
                Framing::Close => {
                    if !conn.buf.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(conn.buf.split().freeze()))));
                    }
                }
            }
            if ready!(conn.poll_fill(cx))? == 0 {
                if let Framing::Close = self.framing {
                    self.pool = None;
                    self.finish();
                    return Poll::Ready(None);
                }
                return Poll::Ready(Some(Err(PodBodyError::Incomplete)));
            }
        }
    }
}

impl Body for PodBody {
    type Data = Bytes;
    type Error = PodBodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, PodBodyError>>> {
        self.get_mut().poll_next(cx)
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.framing, Framing::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.framing {
            Framing::Done => SizeHint::with_exact(0),
            Framing::Length(remaining) => SizeHint::with_exact(remaining),
            Framing::Chunked(_) | Framing::Close => SizeHint::default(),
        }
    }
}
