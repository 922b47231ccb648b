//! Settings of route admission, balancing, headers, cookies and timeouts (the OpenShift router's
//! `ROUTER_*` variables), and their conversion into the table's build options.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::admission::{AdmissionSettings, LabelSelector, SelectorError};
use crate::duration::parse_haproxy_duration;
use crate::listen::ClientTimeouts;
use crate::policy::{header_actions, BalanceAlgorithm, Direction, ForwardedPolicy, RouterDefaults};
use crate::proxy::{ErrorFile, ProxyOptions};

#[derive(Args, Clone, Debug)]
pub struct RoutingArgs {
    /// Admit routes with `wildcardPolicy: Subdomain`.
    #[arg(long, env = "ROUTER_ALLOW_WILDCARD_ROUTES")]
    pub allow_wildcard_routes: bool,

    /// Let routes in any namespace share a host (oldest route per host+path wins).
    #[arg(long, env = "ROUTER_DISABLE_NAMESPACE_OWNERSHIP_CHECK")]
    pub disable_namespace_ownership_check: bool,

    /// Comma-separated domains routes may use (suffix match); empty allows all.
    #[arg(long, env = "ROUTER_ALLOWED_DOMAINS", value_delimiter = ',')]
    pub allowed_domains: Vec<String>,

    /// Comma-separated domains routes may not use; wins over the allowed list.
    #[arg(long, env = "ROUTER_DENIED_DOMAINS", value_delimiter = ',')]
    pub denied_domains: Vec<String>,

    /// Domain for routes that set only `spec.subdomain`.
    #[arg(long, env = "ROUTER_DOMAIN")]
    pub router_domain: Option<String>,

    /// Host template (`${name}`, `${namespace}`) for routes without a host.
    #[arg(long, env = "ROUTER_SUBDOMAIN")]
    pub hostname_template: Option<String>,

    /// Apply the host template to every route, replacing spec.host.
    #[arg(long, env = "ROUTER_OVERRIDE_HOSTNAME")]
    pub override_hostname: bool,

    /// Comma-separated domains whose route hosts are replaced by the host template.
    #[arg(long, env = "ROUTER_OVERRIDE_DOMAINS", value_delimiter = ',')]
    pub override_domains: Vec<String>,

    /// Label selector: serve only routes whose labels match (sharding).
    #[arg(long, env = "ROUTE_LABELS", default_value = "")]
    pub route_labels: String,

    /// Label selector: serve only routes in namespaces whose labels match (sharding).
    #[arg(long, env = "NAMESPACE_LABELS", default_value = "")]
    pub namespace_labels: String,

    /// Balancing for routes with one weighted service: roundrobin, leastconn, source or random.
    #[arg(long, env = "ROUTER_LOAD_BALANCE_ALGORITHM", default_value = "random")]
    pub load_balance_algorithm: String,

    /// Sticky cookie name for routes without `router.openshift.io/cookie_name`.
    #[arg(long, env = "ROUTER_COOKIE_NAME")]
    pub cookie_name: Option<String>,

    /// X-Forwarded-*/Forwarded policy: append, replace, if-none or never.
    #[arg(long, env = "ROUTER_SET_FORWARDED_HEADERS", default_value = "append")]
    pub set_forwarded_headers: String,

    /// Idle time after which an open keep-alive client connection is closed.
    #[arg(long, env = "ROUTER_SLOWLORIS_HTTP_KEEPALIVE", default_value = "300s", value_parser = parse_haproxy_duration)]
    pub keep_alive_timeout: Duration,

    /// Inactivity limit of WebSocket and other upgraded tunnels.
    #[arg(long, env = "ROUTER_DEFAULT_TUNNEL_TIMEOUT", default_value = "1h", value_parser = parse_haproxy_duration)]
    pub tunnel_timeout: Duration,

    /// Interval of the TCP health checks of routes with more than one endpoint.
    #[arg(long, env = "ROUTER_BACKEND_CHECK_INTERVAL", default_value = "5000ms", value_parser = parse_haproxy_duration)]
    pub backend_check_interval: Duration,

    /// Request header actions for every route: percent-encoded `name:value:Set` / `name:Delete`, comma-separated.
    #[arg(long, env = "ROUTER_HTTP_REQUEST_HEADERS", default_value = "")]
    pub http_request_headers: String,

    /// Response header actions for every route, same syntax.
    #[arg(long, env = "ROUTER_HTTP_RESPONSE_HEADERS", default_value = "")]
    pub http_response_headers: String,

