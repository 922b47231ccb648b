//! The answer to an HTTP/1 client whose request head did not arrive within ROUTER_SLOWLORIS_TIMEOUT
//! (HAProxy's `timeout http-request`): 408 with HAProxy's small HTML page, written straight to the socket by
//! `ClientIo` before the connection closes (the server sees only its read fail). Not sent when the
//! keep-alive timer closes an idle connection (HAProxy's `timeout http-keep-alive` closes silently), nor, with
//! ROUTER_HTTP_IGNORE_PROBES, to a connection that never sent a byte.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

/// The page's text is HAProxy's own 408 page, so that clients and monitors see what they saw before (a
/// macro so that `concat!` takes it).
macro_rules! page {
    () => {
        "<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n"
    };
}

/// The whole response as written on the wire (the length is checked by a test below).
pub const REQUEST_TIMEOUT_REPLY: &str = concat!(
    // HAProxy's reason phrase, as clients and monitors of the OpenShift router have always read it.
    "HTTP/1.1 408 Request Time-out\r\n",
    "content-length: 110\r\n",
    "cache-control: no-cache\r\n",
    "connection: close\r\n",
    "content-type: text/html\r\n",
    "\r\n",
    page!(),
);

/// The reply on its way out: how much of it went.
#[derive(Debug, Default)]
pub struct TimeoutReply {
    written: usize,
}

impl TimeoutReply {
    /// Writes what is left of the reply to `io`, then flushes (a TLS stream holds it until then).
    pub fn poll_send<S: AsyncWrite + Unpin>(&mut self, io: &mut S, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let reply = REQUEST_TIMEOUT_REPLY.as_bytes();
        // Bounded: each round writes at least one byte or returns.
        while self.written < reply.len() {
            match Pin::new(&mut *io).poll_write(cx, &reply[self.written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Pin::new(io).poll_flush(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_length_is_the_body_length() {
        let (head, body) = REQUEST_TIMEOUT_REPLY.split_once("\r\n\r\n").expect("a head and a body");
        assert_eq!(body, page!());
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())), "{head}");
        assert!(body.contains("408 Request Time-out"));
    }
}
