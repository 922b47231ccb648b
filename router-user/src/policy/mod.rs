//! What the router does with a route's requests, from its annotations, its spec and the router-wide
//! defaults (`ROUTER_*`). Built once per route when the table is compiled; bad annotation values are
//! reported and fall back to the default, they never drop the route.

mod allowlist;
mod balance;
mod client_tls;
mod cookie;
mod forwarded;
pub mod header_actions;
mod hsts;
mod rate_limit;
mod rewrite_target;

use std::time::Duration;

pub use allowlist::{Cidr, IpAllowlist};
pub use balance::BalanceAlgorithm;
pub use client_tls::{
    client_tls_request, CaBundleKind, ClientTlsRequest, CLIENT_TLS_CA, CLIENT_TLS_CA_SECRET, CLIENT_TLS_SUBJECT_FILTER,
    CLIENT_TLS_VERIFY, DEFAULT_CA_KEY,
};
pub use cookie::{md5_hex, valid_cookie_name, CookiePolicy, CookieValue, SameSite};
pub use forwarded::ForwardedPolicy;
pub use header_actions::{Direction, HeaderAction, HeaderOp, ValueTemplate};
pub use hsts::parse_hsts;
pub use rate_limit::RateLimits;
pub use rewrite_target::{request_target, NotApplied, PathRewrite, RewriteTarget};

use crate::duration::parse_haproxy_duration;
use crate::model::{ObjectKey, Route};

pub const BALANCE: &str = "haproxy.router.openshift.io/balance";
pub const DISABLE_COOKIES: &str = "haproxy.router.openshift.io/disable_cookies";
pub const COOKIE_NAME: &str = "router.openshift.io/cookie_name";
pub const COOKIE_SAME_SITE: &str = "router.openshift.io/cookie-same-site";
pub const TIMEOUT: &str = "haproxy.router.openshift.io/timeout";
pub const TIMEOUT_TUNNEL: &str = "haproxy.router.openshift.io/timeout-tunnel";
pub const RATE_LIMIT: &str = "haproxy.router.openshift.io/rate-limit-connections";
pub const RATE_LIMIT_CONCURRENT_TCP: &str = "haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp";
pub const RATE_LIMIT_RATE_TCP: &str = "haproxy.router.openshift.io/rate-limit-connections.rate-tcp";
pub const RATE_LIMIT_RATE_HTTP: &str = "haproxy.router.openshift.io/rate-limit-connections.rate-http";
pub const IP_ALLOWLIST: &str = "haproxy.router.openshift.io/ip_allowlist";
pub const IP_WHITELIST: &str = "haproxy.router.openshift.io/ip_whitelist";
pub const SET_FORWARDED_HEADERS: &str = "haproxy.router.openshift.io/set-forwarded-headers";
pub const REWRITE_TARGET: &str = "haproxy.router.openshift.io/rewrite-target";
pub const POD_CONCURRENT_CONNECTIONS: &str = "haproxy.router.openshift.io/pod-concurrent-connections";
pub const HEALTH_CHECK_INTERVAL: &str = "router.openshift.io/haproxy.health.check.interval";
pub const HSTS_HEADER: &str = "haproxy.router.openshift.io/hsts_header";
pub const H1_ADJUST_CASE: &str = "haproxy.router.openshift.io/h1-adjust-case";

/// Router-wide defaults that routes inherit.
#[derive(Clone, Debug)]
pub struct RouterDefaults {
    /// `ROUTER_LOAD_BALANCE_ALGORITHM` (random): used when a route has one service with weight.
    pub load_balance_algorithm: BalanceAlgorithm,
    /// `ROUTER_TCP_BALANCE_SCHEME` (source): passthrough routes without a balance annotation.
    pub tcp_balance: BalanceAlgorithm,
    /// `ROUTER_COOKIE_NAME`.
    pub cookie_name: Option<String>,
    /// `ROUTER_SET_FORWARDED_HEADERS`.
    pub forwarded: ForwardedPolicy,
    pub server_timeout: Duration,
    pub tunnel_timeout: Duration,
    pub health_check_interval: Duration,
    /// `ROUTER_HTTP_REQUEST_HEADERS` / `ROUTER_HTTP_RESPONSE_HEADERS`, applied before the route's own.
    pub request_headers: Vec<HeaderAction>,
    pub response_headers: Vec<HeaderAction>,
}

impl Default for RouterDefaults {
    fn default() -> Self {
        Self {
            load_balance_algorithm: BalanceAlgorithm::Random,
            tcp_balance: BalanceAlgorithm::Source,
            cookie_name: None,
            forwarded: ForwardedPolicy::Append,
            server_timeout: Duration::from_secs(30),
            tunnel_timeout: Duration::from_secs(3600),
            health_check_interval: Duration::from_secs(5),
            request_headers: Vec::new(),
            response_headers: Vec::new(),
        }
    }
}

