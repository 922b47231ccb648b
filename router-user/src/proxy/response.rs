//! Responses the router makes itself: the 503 page, gateway errors and the https redirect.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{Either, Full};

use super::compression::GzipBody;
use super::lease::LeasedBody;

/// Every response the :80 listener sends: a pod's streamed body (as the pod sent it, or gzipped by the
/// router) or one of ours. The gzip state is boxed: inline it more than doubled the size of every response
/// (440 bytes against 200), and responses are moved several times on their way to the client.
pub type ProxyBody = Either<Either<LeasedBody, Box<GzipBody<LeasedBody>>>, Full<Bytes>>;

const UNAVAILABLE_PAGE: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Application is not available</title></head>\n<body><h1>Application is not available</h1>\n<p>No application is serving requests at this address right now: the route may not exist, or none of its pods is ready.</p></body></html>\n";

/// 503 with the small HTML page: no route, no ready endpoint, or every endpoint failed.
pub fn unavailable() -> Response<ProxyBody> {
    page(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE_PAGE)
}

/// A replacement for a response the router makes (`ROUTER_ERRORFILE_503`): the file holds a whole HTTP
/// response, status line, headers and body, as HAProxy's errorfile does.
#[derive(Clone, Debug)]
pub struct ErrorFile {
    status: StatusCode,
    headers: Vec<(http::HeaderName, HeaderValue)>,
    body: Bytes,
}

impl ErrorFile {
    pub fn load(path: &std::path::Path) -> Result<ErrorFile, String> {
        let raw = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&raw).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(raw: &[u8]) -> Result<ErrorFile, String> {
        let split = find(raw, b"\r\n\r\n").map(|i| (i, 4)).or_else(|| find(raw, b"\n\n").map(|i| (i, 2)));
        let (head_end, separator) = split.ok_or("no blank line between headers and body")?;
        let head = std::str::from_utf8(&raw[..head_end]).map_err(|_| "headers are not UTF-8")?;
        let mut lines = head.lines();
        let status_line = lines.next().ok_or("empty file")?;
        let code = status_line.split_whitespace().nth(1).ok_or("no status code")?;
        let status = code.parse::<u16>().ok().and_then(|c| StatusCode::from_u16(c).ok()).ok_or("bad status code")?;
        let mut headers = Vec::new();
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let (name, value) = line.split_once(':').ok_or_else(|| format!("bad header line {line:?}"))?;
            let name =
                http::HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| format!("bad header {name:?}"))?;
            // Framing is the router's business: the body length is known.
            if name == header::CONTENT_LENGTH || name == header::CONNECTION || name == header::TRANSFER_ENCODING {
                continue;
            }
            let value = HeaderValue::from_str(value.trim()).map_err(|_| format!("bad value for {name}"))?;
            headers.push((name, value));
        }
        Ok(ErrorFile { status, headers, body: Bytes::copy_from_slice(&raw[head_end + separator..]) })
    }

    pub fn response(&self) -> Response<ProxyBody> {
        let mut response = Response::new(Either::Right(Full::new(self.body.clone())));
        *response.status_mut() = self.status;
        for (name, value) in &self.headers {
            response.headers_mut().append(name.clone(), value.clone());
        }
        response
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// 502 (a pod broke the exchange) or 504 (a pod did not answer in time) with a one-line body.
pub fn gateway_error(status: StatusCode) -> Response<ProxyBody> {
    let reason = status.canonical_reason().unwrap_or("Gateway Error");
    page(status, &format!("<html><body><h1>{} {reason}</h1></body></html>\n", status.as_u16()))
}

/// 400 for a request the router refuses to forward; the connection is closed after it.
pub fn bad_request() -> Response<ProxyBody> {
    let mut response = page(StatusCode::BAD_REQUEST, "<html><body><h1>400 Bad Request</h1></body></html>\n");
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// 421 for a request whose host checks client certificates that its connection's handshake did not (RFC 9113
/// 9.1.2): the client retries on a connection of its own for that host.
pub fn misdirected() -> Response<ProxyBody> {
    page(StatusCode::MISDIRECTED_REQUEST, "<html><body><h1>421 Misdirected Request</h1></body></html>\n")
}

/// 403 for a client certificate whose subject the route's filter does not take.
pub fn forbidden() -> Response<ProxyBody> {
    page(
        StatusCode::FORBIDDEN,
        "<html><body><h1>403 Forbidden</h1>\nThe client certificate is not allowed here.\n</body></html>\n",
    )
}

/// 302 to the same host (port dropped) and URL on https, for `insecureEdgeTerminationPolicy: Redirect`.
pub fn redirect_to_https(host: &str, path_and_query: &str) -> Response<ProxyBody> {
    let location = format!("https://{host}{path_and_query}");
    let mut response = Response::new(Either::Right(Full::new(Bytes::new())));
    *response.status_mut() = StatusCode::FOUND;
    match HeaderValue::from_str(&location) {
        Ok(value) => {
            response.headers_mut().insert(header::LOCATION, value);
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
        Err(_) => bad_request(),
    }
}

fn page(status: StatusCode, body: &str) -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::copy_from_slice(body.as_bytes()))));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=0, no-cache, no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_files_parse_like_haproxy_errorfiles() {
        let raw = b"HTTP/1.0 503 Service Unavailable\r\nCache-Control: no-cache\r\nContent-Type: text/html\r\nContent-Length: 99\r\n\r\n<h1>Down for maintenance</h1>";
        let file = ErrorFile::parse(raw).expect("parse");
        let response = file.response();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["content-type"], "text/html");
        assert!(response.headers().get("content-length").is_none(), "the router frames the body itself");
        assert!(ErrorFile::parse(b"not a response").is_err());
    }

    #[test]
    fn the_response_body_type_is_sized_for_the_common_pod_body() {
        // Every response moves this type several times; a rare variant held inline (the gzip state is 440
        // bytes) would make them all pay for it.
        let size = std::mem::size_of::<ProxyBody>();
        assert!(size <= std::mem::size_of::<LeasedBody>() + 16, "ProxyBody is {size} bytes");
    }
}
