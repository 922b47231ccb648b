//! Response compression as the OpenShift router configures HAProxy with ROUTER_ENABLE_COMPRESSION
//! (`compression algo gzip`, `compression type` from ROUTER_COMPRESSION_MIME). A pod's response is gzipped
//! on its way to the client only when HAProxy 2.6 would: the client accepts gzip (an `Accept-Encoding` token
//! `gzip` or `*` with a q-value above 0) and is neither an HTTP/1.0 client nor an old `Mozilla/4` browser,
//! the request is not HEAD, the status is 200 to 203, the body's length is delimited (Content-Length,
//! chunked or HTTP/2), the pod did not encode it already (`Content-Encoding`), `Cache-Control` has no
//! `no-transform`, there is at most one well-formed ETag, and the `Content-Type` starts with one of the listed
//! types (and not with `multipart`; no Content-Type, no compression). Then Content-Length goes (chunked or
//! HTTP/2 framing carries the body), `Content-Encoding: gzip` and `Vary: Accept-Encoding` are added and a
//! strong ETag becomes weak. `Accept-Encoding` still reaches the pod, which may compress by itself. The body
//! is compressed at HAProxy's default level (`tune.comp.maxlevel` 1) and flushed after each piece the pod sends,
//! so a streamed response keeps streaming.

use std::io::Write;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode, Version};
use hyper::body::{Body, Frame};

/// The MIME types OpenShift's template compresses when ROUTER_COMPRESSION_MIME is not set.
pub const DEFAULT_COMPRESSION_MIME: &str = "text/html text/plain text/css";

/// HAProxy's default `tune.comp.maxlevel`.
const GZIP_LEVEL: u32 = 1;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which responses are compressed: `compression type`'s list, matched as HAProxy does (case-insensitive
/// prefix of the Content-Type value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseCompression {
    types: Vec<String>,
}

impl ResponseCompression {
    /// `types` as ROUTER_COMPRESSION_MIME writes them: separated by spaces.
    pub fn new(types: &str) -> Self {
        Self { types: types.split_ascii_whitespace().map(str::to_ascii_lowercase).collect() }
    }

    /// The request side of the decision: the client takes gzip from the router for this request.
    pub fn client_accepts(&self, method: &Method, version: Version, headers: &HeaderMap) -> bool {
        *method != Method::HEAD
            && version >= Version::HTTP_11
            && !is_old_mozilla(headers)
            && headers.get_all(header::ACCEPT_ENCODING).iter().any(|v| accepts_gzip(v.as_bytes()))
    }

    /// The response side, for a client that accepts gzip: true when the response is to be compressed, its
    /// headers then rewritten for the compressed body. `length_delimited`: the pod's body ends by its framing
    /// (Content-Length, chunked, HTTP/2), not by closing the connection.
    pub fn compress_response(&self, status: StatusCode, headers: &mut HeaderMap, length_delimited: bool) -> bool {
        let compress = (200..=203).contains(&status.as_u16())
            && length_delimited
            && !headers.contains_key(header::CONTENT_ENCODING)
            && !has_token(headers, header::CACHE_CONTROL, "no-transform")
            && etag_allows(headers)
            && self.type_listed(headers);
        if compress {
            headers.remove(header::CONTENT_LENGTH);
            headers.append(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
            weaken_etag(headers);
        }
        compress
    }

    fn type_listed(&self, headers: &HeaderMap) -> bool {
        let Some(content_type) = headers.get(header::CONTENT_TYPE) else { return false };
        let value = content_type.as_bytes();
        let starts_with =
            |prefix: &[u8]| value.len() >= prefix.len() && value[..prefix.len()].eq_ignore_ascii_case(prefix);
        !starts_with(b"multipart") && self.types.iter().any(|listed| starts_with(listed.as_bytes()))
    }
}

/// HAProxy leaves browsers announcing `Mozilla/4` uncompressed, except MSIE 6 with XP SP2 (`SV1`) and MSIE 7
/// and later, by the same byte offsets.
fn is_old_mozilla(headers: &HeaderMap) -> bool {
    let Some(agent) = headers.get(header::USER_AGENT).map(HeaderValue::as_bytes) else { return false };
    if !agent.starts_with(b"Mozilla/4") {
        return false;
    }
    agent.len() < 31
        || &agent[25..30] != b"MSIE "
        || agent[30] < b'6'
        || (agent[30] == b'6' && (agent.len() < 54 || &agent[51..54] != b"SV1"))
}

/// One `Accept-Encoding` header value: any element `gzip` or `*` with a q-value above zero.
fn accepts_gzip(value: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|element| {
        let mut parts = element.split(|&b| b == b';');
        let coding = parts.next().unwrap_or_default().trim_ascii();
        let wanted = coding.eq_ignore_ascii_case(b"gzip") || coding.starts_with(b"*");
        wanted
            && parts.map(<[u8]>::trim_ascii).find(|p| p.starts_with(b"q=")).is_none_or(|q| qvalue_above_zero(&q[2..]))
    })
}

