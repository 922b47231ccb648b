//! Reading an HTTP/1.x request head from the connection's buffer: the request line and header section parsed
//! in place (httparse), the header values sharing the buffer's bytes, and the framing of the body that follows
//! decided as RFC 9112 section 6 says and as the router has always answered (the rules of hyper's server,
//! which served this side before):
//! - `Transfer-Encoding` on HTTP/1.0 is refused, and on HTTP/1.1 it must end in `chunked`; it wins over any
//!   `Content-Length`, which is then dropped and the connection closed after the response;
//! - several `Content-Length` values must agree (one is kept), and each must be plain digits;
//! - a head longer than the limit, or with more than [`MAX_HEADERS`] fields, is 431; a bad request line or
//!   field is 400; a request target longer than [`MAX_URI_LEN`] is 414.

use std::mem::MaybeUninit;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri, Version};

use crate::proxy::headers::{ends_in_chunked, has_token};

/// Header fields one request head may carry.
pub const MAX_HEADERS: usize = 100;
/// Header fields a request usually gains before it goes to a pod (X-Forwarded-*, Forwarded).
const FORWARDED_ROOM: usize = 6;
/// The longest request target taken.
pub const MAX_URI_LEN: usize = (u16::MAX - 1) as usize;

/// How the request body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFraming {
    Empty,
    Length(u64),
    Chunked,
}

#[derive(Debug)]
pub struct RequestHead {
    /// The request with an empty body: method, target, version, headers.
    pub request: Request<()>,
    pub framing: BodyFraming,
    /// The client lets the connection carry another request after this one.
    pub keep_alive: bool,
    /// `Expect: 100-continue`: the client waits for a 100 before it sends the body.
    pub expect_continue: bool,
    /// An `Upgrade` (HTTP/1.1) or CONNECT request.
    pub wants_upgrade: bool,
}

/// Why a head was refused: the status the client gets before the connection is closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("malformed request head: {0}")]
    Malformed(&'static str),
    #[error("request head too large")]
    TooLarge,
    #[error("request target too long")]
    UriTooLong,
}

impl HeadError {
    pub fn status(self) -> StatusCode {
        match self {
            HeadError::Malformed(_) => StatusCode::BAD_REQUEST,
            HeadError::TooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            HeadError::UriTooLong => StatusCode::URI_TOO_LONG,
        }
    }
}

/// Takes one request head from the front of `buf` when it is complete (`Ok(None)`: more bytes are needed).
/// `limit` bounds the request line and header section together.
pub fn parse_request_head(buf: &mut BytesMut, limit: usize) -> Result<Option<RequestHead>, HeadError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut []);
    let config = httparse::ParserConfig::default();
    // Only the first `limit` bytes are read: a head that has not ended by then is too large whatever follows,
    // so the answer does not depend on how many bytes past the limit one read brought (a malformed field
    // beyond it would otherwise turn 431 into 400).
    let window = &buf[..buf.len().min(limit)];
    let (length, method, target, minor, fields) =
        match config.parse_request_with_uninit_headers(&mut parsed, window, &mut slots) {
            Ok(httparse::Status::Complete(length)) => {
                let target = parsed.path.unwrap_or_default();
                if target.len() > MAX_URI_LEN {
                    return Err(HeadError::UriTooLong);
                }
                let method = Method::from_bytes(parsed.method.unwrap_or_default().as_bytes())
                    .map_err(|_| HeadError::Malformed("method"))?;
                let base = buf.as_ptr() as usize;
                let range = |part: &[u8]| {
                    let start = part.as_ptr() as usize - base;
                    (start, start + part.len())
                };
                let target = range(target.as_bytes());
                let mut fields = Vec::with_capacity(parsed.headers.len());
                for field in parsed.headers.iter() {
                    fields.push((range(field.name.as_bytes()), range(field.value)));
                }
                (length, method, target, parsed.version.unwrap_or(1), fields)
            }
            Ok(httparse::Status::Partial) if buf.len() > limit => return Err(HeadError::TooLarge),
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
            Err(httparse::Error::Token) if parsed.method.is_none() => return Err(HeadError::Malformed("method")),
            Err(httparse::Error::Token) => return Err(HeadError::Malformed("request target")),
            Err(httparse::Error::Version) => return Err(HeadError::Malformed("version")),
            Err(_) => return Err(HeadError::Malformed("header field")),
        };
    let head = buf.split_to(length).freeze();
    let uri = Uri::from_maybe_shared(head.slice(target.0..target.1)).map_err(|_| HeadError::Malformed("target"))?;
    let http11 = minor == 1;
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = if http11 { Version::HTTP_11 } else { Version::HTTP_10 };
    let found = read_fields(&head, &fields, http11, request.headers_mut())?;
    let Fields { framing, keep_alive, expect_continue, wants_upgrade } = found;
    let wants_upgrade = wants_upgrade || request.method() == Method::CONNECT;
    Ok(Some(RequestHead { request, framing, keep_alive, expect_continue, wants_upgrade }))
}

/// Where a field's name and value lie in the head's bytes: (start, end) of each.
type FieldRange = ((usize, usize), (usize, usize));

/// What the header fields say about the connection and the body.
struct Fields {
    framing: BodyFraming,
    keep_alive: bool,
    expect_continue: bool,
    wants_upgrade: bool,
}

