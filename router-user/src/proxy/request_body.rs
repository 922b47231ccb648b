//! A client request's body as the handler sees it, whoever read the request: hyper's server (HTTP/2), the
//! router's own HTTP/1.1 connection loop (`h1`), or another server's stream (HTTP/3, boxed).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::h1::OwnRequestBody;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug)]
pub enum RequestBody {
    Hyper(Incoming),
    Own(OwnRequestBody),
    /// A body read by a server outside `proxy` (an HTTP/3 request stream).
    Stream(UnsyncBoxBody<Bytes, BoxError>),
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Hyper(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            RequestBody::Own(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            RequestBody::Stream(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Hyper(body) => body.is_end_stream(),
            RequestBody::Own(body) => body.is_end_stream(),
            RequestBody::Stream(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Hyper(body) => body.size_hint(),
            RequestBody::Own(body) => body.size_hint(),
            RequestBody::Stream(body) => body.size_hint(),
        }
    }
}
