//! An HTTP/3 request stream's body as an `http_body::Body`: its DATA frames, then its trailers. A stream the
//! client resets fails the body (the handler then answers 400 and the pod never gets a complete request, as
//! with a reset HTTP/2 stream).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use hyper::body::{Body, Frame};

use crate::proxy::BoxError;

type RecvStream = h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

pub struct StreamBody {
    stream: RecvStream,
    /// DATA frames are over (trailers may follow).
    data_done: bool,
    /// Nothing more comes.
    ended: bool,
    /// A frame read ahead by `looked_ahead`.
    first: Option<Result<Frame<Bytes>, BoxError>>,
}

impl StreamBody {
    pub fn new(stream: RecvStream) -> StreamBody {
        StreamBody { stream, data_done: false, ended: false, first: None }
    }

    /// The body after one look at what already arrived: a request whose stream ended with its head (a GET
    /// without a body) is then known to have none, which lets the handler try another endpoint after a failed
    /// connect, as it does for an HTTP/2 request whose HEADERS ended the stream.
    pub async fn looked_ahead(mut self) -> StreamBody {
        let polled = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut self).poll_frame(cx))).await;
        if let Poll::Ready(Some(frame)) = polled {
            self.first = Some(frame);
        }
        self
    }
}

impl Body for StreamBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.as_mut().get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(first));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        if !this.data_done {
            match this.stream.poll_recv_data(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(Some(mut data))) => {
                    let bytes = data.copy_to_bytes(data.remaining());
                    return Poll::Ready(Some(Ok(Frame::data(bytes))));
                }
                Poll::Ready(Ok(None)) => this.data_done = true,
                Poll::Ready(Err(error)) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(error.into())));
                }
            }
        }
        let polled = this.stream.poll_recv_trailers(cx);
        if polled.is_ready() {
            this.ended = true;
        }
        polled.map(|trailers| trailers.map_err(Into::into).transpose().map(|trailers| trailers.map(Frame::trailers)))
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.first.is_none()
    }
}