/// `0`, `0.0`, `0.000` and the like are zero; anything else that parses counts.
fn qvalue_above_zero(q: &[u8]) -> bool {
    match q.split_first() {
        Some((b'0', rest)) => rest.iter().any(|b| (b'1'..=b'9').contains(b)),
        Some((b'1', _)) => true,
        _ => false,
    }
}

fn has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// No ETag, or exactly one that is a quoted string, weak or strong.
fn etag_allows(headers: &HeaderMap) -> bool {
    let mut etags = headers.get_all(header::ETAG).iter();
    match (etags.next(), etags.next()) {
        (None, _) => true,
        (Some(etag), None) => {
            let tag = etag.as_bytes();
            let opaque = tag.strip_prefix(b"W/").unwrap_or(tag);
            opaque.len() >= 2 && opaque.starts_with(b"\"") && opaque.ends_with(b"\"")
        }
        _ => false,
    }
}

/// The compressed body is not byte-identical to the pod's: a strong ETag becomes weak.
fn weaken_etag(headers: &mut HeaderMap) {
    let Some(etag) = headers.get(header::ETAG) else { return };
    if etag.as_bytes().starts_with(b"W/") {
        return;
    }
    let mut weak = b"W/".to_vec();
    weak.extend_from_slice(etag.as_bytes());
    if let Ok(value) = HeaderValue::from_bytes(&weak) {
        headers.insert(header::ETAG, value);
    }
}

/// A body gzipped as it streams: each data frame is compressed and flushed, trailers follow the gzip
/// trailer.
pub struct GzipBody<B> {
    inner: B,
    /// `None` once the gzip stream is finished.
    encoder: Option<GzEncoder<Vec<u8>>>,
    trailers: Option<HeaderMap>,
}

impl<B> GzipBody<B> {
    pub fn new(inner: B) -> Self {
        Self { inner, encoder: Some(GzEncoder::new(Vec::new(), Compression::new(GZIP_LEVEL))), trailers: None }
    }

    fn compress(&mut self, data: &[u8]) -> std::io::Result<Option<Bytes>> {
        let Some(encoder) = self.encoder.as_mut() else { return Ok(None) };
        encoder.write_all(data)?;
        encoder.flush()?;
        Ok(Some(Bytes::from(std::mem::take(encoder.get_mut()))).filter(|out| !out.is_empty()))
    }

    fn finish(&mut self) -> std::io::Result<Option<Bytes>> {
        let Some(encoder) = self.encoder.take() else { return Ok(None) };
        Ok(Some(Bytes::from(encoder.finish()?)))
    }
}

