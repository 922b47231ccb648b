//! Request rewriting on the way to a pod: hop-by-hop and `Proxy` headers dropped, client `X-SSL*` headers
//! dropped (only the router may vouch for a client certificate), Host lowercased, forwarded headers per the
//! route's policy, router-wide then route header actions, and `rewrite-target`.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{PathAndQuery, Uri};

use super::forwarded::{
    append_forwarded, ConnectionInfo, FORWARDED, X_FORWARDED_FOR, X_FORWARDED_HOST, X_FORWARDED_PORT, X_FORWARDED_PROTO,
};
use super::headers::{strip_hop_by_hop, PROXY};
use crate::policy::{header_actions, ForwardedPolicy, RoutePolicy};
use crate::table::RoutePath;

const FORWARDED_HEADERS: [HeaderName; 5] =
    [X_FORWARDED_FOR, X_FORWARDED_HOST, X_FORWARDED_PORT, X_FORWARDED_PROTO, FORWARDED];

/// Rewrites `headers` for forwarding. `host` is the request's Host header, already lowercased.
pub fn rewrite_headers(
    headers: &mut HeaderMap,
    upgrade: bool,
    info: &ConnectionInfo,
    host: &str,
    policy: &RoutePolicy,
) {
    strip_hop_by_hop(headers, upgrade);
    headers.remove(PROXY);
    strip_x_ssl(headers);
    if let Ok(value) = HeaderValue::from_str(host) {
        headers.insert(header::HOST, value);
    }
    match policy.forwarded {
        ForwardedPolicy::Append => append_forwarded(headers, info, host),
        ForwardedPolicy::Replace => {
            for name in &FORWARDED_HEADERS {
                headers.remove(name);
            }
            append_forwarded(headers, info, host);
        }
        ForwardedPolicy::IfNone => {
            let mut ours = HeaderMap::new();
            append_forwarded(&mut ours, info, host);
            for (name, value) in ours.iter() {
                if !headers.contains_key(name) {
                    headers.insert(name.clone(), value.clone());
                }
            }
        }
        ForwardedPolicy::Never => {}
    }
    header_actions::apply(&policy.request_headers, headers);
}

/// Client-sent `X-SSL*` headers would let a client pose as having presented a certificate.
fn strip_x_ssl(headers: &mut HeaderMap) {
    let names: Vec<HeaderName> = headers.keys().filter(|name| name.as_str().starts_with("x-ssl")).cloned().collect();
    for name in names {
        headers.remove(name);
    }
}

/// Applies `rewrite-target`: the route's path prefix is replaced by the target; a target of `/` also eats
/// the slash after the prefix. The query string is kept.
pub fn rewrite_target(uri: &Uri, route_path: &RoutePath, target: &str) -> Option<Uri> {
    let path = uri.path();
    let prefix = route_path.as_str();
    let rest = if prefix.is_empty() { path.strip_prefix('/').unwrap_or(path) } else { path.strip_prefix(prefix)? };
    let rest = if target == "/" { rest.strip_prefix('/').unwrap_or(rest) } else { rest };
    let mut rewritten = format!("{target}{rest}");
    if !rewritten.starts_with('/') {
        rewritten.insert(0, '/');
    }
    if let Some(query) = uri.query() {
        rewritten.push('?');
        rewritten.push_str(query);
    }
    let path_and_query = PathAndQuery::try_from(rewritten).ok()?;
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(route_path: &str, target: &str, request: &str) -> String {
        let uri: Uri = request.parse().expect("uri");
        rewrite_target(&uri, &RoutePath::new(Some(route_path)), target).expect("rewrite").to_string()
    }

    #[test]
    fn rewrite_target_replaces_the_route_prefix() {
        let cases = [
            ("/sub", "/", "/sub", "/"),
            ("/sub", "/", "/sub/", "/"),
            ("/sub", "/", "/sub/x/y?q=1", "/x/y?q=1"),
            ("/sub", "/app", "/sub/x", "/app/x"),
            ("/sub", "/app", "/sub", "/app"),
            ("/sub", "/app/", "/sub/x", "/app//x"),
            ("/", "/app/", "/x", "/app/x"),
            ("", "/app/", "/x", "/app/x"),
            ("/api/v1", "/v2", "/api/v1/users", "/v2/users"),
        ];
        for (path, target, request, want) in cases {
            assert_eq!(rewritten(path, target, request), want, "path {path} target {target} request {request}");
        }
    }

    #[test]
    fn client_x_ssl_headers_are_dropped() {
        let mut headers = HeaderMap::new();
        headers.insert("x-ssl-client-verify", HeaderValue::from_static("0"));
        headers.insert("X-SSL-Client-DN", HeaderValue::from_static("CN=evil"));
        headers.insert("x-app", HeaderValue::from_static("kept"));
        strip_x_ssl(&mut headers);
        assert_eq!(headers.len(), 1);
    }
}
