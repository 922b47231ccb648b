//! Responses the router makes itself: the 503 page, gateway errors and the https redirect.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{Either, Full};
use hyper::body::Incoming;

/// Every response the :80 listener sends: a pod's streamed body or one of ours.
pub type ProxyBody = Either<Incoming, Full<Bytes>>;

const UNAVAILABLE_PAGE: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Application is not available</title></head>\n<body><h1>Application is not available</h1>\n<p>No application is serving requests at this address right now: the route may not exist, or none of its pods is ready.</p></body></html>\n";

/// 503 with the small HTML page: no route, no ready endpoint, or every endpoint failed.
pub fn unavailable() -> Response<ProxyBody> {
    page(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE_PAGE)
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
