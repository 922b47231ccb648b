//! HTTP/1.1 message heads on the pod side: the request head the router writes, and the response head it
//! parses (status, headers taken without copying from the read buffer, how the body is framed, whether the
//! connection may carry another request).

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{request, Method, StatusCode, Version};

use crate::proxy::header_case::AdjustedCase;
use crate::proxy::headers::{ends_in_chunked, has_token};

/// At most this many response headers (hyper's default too).
const MAX_HEADERS: usize = 100;
/// Room for the framing header the router may add: `content-length: <20 digits>\r\n` or
/// `transfer-encoding: chunked\r\n`, in any case.
const FRAMING_ROOM: usize = 40;
/// A response head larger than this is refused.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How the request body goes to the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestFraming {
    /// No body (and no framing header added).
    Empty,
    /// The bytes as they come: the headers carry a Content-Length.
    Raw,
    /// Chunked transfer coding, by the router.
    Chunked,
}

/// How the response body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseFraming {
    Empty,
    Length(u64),
    Chunked,
    /// Until the pod closes the connection.
    Close,
}

#[derive(Debug)]
pub struct ResponseHead {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The pod's reason phrase when it is not the standard one for the status.
    pub reason: Option<Bytes>,
    pub framing: ResponseFraming,
    /// The pod lets the connection carry another request after this response.
    pub keep_alive: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HeadError {
    #[error("malformed response head: {0}")]
    Malformed(httparse::Error),
    #[error("response head larger than {MAX_HEAD_BYTES} bytes")]
    TooLarge,
    #[error("invalid Content-Length")]
    BadContentLength,
    #[error("invalid header")]
    BadHeader,
}

/// Writes the request line and headers for `parts`, adding the framing header the body needs when the
/// client's headers do not carry one. Returns how the body is to be framed.
pub fn encode_request(
    parts: &request::Parts,
    body_empty: bool,
    exact_length: Option<u64>,
    out: &mut BytesMut,
) -> RequestFraming {
    let target = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let method = parts.method.as_str();
    // The head's exact size (and room for a framing header), so the buffer is allocated once: growing it
    // while writing cost a reallocation and a copy per request.
    let fields: usize = parts.headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
    out.reserve(method.len() + 1 + target.len() + 11 + fields + 2 + FRAMING_ROOM);
    out.put_slice(method.as_bytes());
    out.put_u8(b' ');
    out.put_slice(target.as_bytes());
    out.put_slice(b" HTTP/1.1\r\n");
    let case = parts.extensions.get::<AdjustedCase>().map(|adjusted| &*adjusted.0);
    let name_of = |name: &'static [u8]| case.map_or(name, |case| case.adjust(name));
    for (name, value) in &parts.headers {
        let name = name.as_str().as_bytes();
        put_header(out, case.map_or(name, |case| case.adjust(name)), value.as_bytes());
    }
    let chunked = parts
        .headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .next_back()
        .is_some_and(|v| ends_in_chunked(v.as_bytes()));
    let framing = if chunked {
        RequestFraming::Chunked
    } else if parts.headers.contains_key(header::CONTENT_LENGTH) {
        RequestFraming::Raw
    } else if body_empty {
        RequestFraming::Empty
    } else if let Some(length) = exact_length {
        put_header(out, name_of(b"content-length"), length.to_string().as_bytes());
        RequestFraming::Raw
    } else {
        put_header(out, name_of(b"transfer-encoding"), b"chunked");
        RequestFraming::Chunked
    };
    out.put_slice(b"\r\n");
    framing
}

fn put_header(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.put_slice(name);
    out.put_slice(b": ");
    out.put_slice(value);
    out.put_slice(b"\r\n");
}

/// Parses a response head at the start of `buf`. `Ok(None)`: not complete yet. On success the head's bytes
/// are split off `buf`; the rest (body bytes already read) stays.
pub fn parse_response(buf: &mut BytesMut, method: &Method) -> Result<Option<ResponseHead>, HeadError> {
    // Uninitialised slots: httparse fills the ones it uses, and zeroing 100 of them per response showed in profiles.
    let mut slots = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    let length = match config.parse_response_with_uninit_headers(&mut response, buf, &mut slots) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => return Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(HeadError::Malformed(error)),
    };
    let base = buf.as_ptr() as usize;
    let span = |part: &[u8]| (part.as_ptr() as usize - base, part.len());
    let code = response.code.unwrap_or_default();
    let version = if response.version == Some(0) { Version::HTTP_10 } else { Version::HTTP_11 };
    // A reason holding obs-text comes back from httparse as a static "" outside `buf`: the standard one is used.
    let reason = response.reason.filter(|r| !r.is_empty()).map(|r| span(r.as_bytes()));
    let spans: Vec<((usize, usize), (usize, usize))> =
        response.headers.iter().map(|h| (span(h.name.as_bytes()), span(h.value))).collect();
    let status = StatusCode::from_u16(code).map_err(|_| HeadError::Malformed(httparse::Error::Status))?;

    let head = buf.split_to(length).freeze();
    let slice = |(start, len): (usize, usize)| head.slice(start..start + len);
    let mut headers = HeaderMap::with_capacity(spans.len());
    for (name, value) in spans {
        let name = HeaderName::from_bytes(&head[name.0..name.0 + name.1]).map_err(|_| HeadError::BadHeader)?;
        let value = HeaderValue::from_maybe_shared(slice(value)).map_err(|_| HeadError::BadHeader)?;
        headers.append(name, value);
    }
    let reason = reason
        .map(slice)
        .filter(|r| status.canonical_reason().is_none_or(|canonical| canonical.as_bytes() != &r[..]) && !r.is_empty());
    let framing = response_framing(status, method, &headers)?;
    let conflicting = headers.contains_key(header::TRANSFER_ENCODING) && headers.contains_key(header::CONTENT_LENGTH);
    let keep_alive = !conflicting && framing != ResponseFraming::Close && persistent(version, &headers);
    Ok(Some(ResponseHead { status, headers, reason, framing, keep_alive }))
}

/// RFC 9112 section 6.3, for a response to `method`.
fn response_framing(status: StatusCode, method: &Method, headers: &HeaderMap) -> Result<ResponseFraming, HeadError> {
    if method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(ResponseFraming::Empty);
    }
    if let Some(coding) = headers.get_all(header::TRANSFER_ENCODING).iter().next_back() {
        return Ok(if ends_in_chunked(coding.as_bytes()) { ResponseFraming::Chunked } else { ResponseFraming::Close });
    }
    let mut length = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let text = std::str::from_utf8(part.trim_ascii()).map_err(|_| HeadError::BadContentLength)?;
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(HeadError::BadContentLength);
            }
            let parsed: u64 = text.parse().map_err(|_| HeadError::BadContentLength)?;
            if length.is_some_and(|seen| seen != parsed) {
                return Err(HeadError::BadContentLength);
            }
            length = Some(parsed);
        }
    }
    Ok(match length {
        Some(0) => ResponseFraming::Empty,
        Some(length) => ResponseFraming::Length(length),
        None => ResponseFraming::Close,
    })
}

/// HTTP/1.1 stays open unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
fn persistent(version: Version, headers: &HeaderMap) -> bool {
    let has = |token: &[u8]| headers.get_all(header::CONNECTION).iter().any(|v| has_token(v.as_bytes(), token));
    match version {
        Version::HTTP_10 => has(b"keep-alive"),
        _ => !has(b"close"),
    }
}

#[cfg(test)]
mod tests;
