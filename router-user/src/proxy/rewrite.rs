//! Request rewriting on the way to a pod: hop-by-hop and `Proxy` headers dropped, client `X-SSL*` headers
//! dropped (only the router may vouch for a client certificate), Host lowercased, forwarded headers per the
//! route's policy, router-wide then route header actions, and `rewrite-target`.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{PathAndQuery, Uri};

use super::forwarded::{
    append_forwarded, ForwardedValues, FORWARDED, X_FORWARDED_FOR, X_FORWARDED_HOST, X_FORWARDED_PORT,
    X_FORWARDED_PROTO,
};
use super::headers::{strip_hop_by_hop, PROXY};
use crate::policy::{header_actions, request_target, ForwardedPolicy, PathRewrite, RewriteTarget, RoutePolicy};

const FORWARDED_HEADERS: [HeaderName; 5] =
    [X_FORWARDED_FOR, X_FORWARDED_HOST, X_FORWARDED_PORT, X_FORWARDED_PROTO, FORWARDED];

/// Rewrites `headers` for forwarding. `host` is the request's Host header, already lowercased.
pub fn rewrite_headers(
    headers: &mut HeaderMap,
    upgrade: bool,
    forwarded: &ForwardedValues,
    host: &str,
    policy: &RoutePolicy,
) {
    strip_hop_by_hop(headers, upgrade);
    headers.remove(PROXY);
    strip_x_ssl(headers);
    // A host that cannot be a header value (the request's own came from one, so never) leaves Host as it was.
    let host = match HeaderValue::from_str(host) {
        Ok(value) => {
            headers.insert(header::HOST, value.clone());
            value
        }
        Err(_) => HeaderValue::from_static(""),
    };
    match policy.forwarded {
        ForwardedPolicy::Append => append_forwarded(headers, forwarded, &host),
        ForwardedPolicy::Replace => {
            for name in &FORWARDED_HEADERS {
                headers.remove(name);
            }
            append_forwarded(headers, forwarded, &host);
        }
        ForwardedPolicy::IfNone => {
            let mut ours = HeaderMap::new();
            append_forwarded(&mut ours, forwarded, &host);
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

/// Applies `rewrite-target` (see `policy::RewriteTarget`): the new URI, `None` when the rule leaves the path
/// alone, or an error when HAProxy would fail the rewrite and answer 500. The query string is kept.
pub fn rewrite_target(uri: &Uri, rule: &RewriteTarget) -> Result<Option<Uri>, RewriteFailed> {
    let path = match rule.apply(uri.path()) {
        PathRewrite::Unchanged => return Ok(None),
        PathRewrite::Failed => return Err(RewriteFailed),
        PathRewrite::Rewritten(path) => path,
    };
    let path_and_query = PathAndQuery::try_from(request_target(&path, uri.query())).map_err(|_| RewriteFailed)?;
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).map(Some).map_err(|_| RewriteFailed)
}

/// Applies an HTTPRoute's `ReplaceFullPath`: `uri` with its path replaced by `path`, the query string kept.
pub fn replace_full_path(uri: &Uri, path: &str) -> Result<Option<Uri>, RewriteFailed> {
    let path_and_query =
        PathAndQuery::try_from(request_target(path.as_bytes(), uri.query())).map_err(|_| RewriteFailed)?;
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).map(Some).map_err(|_| RewriteFailed)
}

/// The rewrite-target substitution failed (HAProxy answers 500 and forwards nothing).
#[derive(Debug, thiserror::Error)]
#[error("rewrite-target substitution failed")]
pub struct RewriteFailed;

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(route_path: &str, target: &str, request: &str) -> Result<Option<String>, RewriteFailed> {
        let uri: Uri = request.parse().expect("uri");
        let rule = RewriteTarget::new(target, Some(route_path)).expect("rule");
        rewrite_target(&uri, &rule).map(|uri| uri.map(|uri| uri.to_string()))
    }

    #[test]
    fn rewrite_target_keeps_the_query_and_encodes_what_a_uri_cannot_hold() {
        assert_eq!(rewritten("/sub", "/", "/sub/x/y?q=1").expect("rewritten").as_deref(), Some("/x/y?q=1"));
        assert_eq!(rewritten("/api", "/a b", "/api/x?q").expect("rewritten").as_deref(), Some("/a%20b/x?q"));
        let absolute = rewritten("/api", "/v2", "https://h.test/api/x?q").expect("rewritten");
        assert_eq!(absolute.as_deref(), Some("https://h.test/v2/x?q"));
        assert_eq!(rewritten("/api", "/v2", "/other").expect("left alone"), None);
        assert!(rewritten("/api", r"/v2\\#", "/api/x").is_err(), "a trailing backslash fails the rewrite");
    }

    #[test]
    fn replace_full_path_keeps_the_query() {
        let full = |request: &str, path: &str| {
            let uri: Uri = request.parse().expect("uri");
            replace_full_path(&uri, path).expect("replaced").map(|uri| uri.to_string())
        };
        assert_eq!(full("/full/one/two?q=1", "/one").as_deref(), Some("/one?q=1"));
        assert_eq!(full("http://h.test/x", "/a b").as_deref(), Some("http://h.test/a%20b"));
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
