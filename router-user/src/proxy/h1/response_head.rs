//! Writing a response head to an HTTP/1.x client and choosing how its body is framed, as the router has
//! always answered (the rules of hyper's server, which wrote this side before):
//! - the status line says HTTP/1.0 to an HTTP/1.0 client, with the pod's own reason phrase when it had one;
//! - `Content-Length` is kept when the response has one, else set from a body of known length; a body of
//!   unknown length is chunked for HTTP/1.1 and delimited by the close for HTTP/1.0;
//! - HEAD, 1xx, 204, 304 and a 2xx to CONNECT carry no body; `Transfer-Encoding` and `Trailer` go only where a
//!   chunked body can;
//! - `Connection: close` is added when the client asked to close, `keep-alive` for an HTTP/1.0 client that
//!   asked to keep the connection; a `close` from the response closes the connection after it;
//! - `date` is added when the response has none;
//! - header names go in lower case, or as ROUTER_H1_CASE_ADJUST spells them.

use http::header::{self, HeaderName, HeaderValue};
use http::response::Parts;
use http::{Method, StatusCode, Version};

use super::date::append_date;
use crate::proxy::header_case::HeaderCaseMap;
use crate::proxy::headers::{ends_in_chunked, has_token};

/// What the request said that shapes the response head.
#[derive(Clone, Copy, Debug)]
pub struct RequestSide<'a> {
    pub version: Version,
    pub method: &'a Method,
    /// The client lets the connection carry another request.
    pub keep_alive: bool,
    pub case: Option<&'a HeaderCaseMap>,
}

/// The response body as far as its framing goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodySize {
    /// No body at all.
    None,
    Known(u64),
    Unknown,
}

/// How the body bytes go on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyEncoding {
    /// Exactly this many bytes (zero: none).
    Length(u64),
    /// Chunked; trailers with these names go after the last chunk (the names the `Trailer` header listed).
    Chunked(Vec<HeaderName>),
    /// Raw bytes until the connection closes.
    UntilClose,
}

#[derive(Debug)]
pub struct EncodedHead {
    pub encoding: BodyEncoding,
    /// The connection carries another request after this response.
    pub keep_alive: bool,
}

