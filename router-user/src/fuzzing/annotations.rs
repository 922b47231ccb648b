//! Route annotations (`haproxy.router.openshift.io/...`, `router.openshift.io/...`) and the router-wide header
//! actions (ROUTER_HTTP_REQUEST_HEADERS / _RESPONSE_HEADERS), compiled into a route's policy as a table build
//! compiles them, then used the way a request uses them.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderValue, Uri};

use super::lines::{key_values, text};
use crate::model::{ObjectKey, Route, RouteSpec, RouteTargetReference, TlsConfig};
use crate::policy::header_actions::{self, from_env};
use crate::policy::{client_tls_request, request_target, Direction, PathRewrite, RoutePolicy, RouterDefaults};
use crate::protection::RateLimiter;

/// Client addresses every allowlist and rate limit is asked about.
const CLIENTS: [&str; 4] = ["192.0.2.7", "10.0.0.1", "2001:db8::1", "::ffff:192.0.2.7"];

/// `key=value` lines: `spec.path`, `tls` (the termination), `request` (a request target), `request-headers`
/// and `response-headers` (the router-wide lists); any other key is an annotation, under
/// `haproxy.router.openshift.io/` unless it names its own prefix.
pub fn annotations(data: &[u8]) {
    let text = text(data);
    let mut route =
        Route::new("web", RouteSpec { host: Some("www.example.com".into()), to: service(), ..RouteSpec::default() });
    let mut annotations = BTreeMap::new();
    let mut defaults = RouterDefaults::default();
    let mut request = "/";
    for (key, value) in key_values(&text) {
        match key {
            "spec.path" => route.spec.path = Some(value.into()),
            "tls" => route.spec.tls = Some(Box::new(TlsConfig { termination: value.into(), ..TlsConfig::default() })),
            "request" => request = value,
            "request-headers" => defaults.request_headers = from_env(value, Direction::Request).0,
            "response-headers" => defaults.response_headers = from_env(value, Direction::Response).0,
            name if name.contains('/') => {
                annotations.insert(name.to_string(), value.to_string());
            }
            name => {
                annotations.insert(format!("haproxy.router.openshift.io/{name}"), value.to_string());
            }
        }
    }
    route.metadata.namespace = Some("shop".into());
    route.metadata.annotations = Some(annotations);
    let (policy, _warnings) = RoutePolicy::build(&ObjectKey::new("shop", "web"), &route, 1, &defaults);
    // The client certificate annotations (`router.openshift.io/client-tls-*`), read as the table build reads them.
    let _ = client_tls_request(&route);
    use_policy(&policy, request);
}

fn service() -> RouteTargetReference {
    RouteTargetReference { kind: "Service".into(), name: "web".into(), weight: None }
}

/// What a request does with the policy: rewrite its target, check its client, apply the header actions.
fn use_policy(policy: &RoutePolicy, request: &str) {
    if let (Some(rule), Ok(uri)) = (&policy.rewrite_target, request.parse::<Uri>()) {
        if let PathRewrite::Rewritten(path) = rule.apply(uri.path()) {
            let target = request_target(&path, uri.query());
            // The proxy puts it into the request's URI: it must be one.
            assert!(
                PathAndQuery::try_from(target.as_str()).is_ok(),
                "{target:?} from {path:?} is not a request target"
            );
        }
    }
    let limiter = RateLimiter::new(policy.rate_limits);
    let now = Instant::now();
    for client in CLIENTS {
        let client: IpAddr = client.parse().expect("a fixed address");
        if let Some(allowlist) = &policy.allowlist {
            allowlist.allows(client);
        }
        if let Ok(ticket) = limiter.connect(client, now) {
            let _ = limiter.request(client, now);
            drop(ticket);
        }
    }
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_static("www.example.com"));
    // A value that is not UTF-8 (obs-text), as clients may send.
    headers.insert("user-agent", HeaderValue::from_bytes(b"curl/8.0 \xe9").expect("obs-text is a header value"));
    headers.insert("x-forwarded-for", HeaderValue::from_static("198.51.100.1, 192.0.2.7"));
    header_actions::apply(&policy.request_headers, &mut headers);
    header_actions::apply(&policy.response_headers, &mut headers);
}