    /// File with a whole HTTP response that replaces the router's 503 page.
    #[arg(long, env = "ROUTER_ERRORFILE_503")]
    pub errorfile_503: Option<PathBuf>,

    /// File with a whole HTTP response for requests no route takes (OpenShift's default backend then
    /// answers 404 with it instead of 503).
    #[arg(long, env = "ROUTER_ERRORFILE_404")]
    pub errorfile_404: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    #[error("{variable}: {source}")]
    Selector { variable: &'static str, source: SelectorError },
    #[error("{variable}={value:?}: {why}")]
    Value { variable: &'static str, value: String, why: String },
}

impl RoutingArgs {
    pub fn admission(&self) -> Result<AdmissionSettings, RoutingError> {
        let selector = |variable: &'static str, text: &str| {
            LabelSelector::parse(text).map_err(|source| RoutingError::Selector { variable, source })
        };
        let list = |values: &[String]| values.iter().map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
        Ok(AdmissionSettings {
            allow_wildcard_routes: self.allow_wildcard_routes,
            disable_namespace_ownership_check: self.disable_namespace_ownership_check,
            allowed_domains: list(&self.allowed_domains),
            denied_domains: list(&self.denied_domains),
            router_domain: self.router_domain.clone().filter(|d| !d.is_empty()),
            hostname_template: self.hostname_template.clone().filter(|t| !t.is_empty()),
            override_hostname: self.override_hostname,
            override_domains: list(&self.override_domains),
            route_selector: selector("ROUTE_LABELS", &self.route_labels)?,
            namespace_selector: selector("NAMESPACE_LABELS", &self.namespace_labels)?,
        })
    }

    pub fn defaults(&self, server_timeout: Duration) -> Result<RouterDefaults, RoutingError> {
        let invalid = |variable: &'static str, value: &str, why: &str| RoutingError::Value {
            variable,
            value: value.to_string(),
            why: why.to_string(),
        };
        let load_balance_algorithm = BalanceAlgorithm::parse(&self.load_balance_algorithm).ok_or_else(|| {
            invalid(
                "ROUTER_LOAD_BALANCE_ALGORITHM",
                &self.load_balance_algorithm,
                "expected roundrobin, leastconn, source or random",
            )
        })?;
        let forwarded = ForwardedPolicy::parse(&self.set_forwarded_headers).ok_or_else(|| {
            invalid(
                "ROUTER_SET_FORWARDED_HEADERS",
                &self.set_forwarded_headers,
                "expected append, replace, if-none or never",
            )
        })?;
        let (request_headers, errors) = header_actions::from_env(&self.http_request_headers, Direction::Request);
        if let Some(error) = errors.first() {
            return Err(invalid("ROUTER_HTTP_REQUEST_HEADERS", &self.http_request_headers, error));
        }
        let (response_headers, errors) = header_actions::from_env(&self.http_response_headers, Direction::Response);
        if let Some(error) = errors.first() {
            return Err(invalid("ROUTER_HTTP_RESPONSE_HEADERS", &self.http_response_headers, error));
        }
        Ok(RouterDefaults {
            load_balance_algorithm,
            tcp_balance: BalanceAlgorithm::Source,
            cookie_name: self.cookie_name.clone().filter(|n| !n.is_empty()),
            forwarded,
            server_timeout,
            tunnel_timeout: self.tunnel_timeout,
            health_check_interval: self.backend_check_interval,
            request_headers,
            response_headers,
        })
    }

    pub fn proxy_options(&self, queue_timeout: Duration) -> Result<ProxyOptions, RoutingError> {
        let load = |variable: &'static str, path: &Option<PathBuf>| match path {
            None => Ok(None),
            Some(path) => ErrorFile::load(path).map(Some).map_err(|why| RoutingError::Value {
                variable,
                value: path.display().to_string(),
                why,
            }),
        };
        let error_503 = load("ROUTER_ERRORFILE_503", &self.errorfile_503)?;
        let error_404 = load("ROUTER_ERRORFILE_404", &self.errorfile_404)?;
        Ok(ProxyOptions { error_503, error_404, queue_timeout, ..ProxyOptions::default() })
    }

    pub fn client_timeouts(&self, http_request: Duration, client: Duration, proxy_protocol: bool) -> ClientTimeouts {
        ClientTimeouts { http_request, keep_alive: self.keep_alive_timeout, client, proxy_protocol }
    }
}