/// The header fields (name and value ranges in `head`) into `headers`.
fn read_fields(
    head: &Bytes,
    fields: &[FieldRange],
    http11: bool,
    headers: &mut HeaderMap,
) -> Result<Fields, HeadError> {
    let mut framing = BodyFraming::Empty;
    let mut keep_alive = http11;
    let mut saw_close = false;
    let mut expect_continue = false;
    let mut wants_upgrade = false;
    let (mut transfer_encoding, mut chunked_last, mut saw_length) = (false, false, false);
    let mut length = None;
    // Room for the forwarded headers the request gains on its way to a pod (`rewrite`), so the map is not
    // grown again per request.
    headers.reserve(fields.len() + FORWARDED_ROOM);
    for &((name_start, name_end), (value_start, value_end)) in fields {
        let name = HeaderName::from_bytes(&head[name_start..name_end]).map_err(|_| HeadError::Malformed("name"))?;
        let value = HeaderValue::from_maybe_shared(head.slice(value_start..value_end))
            .map_err(|_| HeadError::Malformed("value"))?;
        match name {
            header::TRANSFER_ENCODING => {
                if !http11 {
                    return Err(HeadError::Malformed("transfer-encoding on HTTP/1.0"));
                }
                transfer_encoding = true;
                if length.take().is_some() {
                    headers.remove(header::CONTENT_LENGTH);
                }
                chunked_last = ends_in_chunked(value.as_bytes());
                framing = BodyFraming::Chunked;
            }
            header::CONTENT_LENGTH => {
                saw_length = true;
                if transfer_encoding {
                    continue;
                }
                let parsed = content_length(value.as_bytes()).ok_or(HeadError::Malformed("content-length"))?;
                match length {
                    Some(previous) if previous != parsed => return Err(HeadError::Malformed("content-length")),
                    Some(_) => continue,
                    None => {
                        length = Some(parsed);
                        framing = if parsed == 0 { BodyFraming::Empty } else { BodyFraming::Length(parsed) };
                    }
                }
            }
            header::CONNECTION => {
                if saw_close || has_token(value.as_bytes(), b"close") {
                    saw_close = true;
                    keep_alive = false;
                } else if !keep_alive {
                    keep_alive = has_token(value.as_bytes(), b"keep-alive");
                }
            }
            header::EXPECT => expect_continue = value.as_bytes().eq_ignore_ascii_case(b"100-continue"),
            header::UPGRADE => wants_upgrade = http11,
            _ => {}
        }
        headers.append(name, value);
    }
    if transfer_encoding && !chunked_last {
        return Err(HeadError::Malformed("transfer-encoding not ending in chunked"));
    }
    if transfer_encoding && saw_length {
        keep_alive = false;
    }
    Ok(Fields { framing, keep_alive, expect_continue, wants_upgrade })
}

/// Plain decimal digits (no sign, no spaces), at most 19 of them.
fn content_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(wire: &str) -> Result<Option<RequestHead>, HeadError> {
        parse_request_head(&mut BytesMut::from(wire), 1024)
    }

    #[test]
    fn a_head_is_taken_only_once_complete_and_leaves_what_follows() {
        let wire = b"POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET";
        for end in 0..wire.len() - 6 {
            assert!(parse_request_head(&mut BytesMut::from(&wire[..end]), 1024).expect("valid").is_none(), "{end}");
        }
        let mut buf = BytesMut::from(&wire[..]);
        let head = parse_request_head(&mut buf, 1024).expect("valid").expect("complete");
        assert_eq!(&buf[..], b"abcGET");
        assert_eq!(head.request.method(), Method::POST);
        assert_eq!(head.request.uri().path(), "/a");
        assert_eq!(head.request.headers()["host"], "x");
        assert_eq!(head.framing, BodyFraming::Length(3));
        assert!(head.keep_alive);
    }

    #[test]
    fn framing_follows_transfer_encoding_then_content_length() {
        let chunked = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert_eq!(chunked.framing, BodyFraming::Chunked);
        assert!(!chunked.request.headers().contains_key("content-length"), "the length is dropped");
        assert!(!chunked.keep_alive, "a message with both closes its connection");
        let same = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n").expect("ok").expect("c");
        assert_eq!(same.framing, BodyFraming::Length(5));
        assert_eq!(same.request.headers().get_all("content-length").iter().count(), 1);
        for refused in [
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5 5\r\n\r\n",
            "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
        ] {
            assert!(matches!(parse(refused), Err(HeadError::Malformed(_))), "{refused:?}");
        }
    }

    #[test]
    fn connection_tokens_and_versions_decide_keep_alive() {
        let keep = |wire: &str| parse(wire).expect("valid").expect("complete").keep_alive;
        assert!(keep("GET / HTTP/1.1\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.1\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.0\r\n\r\n"));
        assert!(keep("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    }

    #[test]
    fn limits_give_431() {
        let long = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(1100));
        assert_eq!(parse(&long).expect_err("too large"), HeadError::TooLarge);
        let partial = format!("GET / HTTP/1.1\r\nx: {}", "a".repeat(1100));
        assert_eq!(parse(&partial).expect_err("too large before its end"), HeadError::TooLarge);
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "a: b\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(parse_request_head(&mut BytesMut::from(&many[..]), 4096).expect_err("many"), HeadError::TooLarge);
    }

    /// Found by the `request_head` fuzz target: a field broken only past the limit gave 400 when it arrived in
    /// the same read as the start of the head, and 431 when the head's first bytes came alone.
    #[test]
    fn a_head_past_the_limit_is_431_whatever_lies_beyond_it() {
        let wire = b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r /x HTTP/1.1\r\n\r\n";
        let whole = parse_request_head(&mut BytesMut::from(&wire[..]), 16).expect_err("too large");
        let first = parse_request_head(&mut BytesMut::from(&wire[..17]), 16).expect_err("too large");
        assert_eq!((whole, first), (HeadError::TooLarge, HeadError::TooLarge));
        let broken_early = parse_request_head(&mut BytesMut::from(&b"GET / HTTP/1.1\r\n\r x\r\n\r\n"[..]), 64);
        assert_eq!(broken_early.expect_err("malformed"), HeadError::Malformed("header field"));
    }
}