/// The response's own headers cannot be written (a `Content-Length` that is not a number, or two that differ).
#[derive(Debug, thiserror::Error)]
#[error("invalid response framing header: {0}")]
pub struct InvalidResponseHead(&'static str);

/// Writes the head of `parts` to `out`.
pub fn encode_response_head(
    parts: &mut Parts,
    body: BodySize,
    request: RequestSide<'_>,
    out: &mut Vec<u8>,
) -> Result<EncodedHead, InvalidResponseHead> {
    let status = parts.status;
    let http10 = request.version == Version::HTTP_10;
    adjust_connection(parts, http10, request.keep_alive);
    let mut keep_alive = request.keep_alive && status != StatusCode::SWITCHING_PROTOCOLS;
    if http10 && !has_connection_token(parts, b"keep-alive") {
        keep_alive = false;
    }
    let connect_success = request.method == Method::CONNECT && status.is_success();
    let no_body = *request.method == Method::HEAD
        || connect_success
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let may_have_length = !(status.is_informational()
        || connect_success
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED);
    let can_chunk = !http10 && !no_body;

    status_line(parts, http10, out);
    let writer = NameWriter(request.case);
    let mut encoding = None;
    let mut length_value: Option<u64> = None;
    let mut wrote_date = false;
    let mut trailer_names = Vec::new();
    let (mut transfer_encoding, mut connection, mut trailer) = (Vec::new(), Vec::new(), Vec::new());
    for (name, value) in parts.headers.iter() {
        match *name {
            header::CONTENT_LENGTH => {
                if encoding.is_some() && length_value.is_none() {
                    return Err(InvalidResponseHead("content-length with transfer-encoding"));
                }
                let Some(length) = std::str::from_utf8(value.as_bytes()).ok().and_then(|v| v.parse::<u64>().ok())
                else {
                    return Err(InvalidResponseHead("content-length"));
                };
                match length_value {
                    Some(previous) if previous != length => return Err(InvalidResponseHead("content-length")),
                    Some(_) => continue,
                    None => {}
                }
                if body == BodySize::None && *request.method != Method::HEAD {
                    // No body to send: the length header only stands for a HEAD response.
                    continue;
                }
                length_value = Some(length);
                let length = match body {
                    BodySize::Known(known) => known,
                    _ => length,
                };
                encoding = Some(BodyEncoding::Length(length));
                writer.line(out, name, value.as_bytes());
            }
            header::TRANSFER_ENCODING => {
                if length_value.is_some() {
                    return Err(InvalidResponseHead("transfer-encoding with content-length"));
                }
                if can_chunk {
                    transfer_encoding.push(value);
                    encoding = Some(BodyEncoding::Chunked(Vec::new()));
                }
            }
            header::CONNECTION => connection.push(value),
            header::TRAILER => {
                if can_chunk {
                    trailer.push(value);
                    let names = value.to_str().unwrap_or_default().split(',');
                    trailer_names.extend(names.filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok()));
                }
            }
            _ => {
                wrote_date |= *name == header::DATE;
                writer.line(out, name, value.as_bytes());
            }
        }
    }
    if !transfer_encoding.is_empty() {
        let chunked_last = transfer_encoding.last().is_some_and(|v| ends_in_chunked(v.as_bytes()));
        let mut joined = join(&transfer_encoding);
        if !chunked_last {
            joined.extend_from_slice(b", chunked");
        }
        writer.line(out, &header::TRANSFER_ENCODING, &joined);
    }
    if !connection.is_empty() {
        if connection.iter().any(|v| has_token(v.as_bytes(), b"close")) {
            keep_alive = false;
        }
        writer.line(out, &header::CONNECTION, &join(&connection));
    }
    if !trailer.is_empty() {
        writer.line(out, &header::TRAILER, &join(&trailer));
    }
    let mut encoding = match encoding {
        Some(BodyEncoding::Chunked(_)) => BodyEncoding::Chunked(trailer_names),
        Some(encoding) => encoding,
        None => match body {
            BodySize::Unknown if !can_chunk => BodyEncoding::UntilClose,
            BodySize::Unknown => {
                writer.line(out, &header::TRANSFER_ENCODING, b"chunked");
                BodyEncoding::Chunked(trailer_names)
            }
            BodySize::None | BodySize::Known(0) => {
                if may_have_length && *request.method != Method::HEAD {
                    writer.line(out, &header::CONTENT_LENGTH, b"0");
                }
                BodyEncoding::Length(0)
            }
            BodySize::Known(_) if !may_have_length => BodyEncoding::Length(0),
            BodySize::Known(length) => {
                writer.line(out, &header::CONTENT_LENGTH, itoa::Buffer::new().format(length).as_bytes());
                BodyEncoding::Length(length)
            }
        },
    };
    if no_body {
        encoding = BodyEncoding::Length(0);
    }
    if encoding == BodyEncoding::UntilClose {
        keep_alive = false;
    }
    if !wrote_date {
        writer.name(out, &header::DATE);
        append_date(out);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(EncodedHead { encoding, keep_alive })
}

fn status_line(parts: &Parts, http10: bool, out: &mut Vec<u8>) {
    let reason = parts.extensions.get::<hyper::ext::ReasonPhrase>();
    if !http10 && parts.status == StatusCode::OK && reason.is_none() {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        return;
    }
    out.extend_from_slice(if http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    out.extend_from_slice(parts.status.as_str().as_bytes());
    out.push(b' ');
    match reason {
        Some(reason) => out.extend_from_slice(reason.as_bytes()),
        None => out.extend_from_slice(parts.status.canonical_reason().unwrap_or("<none>").as_bytes()),
    }
    out.extend_from_slice(b"\r\n");
}

/// `close` when the client asked to close an HTTP/1.1 connection; `keep-alive` for an HTTP/1.0 client that asked
/// to keep it.
fn adjust_connection(parts: &mut Parts, http10: bool, keep_alive: bool) {
    let value = match (http10, keep_alive) {
        (true, true) if !has_connection_token(parts, b"keep-alive") => "keep-alive",
        (false, false) if !has_connection_token(parts, b"close") => "close",
        _ => return,
    };
    parts.headers.append(header::CONNECTION, HeaderValue::from_static(value));
}

fn has_connection_token(parts: &Parts, token: &[u8]) -> bool {
    parts.headers.get_all(header::CONNECTION).iter().any(|v| has_token(v.as_bytes(), token))
}

/// Several values of one field on one line, comma-separated.
fn join(values: &[&HeaderValue]) -> Vec<u8> {
    let mut joined = Vec::new();
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            joined.extend_from_slice(b", ");
        }
        joined.extend_from_slice(value.as_bytes());
    }
    joined
}