/// Everything route-specific the proxy needs for a request.
#[derive(Clone, Debug)]
pub struct RoutePolicy {
    pub balance: BalanceAlgorithm,
    pub cookie: Option<CookiePolicy>,
    pub forwarded: ForwardedPolicy,
    pub server_timeout: Duration,
    pub tunnel_timeout: Duration,
    pub allowlist: Option<IpAllowlist>,
    pub rate_limits: RateLimits,
    /// Router-wide actions followed by the route's.
    pub request_headers: Vec<HeaderAction>,
    pub response_headers: Vec<HeaderAction>,
    pub rewrite_target: Option<RewriteTarget>,
    /// An HTTPRoute's `ReplaceFullPath`: the path every request goes to the pod with (the query kept).
    pub replace_full_path: Option<String>,
    pub pod_max_connections: Option<u32>,
    pub health_check_interval: Duration,
    /// Strict-Transport-Security for responses on terminated TLS connections.
    pub hsts: Option<http::HeaderValue>,
    /// `h1-adjust-case`: request header names to this route's pods follow ROUTER_H1_CASE_ADJUST.
    pub h1_adjust_case: bool,
}

impl RoutePolicy {
    /// Compiles the policy of `route`; `weighted_services` is the number of its services with weight > 0.
    /// Returns the policy and one message per annotation value that could not be used.
    pub fn build(
        key: &ObjectKey,
        route: &Route,
        weighted_services: usize,
        defaults: &RouterDefaults,
    ) -> (RoutePolicy, Vec<String>) {
        let get = |name: &str| annotation(route, name);
        let mut warnings = Vec::new();
        let mut warn = |name: &str, value: &str, why: &str| {
            warnings.push(format!("annotation {name}={value:?}: {why}; using the default"))
        };

        let tls = route.spec.tls.as_ref();
        let passthrough = tls.is_some_and(|t| t.termination == "passthrough");
        let fallback = if passthrough { defaults.tcp_balance } else { default_balance(weighted_services, defaults) };
        let balance = match get(BALANCE) {
            Some(value) => BalanceAlgorithm::parse(value).unwrap_or_else(|| {
                warn(BALANCE, value, "unknown algorithm");
                fallback
            }),
            None => fallback,
        };

        let duration = |name: &str, default: Duration, warn: &mut dyn FnMut(&str, &str, &str)| match get(name) {
            None => default,
            Some(value) => parse_haproxy_duration(value).unwrap_or_else(|_| {
                warn(name, value, "not a duration");
                default
            }),
        };
        let server_timeout = duration(TIMEOUT, defaults.server_timeout, &mut warn);
        let tunnel_timeout = duration(TIMEOUT_TUNNEL, defaults.tunnel_timeout, &mut warn);
        let health_check_interval = duration(HEALTH_CHECK_INTERVAL, defaults.health_check_interval, &mut warn);

        let forwarded = match get(SET_FORWARDED_HEADERS) {
            None => defaults.forwarded,
            Some(value) => ForwardedPolicy::parse(value).unwrap_or_else(|| {
                warn(SET_FORWARDED_HEADERS, value, "expected append, replace, if-none or never");
                defaults.forwarded
            }),
        };

        let cookie = cookie_policy(key, route, defaults, &mut warn);

        let allowlist =
            get(IP_ALLOWLIST).map(|v| (IP_ALLOWLIST, v)).or_else(|| get(IP_WHITELIST).map(|v| (IP_WHITELIST, v)));
        let allowlist = allowlist.map(|(name, value)| {
            let (list, errors) = IpAllowlist::parse(value);
            for error in errors {
                warn(name, value, &format!("{error} (entry ignored)"));
            }
            list
        });

        let number = |name: &str, warn: &mut dyn FnMut(&str, &str, &str)| {
            get(name).and_then(|value| {
                value.parse::<u32>().ok().or_else(|| {
                    warn(name, value, "not a non-negative integer");
                    None
                })
            })
        };
        let rate_limits = if get(RATE_LIMIT).is_some_and(is_true) {
            RateLimits {
                concurrent_tcp: number(RATE_LIMIT_CONCURRENT_TCP, &mut warn),
                rate_tcp: number(RATE_LIMIT_RATE_TCP, &mut warn),
                rate_http: number(RATE_LIMIT_RATE_HTTP, &mut warn),
            }
        } else {
            RateLimits::default()
        };
        let pod_max_connections = number(POD_CONCURRENT_CONNECTIONS, &mut warn).filter(|n| *n > 0);

        let rewrite_target =
            raw_annotation(route, REWRITE_TARGET).filter(|value| !value.is_empty()).and_then(|value| {
                RewriteTarget::new(value, route.spec.path.as_deref())
                    .map_err(|why| warnings.push(format!("annotation {REWRITE_TARGET}={value:?}: {why}; not applied")))
                    .ok()
            });
        let hsts = match get(HSTS_HEADER) {
            Some(value) if tls.is_some() && !passthrough => parse_hsts(value)
                .map_err(|why| warnings.push(format!("annotation {HSTS_HEADER}={value:?}: {why}; not sent")))
                .ok(),
            _ => None,
        };

        let (mut request_headers, mut response_headers) =
            (defaults.request_headers.clone(), defaults.response_headers.clone());
        if let Some(actions) = route.spec.http_headers.as_ref().and_then(|h| h.actions.as_ref()) {
            for (direction, list, out) in [
                (Direction::Request, &actions.request, &mut request_headers),
                (Direction::Response, &actions.response, &mut response_headers),
            ] {
                let (parsed, errors) = header_actions::from_route(list, direction);
                out.extend(parsed);
                warnings.extend(errors.into_iter().map(|e| format!("spec.httpHeaders.actions: {e} (action ignored)")));
            }
        }
        let filters = route.spec.gateway_filters.as_deref();
        if let Some(filters) = filters {
            for (list, out) in [
                (&filters.request_header_adds, &mut request_headers),
                (&filters.response_header_adds, &mut response_headers),
            ] {
                let (parsed, errors) = header_actions::appends(list);
                out.extend(parsed);
                warnings.extend(errors.into_iter().map(|e| format!("HTTPRoute header modifier add: {e} (ignored)")));
            }
        }

        let policy = RoutePolicy {
            balance,
            cookie,
            forwarded,
            server_timeout,
            tunnel_timeout,
            allowlist,
            rate_limits,
            request_headers,
            response_headers,
            rewrite_target,
            replace_full_path: filters.and_then(|f| f.replace_full_path.clone()),
            pod_max_connections,
            health_check_interval,
            hsts,
            h1_adjust_case: get(H1_ADJUST_CASE).is_some_and(is_true),
        };
        (policy, warnings)
    }
}

