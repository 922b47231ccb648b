//! A pod's HTTP/1.1 response as the router's pod client reads it: the head (informational heads skipped, as
//! the exchange skips them), then the body in the framing the head chose.

use bytes::BytesMut;
use http::{HeaderMap, Method, StatusCode};

use super::prefixes;
use crate::proxy::pod::chunked::{ChunkedDecoder, Decoded};
use crate::proxy::pod::head::{parse_response, HeadError, ResponseFraming};

/// The request methods whose answers differ in framing (HEAD: no body whatever the headers say).
const METHODS: [Method; 4] = [Method::GET, Method::HEAD, Method::POST, Method::DELETE];

/// A head detached from the buffer, so answers of separate reads compare.
#[derive(Debug, PartialEq)]
enum Outcome {
    NeedMore,
    Head {
        status: StatusCode,
        headers: HeaderMap,
        reason: Option<Vec<u8>>,
        framing: ResponseFraming,
        keep_alive: bool,
        length: usize,
    },
    Error(HeadError),
}

fn outcome(wire: &[u8], method: &Method) -> Outcome {
    let mut buf = BytesMut::from(wire);
    match parse_response(&mut buf, method) {
        Ok(None) => Outcome::NeedMore,
        Ok(Some(head)) => Outcome::Head {
            status: head.status,
            headers: head.headers,
            reason: head.reason.map(|reason| reason.to_vec()),
            framing: head.framing,
            keep_alive: head.keep_alive,
            length: wire.len() - buf.len(),
        },
        Err(error) => Outcome::Error(error),
    }
}

/// The first byte picks the request's method; the rest is what the pod sent.
pub fn pod_response(data: &[u8]) {
    let Some((&selector, wire)) = data.split_first() else { return };
    let method = &METHODS[usize::from(selector) % METHODS.len()];
    let mut buf = BytesMut::from(wire);
    let framing = loop {
        check_prefixes(&buf, method);
        match parse_response(&mut buf, method) {
            Ok(Some(head)) => {
                if head.keep_alive {
                    assert_ne!(head.framing, ResponseFraming::Close, "kept alive without a body length");
                }
                if head.status.is_informational() && head.status != StatusCode::SWITCHING_PROTOCOLS {
                    continue;
                }
                break head.framing;
            }
            Ok(None) | Err(_) => return,
        }
    };
    match framing {
        ResponseFraming::Length(length) => assert!(length > 0, "Length(0) instead of Empty"),
        ResponseFraming::Chunked => {
            let mut decoder = ChunkedDecoder::default();
            while let Ok(Decoded::Data(_) | Decoded::Trailers(_)) = decoder.decode(&mut buf) {}
        }
        ResponseFraming::Empty | ResponseFraming::Close => {}
    }
}

/// Every prefix of the head at the front of `wire` needs more bytes or gives the whole input's answer.
fn check_prefixes(wire: &[u8], method: &Method) {
    let head_end = |answer: &Outcome| match answer {
        Outcome::Head { length, .. } => Some(*length),
        _ => None,
    };
    prefixes::check_prefixes(wire, |bytes| outcome(bytes, method), &Outcome::NeedMore, head_end);
}
