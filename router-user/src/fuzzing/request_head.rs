//! A client's HTTP/1.x request heads as the router's own client-side loop reads them (`proxy/h1/request_head.rs`):
//! the framing rules hold for every head it takes, every prefix of the input needs more bytes or gives the whole
//! input's answer, and pipelined heads are read one after the other from the same buffer.

use bytes::BytesMut;
use http::{header, HeaderMap, Method, Uri, Version};

use super::prefixes;
use crate::proxy::h1::request_head::{parse_request_head, BodyFraming, HeadError, RequestHead};

/// Head limits the first byte picks from: tiny ones reach the 431 paths, the default (ROUTER_BUF_SIZE less
/// ROUTER_MAX_REWRITE_SIZE) the usual ones.
const LIMITS: [usize; 4] = [16, 64, 1024, 32768 - 8192];
/// Pipelined heads read from one input at most.
const MAX_HEADS: usize = 16;

/// A head detached from the buffer, so answers of separate reads compare.
#[derive(Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per read of a fuzz input, compared and dropped
enum Outcome {
    NeedMore,
    Head {
        method: Method,
        uri: Uri,
        version: Version,
        headers: HeaderMap,
        framing: BodyFraming,
        keep_alive: bool,
        expect_continue: bool,
        wants_upgrade: bool,
        length: usize,
    },
    Error(HeadError),
}

fn outcome(wire: &[u8], limit: usize) -> Outcome {
    let mut buf = BytesMut::from(wire);
    match parse_request_head(&mut buf, limit) {
        Ok(None) => Outcome::NeedMore,
        Ok(Some(head)) => {
            let RequestHead { request, framing, keep_alive, expect_continue, wants_upgrade } = head;
            let (parts, ()) = request.into_parts();
            Outcome::Head {
                method: parts.method,
                uri: parts.uri,
                version: parts.version,
                headers: parts.headers,
                framing,
                keep_alive,
                expect_continue,
                wants_upgrade,
                length: wire.len() - buf.len(),
            }
        }
        Err(error) => Outcome::Error(error),
    }
}

/// The first byte picks the head limit; the rest is what the client sent on one connection.
pub fn request_head(data: &[u8]) {
    let Some((&selector, wire)) = data.split_first() else { return };
    let limit = LIMITS[usize::from(selector) % LIMITS.len()];
    let mut buf = BytesMut::from(wire);
    for _ in 0..MAX_HEADS {
        check_prefixes(&buf, limit);
        let before = buf.len();
        match parse_request_head(&mut buf, limit) {
            Ok(Some(head)) => {
                let length = before - buf.len();
                assert!(length > 0 && length <= limit, "a head of {length} bytes taken under a limit of {limit}");
                check_framing(&head);
                // The body is not read here: only a head without one leaves the next head at the front.
                if head.framing != BodyFraming::Empty || head.wants_upgrade {
                    return;
                }
            }
            Ok(None) => {
                assert!(buf.len() <= limit, "{} bytes waited for under a limit of {limit}", buf.len());
                return;
            }
            Err(_) => return,
        }
    }
}

/// What a taken head promises about its body and connection.
fn check_framing(head: &RequestHead) {
    let headers = head.request.headers();
    let http10 = head.request.version() == Version::HTTP_10;
    let transfer_encoding = headers.contains_key(header::TRANSFER_ENCODING);
    assert!(!(http10 && transfer_encoding), "Transfer-Encoding taken on HTTP/1.0");
    match head.framing {
        BodyFraming::Chunked => {
            assert!(transfer_encoding, "chunked without Transfer-Encoding");
            assert!(!headers.contains_key(header::CONTENT_LENGTH), "Content-Length kept beside Transfer-Encoding");
        }
        BodyFraming::Length(length) => {
            assert!(length > 0, "Length(0) instead of Empty");
            assert!(!transfer_encoding, "a length with Transfer-Encoding");
            let lengths: Vec<&[u8]> = headers.get_all(header::CONTENT_LENGTH).iter().map(|v| v.as_bytes()).collect();
            assert!(!lengths.is_empty(), "a length without Content-Length");
            for value in lengths {
                let text = std::str::from_utf8(value).expect("digits");
                assert_eq!(text.trim().parse::<u64>().ok(), Some(length), "Content-Length {text:?} read as {length}");
            }
        }
        BodyFraming::Empty => assert!(!transfer_encoding, "no body with Transfer-Encoding"),
    }
    if head.request.method() == Method::CONNECT {
        assert!(head.wants_upgrade, "CONNECT not handed over as a tunnel");
    }
}

/// Every prefix of the head at the front of `wire` needs more bytes or gives the whole input's answer.
fn check_prefixes(wire: &[u8], limit: usize) {
    let head_end = |answer: &Outcome| match answer {
        Outcome::Head { length, .. } => Some(*length),
        _ => None,
    };
    prefixes::check_prefixes(wire, |bytes| outcome(bytes, limit), &Outcome::NeedMore, head_end);
}
