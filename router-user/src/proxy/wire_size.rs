//! Sizes of HTTP heads as HTTP/1.1 writes them, for the byte counters of the access log (`%U`, `%B`) and of
//! the `haproxy_*` backends and servers (what went to the pods and came back). HTTP/2 heads are compressed on
//! the wire; they are counted at their HTTP/1.1 size all the same, as HAProxy counts its internal form.

use http::{request, HeaderMap, Response};

/// Header lines (`name: value\r\n` each).
pub fn headers_size(headers: &HeaderMap) -> usize {
    headers.iter().map(|(name, value)| name.as_str().len() + 2 + value.len() + 2).sum()
}

/// A request head as sent to a pod: request line with the origin-form target, headers, blank line.
pub fn request_head_size(parts: &request::Parts) -> u64 {
    let target = parts.uri.path_and_query().map_or(1, |pq| pq.as_str().len());
    let line = parts.method.as_str().len() + 1 + target + 1 + "HTTP/1.1".len() + 2;
    (line + headers_size(&parts.headers) + 2) as u64
}

/// A response head as a pod sent it: status line, headers, blank line.
pub fn response_head_size<B>(response: &Response<B>) -> u64 {
    let reason = response.status().canonical_reason().unwrap_or("");
    let line = "HTTP/1.1 200 ".len() + reason.len() + 2;
    (line + headers_size(response.headers()) + 2) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_bytes_http1_writes() {
        let (parts, ()) = http::Request::get("/a?b=c").header("host", "x.test").body(()).expect("request").into_parts();
        assert_eq!(request_head_size(&parts) as usize, "GET /a?b=c HTTP/1.1\r\nhost: x.test\r\n\r\n".len());
        let response = Response::builder().status(404).header("content-length", "0").body(()).expect("response");
        assert_eq!(response_head_size(&response) as usize, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".len());
    }
}