/// A non-empty annotation value, trimmed.
pub fn annotation<'r>(route: &'r Route, name: &str) -> Option<&'r str> {
    let annotations = route.metadata.annotations.as_ref()?;
    annotations.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// An annotation value exactly as written (the OpenShift template reads rewrite-target untrimmed).
fn raw_annotation<'r>(route: &'r Route, name: &str) -> Option<&'r str> {
    route.metadata.annotations.as_ref()?.get(name).map(String::as_str)
}

/// roundrobin when more than one service carries weight, else `ROUTER_LOAD_BALANCE_ALGORITHM`.
fn default_balance(weighted_services: usize, defaults: &RouterDefaults) -> BalanceAlgorithm {
    if weighted_services > 1 {
        BalanceAlgorithm::RoundRobin
    } else {
        defaults.load_balance_algorithm
    }
}

fn cookie_policy(
    key: &ObjectKey,
    route: &Route,
    defaults: &RouterDefaults,
    warn: &mut dyn FnMut(&str, &str, &str),
) -> Option<CookiePolicy> {
    let get = |name: &str| annotation(route, name);
    if get(DISABLE_COOKIES).is_some_and(is_true) {
        return None;
    }
    let tls = route.spec.tls.as_ref();
    if tls.is_some_and(|t| t.termination == "passthrough") {
        return None;
    }
    let name = match get(COOKIE_NAME) {
        Some(name) if valid_cookie_name(name) => name.to_string(),
        Some(name) => {
            warn(COOKIE_NAME, name, "must match [a-zA-Z0-9_-]+");
            default_cookie_name(key, defaults)
        }
        None => default_cookie_name(key, defaults),
    };
    let secure = tls.is_some_and(|t| t.insecure_edge_termination_policy.as_deref() != Some("Allow"));
    let same_site = match get(COOKIE_SAME_SITE) {
        Some(value) => SameSite::parse(value).or_else(|| {
            warn(COOKIE_SAME_SITE, value, "expected Lax, Strict or None");
            None
        }),
        None => secure.then_some(SameSite::None),
    };
    Some(CookiePolicy { name, secure, same_site })
}

fn default_cookie_name(key: &ObjectKey, defaults: &RouterDefaults) -> String {
    match &defaults.cookie_name {
        Some(name) => name.clone(),
        None => md5_hex(&format!("{}:{}", key.namespace, key.name)),
    }
}

/// HAProxy template truthiness: true, TRUE, True, yes, y, 1, on.
pub fn is_true(value: &str) -> bool {
    matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "y" | "1" | "on")
}
