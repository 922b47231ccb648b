//! One request on a pod connection: the head and body are written while the response head is watched for,
//! in the polling task itself (no connection task, no channel). A pod may answer before it has read the
//! whole body (413, 401): then the answer is taken and the connection is not reused.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use http::Method;
use hyper::body::Body;
use tokio::io::AsyncWrite;

use super::chunked::{encode_chunk, encode_end};
use super::conn::PodConn;
use super::head::{parse_response, HeadError, RequestFraming, ResponseHead};
use crate::proxy::client_body::ClientBody;

#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("writing to the pod: {0}")]
    Write(#[source] io::Error),
    #[error("reading from the pod: {0}")]
    Read(#[source] io::Error),
    #[error("the pod closed the connection before responding")]
    Closed,
    #[error(transparent)]
    Head(#[from] HeadError),
    #[error("reading the client's request body: {0}")]
    ClientBody(#[source] crate::proxy::request_body::BoxError),
}

#[derive(Debug)]
pub struct ExchangeFailure {
    pub error: ExchangeError,
    /// Nothing came back and nothing of the client's was consumed: the request may go again on a new
    /// connection (a kept-alive connection the pod had just closed).
    pub retry_safe: bool,
    /// Nothing came back and the request had no body: the pod closed or reset the connection before answering
    /// (a pod killed mid-request). An idempotent request may then go to another endpoint.
    pub unanswered: bool,
}

pub struct Exchanged {
    pub head: ResponseHead,
    /// The whole request went out before the response head came back.
    pub request_complete: bool,
}

struct Progress<'a> {
    conn: &'a mut PodConn,
    out: BytesMut,
    body: &'a mut Option<ClientBody>,
    framing: RequestFraming,
    sent: bool,
    /// Writing failed: the pod may still have answered (and closed its read side), so its answer is read
    /// before this error is reported.
    write_error: Option<io::Error>,
    got_bytes: bool,
}

pub async fn exchange(
    conn: &mut PodConn,
    head: BytesMut,
    body: &mut Option<ClientBody>,
    framing: RequestFraming,
    method: &Method,
) -> Result<Exchanged, ExchangeFailure> {
    let retry_safe_body = body.is_none();
    let mut progress = Progress { conn, out: head, body, framing, sent: false, write_error: None, got_bytes: false };
    let result = poll_fn(|cx| progress.poll(cx, method)).await;
    let retry_safe = progress.conn.reused && !progress.got_bytes && retry_safe_body;
    let request_complete = progress.sent;
    match result {
        Ok(head) => Ok(Exchanged { head, request_complete }),
        Err(error) => {
            let head_error = matches!(error, ExchangeError::Head(_));
            let unanswered = !progress.got_bytes && retry_safe_body && !head_error;
            Err(ExchangeFailure { retry_safe: retry_safe && !head_error, unanswered, error })
        }
    }
}

impl Progress<'_> {
    fn poll(&mut self, cx: &mut Context<'_>, method: &Method) -> Poll<Result<ResponseHead, ExchangeError>> {
        if !self.sent && self.write_error.is_none() {
            match self.poll_send(cx) {
                Poll::Ready(Err(ExchangeError::Write(error))) => self.write_error = Some(error),
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) | Poll::Pending => {}
            }
        }
        loop {
            // An empty buffer (every response's first two polls: right after sending, and on the wake-up
            // before the read) holds no head to look for.
            let head = match self.conn.buf.is_empty() {
                true => None,
                false => parse_response(&mut self.conn.buf, method)?,
            };
            if let Some(head) = head {
                if head.status.is_informational() && head.status != http::StatusCode::SWITCHING_PROTOCOLS {
                    continue; // 100 Continue, 103 Early Hints: the final response follows
                }
                return Poll::Ready(Ok(head));
            }
            match self.conn.poll_fill(cx) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(self.failure(ExchangeError::Closed))),
                Poll::Ready(Ok(_)) => self.got_bytes = true,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(self.failure(ExchangeError::Read(error)))),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The error to report when no answer came: the write's, if writing failed first.
    fn failure(&mut self, read_side: ExchangeError) -> ExchangeError {
        self.write_error.take().map_or(read_side, ExchangeError::Write)
    }

    /// Writes what is buffered, then encodes body frames as they come; `Ready(Ok)` once everything is out.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ExchangeError>> {
        loop {
            while !self.out.is_empty() {
                match Pin::new(&mut self.conn.stream).poll_write(cx, &self.out) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(ExchangeError::Write(io::ErrorKind::WriteZero.into())))
                    }
                    Poll::Ready(Ok(n)) => self.out.advance(n),
                    Poll::Ready(Err(error)) => return Poll::Ready(Err(ExchangeError::Write(error))),
                    Poll::Pending => return Poll::Pending,
                }
            }
            let Some(body) = self.body.as_mut() else {
                self.sent = true;
                return Poll::Ready(Ok(()));
            };
            let chunked = self.framing == RequestFraming::Chunked;
            match Pin::new(body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    if chunked {
                        encode_end(None, &mut self.out);
                    }
                    *self.body = None;
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Err(ExchangeError::ClientBody(error))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if chunked => encode_chunk(&data, &mut self.out),
                    Ok(data) => self.out.extend_from_slice(&data),
                    Err(frame) => {
                        if let (true, Ok(trailers)) = (chunked, frame.into_trailers()) {
                            encode_end(Some(&trailers), &mut self.out);
                            *self.body = None;
                        }
                    }
                },
            }
        }
    }
}