impl<B> Body for GzipBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            if self.encoder.is_none() {
                return Poll::Ready(self.trailers.take().map(|trailers| Ok(Frame::trailers(trailers))));
            }
            let next = match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Err(error)) => return Poll::Ready(Some(Err(error.into()))),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.compress(&data),
                    Err(frame) => {
                        self.trailers = frame.into_trailers().ok();
                        self.finish()
                    }
                },
                None => self.finish(),
            };
            match next {
                Ok(Some(out)) => return Poll::Ready(Some(Ok(Frame::data(out)))),
                Ok(None) => continue,
                Err(error) => return Poll::Ready(Some(Err(error.into()))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.encoder.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};
    use std::io::Read;

    fn request_headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn accept_encoding_is_read_as_haproxy_reads_it() {
        let policy = ResponseCompression::new(DEFAULT_COMPRESSION_MIME);
        let accepts = |value: &'static str| {
            policy.client_accepts(&Method::GET, Version::HTTP_11, &request_headers(&[("accept-encoding", value)]))
        };
        assert!(accepts("gzip"));
        assert!(accepts("br, GZIP;q=0.5"));
        assert!(accepts("*"));
        assert!(accepts("gzip;q=0.001"));
        assert!(!accepts("gzip;q=0"));
        assert!(!accepts("gzip;q=0.000"));
        assert!(!accepts("deflate, br"));
        assert!(!accepts("x-gzip"));
        assert!(!policy.client_accepts(&Method::GET, Version::HTTP_11, &HeaderMap::new()));
        let gzip = request_headers(&[("accept-encoding", "gzip")]);
        assert!(!policy.client_accepts(&Method::HEAD, Version::HTTP_11, &gzip), "HEAD");
        assert!(!policy.client_accepts(&Method::GET, Version::HTTP_10, &gzip), "HTTP/1.0 client");
        assert!(policy.client_accepts(&Method::GET, Version::HTTP_2, &gzip));
    }

    #[test]
    fn old_mozilla_4_browsers_are_left_alone_but_msie_7_and_xp_sp2_are_not() {
        let policy = ResponseCompression::new(DEFAULT_COMPRESSION_MIME);
        let accepts = |agent: &'static str| {
            let headers = request_headers(&[("accept-encoding", "gzip"), ("user-agent", agent)]);
            policy.client_accepts(&Method::GET, Version::HTTP_11, &headers)
        };
        assert!(!accepts("Mozilla/4.0 (compatible; Netscape)"));
        assert!(!accepts("Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)"));
        assert!(!accepts("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"));
        assert!(accepts("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"));
        assert!(accepts("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)"));
        assert!(accepts("Mozilla/5.0 (X11; Linux x86_64)"));
    }

    #[test]
    fn responses_are_compressed_only_when_haproxy_would() {
        let policy = ResponseCompression::new("text/html text/plain application/json");
        let decide = |status: u16, pairs: &[(&'static str, &'static str)], delimited: bool| {
            let mut headers = request_headers(pairs);
            let compressed =
                policy.compress_response(StatusCode::from_u16(status).expect("status"), &mut headers, delimited);
            (compressed, headers)
        };
        let plain = [("content-type", "text/plain; charset=utf-8"), ("content-length", "10")];
        let (yes, headers) = decide(200, &plain, true);
        assert!(yes);
        assert!(!headers.contains_key("content-length"));
        assert_eq!(headers["content-encoding"], "gzip");
        assert_eq!(headers["vary"], "Accept-Encoding");
        assert!(decide(203, &plain, true).0);
        for status in [204, 206, 301, 304, 404, 500] {
            assert!(!decide(status, &plain, true).0, "status {status}");
        }
        assert!(!decide(200, &plain, false).0, "close-delimited body");
        assert!(!decide(200, &[("content-type", "image/png")], true).0, "type not listed");
        assert!(decide(200, &[("content-type", "TEXT/HTML")], true).0, "types match case-insensitively");
        assert!(!decide(200, &[("content-length", "3")], true).0, "no content type");
        assert!(!decide(200, &[("content-type", "text/html"), ("content-encoding", "br")], true).0);
        assert!(!decide(200, &[("content-type", "text/html"), ("cache-control", "public, No-Transform")], true).0);
        assert!(!decide(200, &[("content-type", "text/html"), ("etag", "abc")], true).0, "malformed ETag");
        assert!(!decide(200, &[("content-type", "text/html"), ("etag", "\"a\""), ("etag", "\"b\"")], true).0);
        let (yes, headers) =
            decide(200, &[("content-type", "text/html"), ("etag", "\"v1\""), ("vary", "Cookie")], true);
        assert!(yes);
        assert_eq!(headers["etag"], "W/\"v1\"", "a strong ETag becomes weak");
        assert_eq!(headers.get_all("vary").iter().collect::<Vec<_>>(), ["Cookie", "Accept-Encoding"]);
        let (_, headers) = decide(200, &[("content-type", "text/html"), ("etag", "W/\"v1\"")], true);
        assert_eq!(headers["etag"], "W/\"v1\"");
        let multipart = ResponseCompression::new("multipart/mixed");
        let mut headers = request_headers(&[("content-type", "multipart/mixed; boundary=x")]);
        assert!(!multipart.compress_response(StatusCode::OK, &mut headers, true), "never multipart");
    }

    #[tokio::test]
    async fn a_streamed_body_is_gzipped_piece_by_piece_and_keeps_its_trailers() {
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = vec![
            Ok(Frame::data(Bytes::from_static(b"hello, "))),
            Ok(Frame::data(Bytes::from_static(b"hello, hello, world"))),
            Ok(Frame::trailers(trailers)),
        ];
        let mut body = GzipBody::new(StreamBody::new(futures_util::stream::iter(frames)));
        let mut compressed = Vec::new();
        let mut pieces = 0;
        let mut seen_trailers = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.expect("frame");
            if let Some(data) = frame.data_ref() {
                compressed.extend_from_slice(data);
                pieces += 1;
            } else {
                seen_trailers = frame.into_trailers().ok();
            }
        }
        assert!(pieces >= 3, "each piece flushed, then the gzip trailer ({pieces})");
        assert!(body.is_end_stream());
        let mut plain = String::new();
        flate2::read::GzDecoder::new(&compressed[..]).read_to_string(&mut plain).expect("valid gzip");
        assert_eq!(plain, "hello, hello, hello, world");
        assert_eq!(seen_trailers.expect("trailers")["grpc-status"], "0");
    }
}