/// Writes header names in lower case or as the case map spells them.
struct NameWriter<'a>(Option<&'a HeaderCaseMap>);

impl NameWriter<'_> {
    fn name(&self, out: &mut Vec<u8>, name: &HeaderName) {
        let name = name.as_str().as_bytes();
        out.extend_from_slice(self.0.map_or(name, |map| map.adjust(name)));
        out.extend_from_slice(b": ");
    }

    fn line(&self, out: &mut Vec<u8>, name: &HeaderName, value: &[u8]) {
        self.name(out, name);
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Response;

    fn encode(
        response: Response<()>,
        body: BodySize,
        version: Version,
        method: &Method,
        keep: bool,
    ) -> (String, EncodedHead) {
        let (mut parts, ()) = response.into_parts();
        let mut out = Vec::new();
        let side = RequestSide { version, method, keep_alive: keep, case: None };
        let head = encode_response_head(&mut parts, body, side, &mut out).expect("valid");
        let text = String::from_utf8(out).expect("ascii");
        let without_date: Vec<&str> = text.split("\r\n").filter(|line| !line.starts_with("date: ")).collect();
        (without_date.join("\r\n"), head)
    }

    #[test]
    fn framing_follows_the_body_and_the_request() {
        let ok = || Response::new(());
        let (text, head) = encode(ok(), BodySize::Known(5), Version::HTTP_11, &Method::GET, true);
        assert_eq!(text, "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n");
        assert_eq!((head.encoding, head.keep_alive), (BodyEncoding::Length(5), true));
        let (text, head) = encode(ok(), BodySize::Unknown, Version::HTTP_11, &Method::GET, false);
        assert_eq!(text, "HTTP/1.1 200 OK\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n");
        assert_eq!((head.encoding, head.keep_alive), (BodyEncoding::Chunked(Vec::new()), false));
        let (text, head) = encode(ok(), BodySize::Unknown, Version::HTTP_10, &Method::GET, true);
        assert_eq!(text, "HTTP/1.0 200 OK\r\nconnection: keep-alive\r\n\r\n");
        assert_eq!((head.encoding, head.keep_alive), (BodyEncoding::UntilClose, false));
        let (text, head) = encode(ok(), BodySize::None, Version::HTTP_11, &Method::GET, true);
        assert_eq!(text, "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        assert_eq!(head.encoding, BodyEncoding::Length(0));
    }

    #[test]
    fn head_responses_keep_the_pods_length_and_send_no_body() {
        let mut response = Response::new(());
        response.headers_mut().insert("content-length", HeaderValue::from_static("1024"));
        let (text, head) = encode(response, BodySize::None, Version::HTTP_11, &Method::HEAD, true);
        assert_eq!(text, "HTTP/1.1 200 OK\r\ncontent-length: 1024\r\n\r\n");
        assert_eq!(head.encoding, BodyEncoding::Length(0));
        let mut no_content = Response::new(());
        *no_content.status_mut() = StatusCode::NO_CONTENT;
        let (text, _) = encode(no_content, BodySize::None, Version::HTTP_11, &Method::GET, true);
        assert_eq!(text, "HTTP/1.1 204 No Content\r\n\r\n");
    }

    #[test]
    fn a_reason_phrase_and_case_map_are_written() {
        let mut response = Response::new(());
        *response.status_mut() = StatusCode::NOT_FOUND;
        response.extensions_mut().insert(hyper::ext::ReasonPhrase::from_static(b"Nothing Here"));
        response.headers_mut().insert("x-request-id", HeaderValue::from_static("7"));
        let map = HeaderCaseMap::parse("X-Request-ID,Content-Length").expect("valid").expect("some");
        let (mut parts, ()) = response.into_parts();
        let mut out = Vec::new();
        let side = RequestSide { version: Version::HTTP_11, method: &Method::GET, keep_alive: true, case: Some(&map) };
        encode_response_head(&mut parts, BodySize::Known(2), side, &mut out).expect("valid");
        let text = String::from_utf8(out).expect("ascii");
        assert!(text.starts_with("HTTP/1.1 404 Nothing Here\r\nX-Request-ID: 7\r\nContent-Length: 2\r\n"), "{text}");
    }
}
