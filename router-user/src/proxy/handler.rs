//! One HTTP request through the router, in named phases:
//! 1. check: refuse what must not be forwarded (empty Content-Length, a Host header disagreeing with an
//!    absolute-form target) with 400;
//! 2. route: normalised host (see `request_host`) + path (no query) -> backend in the live table, else 503;
//! 3. client certificates: a route with its own check takes the request only from a connection whose
//!    handshake made it (`client_auth_check`), else 421 (403 for a subject its filter refuses);
//! 4. protect: the route's IP allowlist and per-client rate limits (`protection::RouteGate`); a refused
//!    client's connection is closed without an answer, as HAProxy's `tcp-request content reject` does;
//! 5. rewrite: headers (see `rewrite`), sticky cookie hidden from the pod, `rewrite-target`;
//! 6. forward: the sticky endpoint or the balancer's pick, retrying another endpoint after a failed connect
//!    when the request has no body (`balance::Attempts`); all failed -> 503, no answer in time -> 504, broken
//!    exchange -> 502, but a broken client body (malformed chunked framing) -> 400 and the connection closed;
//! 7. respond: hop-by-hop headers dropped, sticky cookie inserted, response header actions, upgrades
//!    handed to the tunnel, counted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use std::time::{Duration, Instant, SystemTime};
use tokio_util::task::TaskTracker;

use http::header::{self, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Version};
use http_body_util::Either;
use hyper::body::Body;
use tracing::debug;

use super::client_auth_check::{HandshakeCheck, Verdict};
use super::client_body::ClientBody;
use super::client_io::BodyWaitClock;
use super::client_io::HeadTiming;
use super::compression::{GzipBody, ResponseCompression};
use super::forwarded::{ConnectionInfo, ForwardedValues};
use super::header_case::{AdjustedCase, HeaderCaseMap};
use super::headers::{ends_in_chunked, is_upgrade, strip_hop_by_hop};
use super::lease::{EndpointLease, LeasedBody};
use super::pod::PodUpgrade;
use super::request_body::RequestBody;
use super::request_host::request_host;
use super::request_log::{LoggedBody, RequestLog, ServedBy};
use super::request_trial::RequestTrial;
use super::response::{
    bad_request, forbidden, gateway_error, misdirected, redirect_to_https, unavailable, ErrorFile, ProxyBody,
};
use super::rewrite::{replace_full_path, rewrite_headers, rewrite_target};
use super::sticky::{cookie_value, insert_cookie, remove_cookie};
use super::upgrade::{tunnel_upgraded, ClientSide, PodSide};
use super::upstream::{PodResponseBody, Upstream, UpstreamError};
use super::wire_size::response_head_size;
use crate::access_log::AccessLog;
use crate::balance::{Attempts, GaveUp};
use crate::metrics::{Frontend, Metrics};
use crate::policy::header_actions;
use crate::protection::{ConnectionTickets, RefusedConnection, RouteGate};
use crate::relay::FinTimeouts;
use crate::table::{lowercase, normalize_request_host, Backend, HttpAction, RequestFacts, TableHandle};

/// Tells the pod the client spoke HTTP/2 to the router (set by the OpenShift router on `h2` ALPN); `h3` for
/// HTTP/3, which the OpenShift router does not serve.
const X_FORWARDED_PROTO_VERSION: HeaderName = HeaderName::from_static("x-forwarded-proto-version");

/// The request head limit of OpenShift's defaults: ROUTER_BUF_SIZE 32768 less ROUTER_MAX_REWRITE_SIZE 8192.
pub const DEFAULT_REQUEST_HEAD_LIMIT: usize = 32768 - 8192;

/// Router-wide proxy settings.
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    /// `ROUTER_ERRORFILE_503`: replaces the built-in 503 page.
    pub error_503: Option<ErrorFile>,
    /// `ROUTER_ERRORFILE_404`: requests no route takes get it (status 404) instead of the 503. OpenShift's
    /// template then adds `http-request deny deny_status 404` to its default backend, whose `errorfile 404`
    /// is this file.
    pub error_404: Option<ErrorFile>,
    /// How long a request waits for a free `pod-concurrent-connections` slot before a 503.
    pub queue_timeout: Duration,
    /// Bytes of an HTTP/1 request line and header section, or of an HTTP/2 header list, beyond which a
    /// request is refused with 431 before it is routed (see `config::LimitArgs`).
    pub request_head_limit: usize,
    /// ROUTER_ENABLE_COMPRESSION: gzip the listed types (ROUTER_COMPRESSION_MIME) for clients that take it.
    pub compression: Option<Arc<ResponseCompression>>,
    /// ROUTER_H1_CASE_ADJUST: header names written in these cases on HTTP/1 (responses to every client,
    /// requests to the pods of routes annotated `h1-adjust-case`).
    pub h1_case_adjust: Option<Arc<HeaderCaseMap>>,
    /// The access log and the unique request id (off by default).
    pub access_log: Arc<AccessLog>,
    /// ROUTER_CLIENT_FIN_TIMEOUT / ROUTER_DEFAULT_SERVER_FIN_TIMEOUT for WebSocket tunnels.
    pub fin_timeouts: Option<FinTimeouts>,
    /// ROUTER_ENABLE_HTTP3: the `Alt-Svc` value advertising HTTP/3 on HTTP/1.1 and HTTP/2 responses of edge
    /// and reencrypt routes that HTTP/3 serves (not those checking client certificates themselves).
    pub alt_svc: Option<HeaderValue>,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self {
            error_503: None,
            error_404: None,
            queue_timeout: Duration::ZERO,
            request_head_limit: DEFAULT_REQUEST_HEAD_LIMIT,
            compression: None,
            h1_case_adjust: None,
            access_log: AccessLog::off(),
            fin_timeouts: None,
            alt_svc: None,
        }
    }
}

pub struct HttpProxy {
    table: TableHandle,
    upstream: Upstream,
    metrics: Arc<Metrics>,
    options: ProxyOptions,
    /// Draining after a hand-over: HTTP/1.1 connections stay open until their next response, which says
    /// `Connection: close`, instead of closing while a request may be on its way.
    close_on_next_response: AtomicBool,
    /// The WebSocket (upgraded) tunnels, each its own task: a draining router waits for them as for the
    /// connections, up to the hard-stop period.
    tunnels: TaskTracker,
}

/// A client connection's state shared by its requests: where it comes from, and the routes whose
/// connection limits count it.
pub struct ClientConnection {
    pub info: ConnectionInfo,
    /// Headers the router vouches for on every request of a TLS connection (X-SSL-Client-*).
    pub tls_headers: Vec<(HeaderName, HeaderValue)>,
    /// The client certificate check its handshake made for the SNI's route (terminated :443 only).
    pub handshake_check: HandshakeCheck,
    /// When the connection was taken (the access log's `%t`).
    pub accepted_at: SystemTime,
    /// The OpenShift frontend its requests are counted on: `public` for plain HTTP, `fe_sni` (or `fe_no_sni`
    /// when the client sent no SNI) for terminated TLS.
    pub frontend: Frontend,
    /// The forwarded headers' values its requests share.
    forwarded: ForwardedValues,
    tickets: ConnectionTickets,
}

impl ClientConnection {
    pub fn new(info: ConnectionInfo) -> Self {
        let frontend = if info.proto == "https" { Frontend::FeSni } else { Frontend::Public };
        Self {
            forwarded: ForwardedValues::new(&info),
            info,
            tls_headers: Vec::new(),
            handshake_check: HandshakeCheck::default(),
            accepted_at: SystemTime::now(),
            frontend,
            tickets: ConnectionTickets::default(),
        }
    }

    fn is_tls(&self) -> bool {
        self.info.proto == "https"
    }
}

impl HttpProxy {
    pub fn new(table: TableHandle, upstream: Upstream, metrics: Arc<Metrics>, options: ProxyOptions) -> Self {
        Self {
            table,
            upstream,
            metrics,
            options,
            close_on_next_response: AtomicBool::new(false),
            tunnels: TaskTracker::new(),
        }
    }

    /// From now on, draining HTTP/1.1 connections close with their next response (see `close_on_next_response`).
    pub fn close_connections_on_next_response(&self) {
        self.close_on_next_response.store(true, Ordering::Release);
    }

    /// The upgraded tunnels' tasks.
    pub fn tunnels(&self) -> &TaskTracker {
        &self.tunnels
    }

    /// Whether draining HTTP/1.1 connections wait for their next response to close.
    pub fn closes_on_next_response(&self) -> bool {
        self.close_on_next_response.load(Ordering::Acquire)
    }

    /// Answers one request; `timing` (when its head began) is for the access log, whose line the returned
    /// body sends when it ends.
    pub async fn handle(
        &self,
        connection: &ClientConnection,
        mut request: Request<RequestBody>,
        timing: HeadTiming,
    ) -> Result<Response<LoggedBody<ProxyBody>>, RefusedConnection> {
        let started = Instant::now();
        let mut log = RequestLog::begin(
            &self.options.access_log,
            &connection.info,
            connection.accepted_at,
            &request,
            timing,
            started,
        );
        if let Some((name, value)) = log.as_mut().and_then(|log| log.unique_id()) {
            request.headers_mut().insert(name, value);
        }
        let routed = match self.route(connection, &mut request) {
            Ok(routed) => routed,
            Err(refused) => {
                if let Some(log) = log {
                    log.refused();
                }
                return Err(refused);
            }
        };
        // Forwarded from here rather than from `route`: one async level less, so the request is moved into
        // one more future state instead of two (each level held its own copy).
        let (backend, response) = match routed {
            Routed::Answered(backend, response) => (backend, response),
            Routed::Forward { backend, gzip } => {
                let response = self.forward(&backend, connection, request, gzip).await;
                (Some(backend), response)
            }
        };
        let code = response.status().as_u16();
        let frontend = connection.frontend;
        let counted = backend.as_deref().map(|backend| (&backend.labels, &backend.requests));
        self.metrics.count_response(frontend, counted, code, started.elapsed());
        if let Some(log) = log.as_mut() {
            log.responded(backend.as_deref(), &response);
        }
        Ok(response.map(|body| LoggedBody::new(body, log)))
    }

    pub fn access_log(&self) -> &Arc<AccessLog> {
        &self.options.access_log
    }

    /// See [`ProxyOptions::h1_case_adjust`].
    pub fn h1_case_adjust(&self) -> Option<Arc<HeaderCaseMap>> {
        self.options.h1_case_adjust.clone()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// See [`ProxyOptions::request_head_limit`].
    pub fn request_head_limit(&self) -> usize {
        self.options.request_head_limit
    }

    fn unavailable(&self) -> Response<ProxyBody> {
        self.options.error_503.as_ref().map_or_else(unavailable, ErrorFile::response)
    }

    /// The answer of OpenShift's default backend, for a request no route takes: the ROUTER_ERRORFILE_404
    /// page when there is one, else the 503.
    fn no_route(&self) -> Response<ProxyBody> {
        self.options.error_404.as_ref().map_or_else(|| self.unavailable(), ErrorFile::response)
    }

    /// Phases 1 to 5: the request checked, routed and rewritten for the pod, or answered by the router.
    fn route(
        &self,
        connection: &ClientConnection,
        request: &mut Request<RequestBody>,
    ) -> Result<Routed, RefusedConnection> {
        let unrouted = |response| Ok(Routed::Answered(None, response));
        if has_empty_content_length(request) {
            return unrouted(bad_request());
        }
        let raw_host = match request_host(request.version(), request.uri(), request.headers()) {
            Ok(Some(host)) => host,
            Ok(None) => return unrouted(self.no_route()),
            Err(conflict) => {
                debug!(%conflict, "request refused");
                return unrouted(bad_request());
            }
        };
        let host = normalize_request_host(&raw_host);
        let table = self.table.load();
        let rules = if connection.is_tls() { table.https() } else { table.http() };
        let facts = RequestFacts {
            path: request.uri().path(),
            method: request.method(),
            headers: request.headers(),
            query: request.uri().query(),
        };
        let Some(backend) = rules.lookup_request(&host, &facts).cloned() else {
            debug!(%host, path = request.uri().path(), "no route");
            return unrouted(self.no_route());
        };
        if matches!(backend.action, HttpAction::NotOnHttp) && !connection.is_tls() {
            // A TLS route without an insecure policy is not in OpenShift's HTTP map: its default backend answers.
            return unrouted(self.no_route());
        }
        if connection.is_tls() {
            match connection.handshake_check.judge(backend.client_auth.as_deref()) {
                Verdict::Pass => {}
                Verdict::Misdirected => {
                    debug!(%host, "route checks client certificates this connection's handshake did not: 421");
                    return unrouted(misdirected());
                }
                Verdict::Forbidden => {
                    debug!(%host, "client certificate subject refused by the route's filter");
                    return unrouted(forbidden());
                }
            }
        }
        self.protect(&backend, connection)?;
        if let (HttpAction::RedirectToHttps, false) = (&backend.action, connection.is_tls()) {
            let target = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
            return Ok(Routed::Answered(Some(backend), redirect_to_https(&host, target)));
        }
        let lowered = lowercase(&raw_host);
        let upgrade = is_upgrade(request.headers());
        let trailers = wants_trailers(request);
        let proto_version = match request.version() {
            Version::HTTP_2 => Some("h2"),
            Version::HTTP_3 => Some("h3"),
            _ => None,
        };
        let gzip = self.client_takes_gzip(request);
        if let (true, Some(map)) = (backend.policy.h1_adjust_case, &self.options.h1_case_adjust) {
            request.extensions_mut().insert(AdjustedCase(map.clone()));
        }
        let headers = request.headers_mut();
        rewrite_headers(headers, upgrade, &connection.forwarded, &lowered, &backend.policy);
        for (name, value) in &connection.tls_headers {
            headers.insert(name.clone(), value.clone());
        }
        if backend.client_auth.is_some() {
            for (name, value) in connection.handshake_check.headers() {
                headers.insert(name.clone(), value.clone());
            }
        }
        if let Some(version) = proto_version {
            headers.insert(X_FORWARDED_PROTO_VERSION, HeaderValue::from_static(version));
        }
        if trailers {
            // gRPC needs `te: trailers` end to end; it is the one TE value that is not hop-by-hop.
            headers.insert(header::TE, HeaderValue::from_static("trailers"));
        }
        let policy = &backend.policy;
        let rewritten = match (&policy.replace_full_path, &policy.rewrite_target) {
            (Some(path), _) => replace_full_path(request.uri(), path),
            (None, Some(rule)) => rewrite_target(request.uri(), rule),
            (None, None) => Ok(None),
        };
        match rewritten {
            Err(failed) => {
                debug!(%host, path = request.uri().path(), "{failed}");
                Ok(Routed::Answered(Some(backend), gateway_error(StatusCode::INTERNAL_SERVER_ERROR)))
            }
            Ok(uri) => {
                if let Some(uri) = uri {
                    *request.uri_mut() = uri;
                }
                Ok(Routed::Forward { backend, gzip })
            }
        }
    }

    /// The allowlist and rate limits of the route; an error closes the client's connection.
    fn protect(&self, backend: &Backend, connection: &ClientConnection) -> Result<(), RefusedConnection> {
        let gate = RouteGate {
            backend: &backend.labels.backend,
            allowlist: backend.policy.allowlist.as_ref(),
            limiter: backend.limiter.as_ref(),
            metrics: &self.metrics,
        };
        gate.admit_request(connection.info.client.ip(), &connection.tickets)
    }

    async fn forward(
        &self,
        backend: &Arc<Backend>,
        connection: &ClientConnection,
        mut request: Request<RequestBody>,
        gzip: bool,
    ) -> Response<ProxyBody> {
        let client = connection.info.client.ip();
        let client_upgrade = is_upgrade(request.headers()).then(|| ClientSide::of(&mut request));
        let cookie = backend.policy.cookie.as_ref();
        let client_cookie = cookie.and_then(|c| cookie_value(request.headers(), &c.name));
        let sticky = client_cookie.as_deref().and_then(|value| backend.by_cookie(value));
        if let Some(cookie) = cookie {
            remove_cookie(request.headers_mut(), &cookie.name);
        }
        if sticky.is_none() && !backend.has_weighted_endpoints() {
            return self.unavailable();
        }
        let (parts, body) = request.into_parts();
        let alt_svc = self.alt_svc_for(backend, connection, parts.version);
        let body_wait = parts.extensions.get::<BodyWaitClock>().map(BodyWaitClock::body_wait);
        // A request without a body can be sent again to another endpoint when a connect fails.
        let retryable = body.is_end_stream();
        let (body, client_fault) = match retryable {
            true => (None, None),
            false => {
                let (body, fault) = ClientBody::watch(body, body_wait);
                (Some(body), Some(fault))
            }
        };
        let attempts = Attempts {
            backend: &backend.labels.backend,
            endpoints: backend.endpoints.len(),
            metrics: &self.metrics,
            retry_connect: retryable,
        };
        let backend_proxy = self.metrics.backend_proxy(&backend.labels, &backend.requests);
        let mut trial = RequestTrial {
            backend,
            client,
            sticky,
            queue_timeout: self.options.queue_timeout,
            upstream: &self.upstream,
            parts: &parts,
            body,
            client_fault,
            backend_proxy,
            proxies: &self.metrics.haproxy,
            queued_for: Duration::ZERO,
        };
        let _session = backend_proxy.open_session();
        let started = Instant::now();
        match attempts.run(&mut trial).await {
            Ok((lease, mut response)) => {
                if self.options.access_log.records_requests() {
                    response.extensions_mut().insert(ServedBy(lease.index()));
                }
                let endpoint = lease.endpoint();
                let server_proxy = self.metrics.haproxy.server(&backend.labels.backend, &endpoint.id, &endpoint.proxy);
                server_proxy.count_session();
                server_proxy.observe_concurrency(u64::from(endpoint.in_flight.get()));
                server_proxy.count_response(response.status().as_u16());
                let elapsed = started.elapsed();
                let pod_connection = match response.body() {
                    Either::Right(pod_body) => pod_body.connection(),
                    Either::Left(_) => None,
                };
                let head = response_head_size(&response);
                for proxy in [backend_proxy, server_proxy] {
                    proxy.observe_response_time(elapsed);
                    proxy.observe_queue_time(trial.queued_for);
                    proxy.add_bytes(0, head);
                    // Known for the router's own HTTP/1.1 client; hyper's (h2c, reencrypt) does not tell.
                    if let Some(connection) = pod_connection {
                        proxy.observe_connect_time(connection.connect);
                        if connection.reused {
                            proxy.connections_reused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                let mut response = self.respond(backend, response, lease, client_cookie, client_upgrade, gzip);
                if let (true, Some(hsts)) = (connection.is_tls(), &backend.policy.hsts) {
                    response.headers_mut().insert(header::STRICT_TRANSPORT_SECURITY, hsts.clone());
                }
                if let Some(alt_svc) = alt_svc {
                    response.headers_mut().insert(header::ALT_SVC, alt_svc);
                }
                response
            }
            Err(GaveUp::Failed(UpstreamError::Timeout(_))) => gateway_error(StatusCode::GATEWAY_TIMEOUT),
            Err(GaveUp::Failed(UpstreamError::Exchange(_) | UpstreamError::Unanswered(_))) => {
                gateway_error(StatusCode::BAD_GATEWAY)
            }
            Err(GaveUp::Failed(UpstreamError::ClientBody(_))) => bad_request(),
            Err(GaveUp::Failed(UpstreamError::Connect(_)) | GaveUp::Exhausted) => self.unavailable(),
        }
    }

    /// The `Alt-Svc` header of a response to a request over TCP :443 for a route that HTTP/3 serves: edge or
    /// reencrypt (a request on a terminated connection) without its own client certificate check, which
    /// HTTP/3 refuses (see `http3`). Never on :80 nor on HTTP/3 itself.
    fn alt_svc_for(&self, backend: &Backend, connection: &ClientConnection, version: Version) -> Option<HeaderValue> {
        let serves = connection.is_tls() && version != Version::HTTP_3 && backend.client_auth.is_none();
        self.options.alt_svc.clone().filter(|_| serves)
    }

    fn respond(
        &self,
        backend: &Backend,
        mut response: Response<PodResponseBody>,
        lease: EndpointLease,
        client_cookie: Option<String>,
        client_upgrade: Option<ClientSide>,
        gzip: bool,
    ) -> Response<ProxyBody> {
        if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            if let Some(client_side) = client_upgrade {
                let pod_side = match response.extensions_mut().remove::<PodUpgrade>() {
                    Some(upgrade) => PodSide::Direct(upgrade),
                    None => PodSide::Hyper(hyper::upgrade::on(&mut response)),
                };
                self.tunnels.spawn(tunnel_upgraded(
                    client_side,
                    pod_side,
                    backend.policy.tunnel_timeout,
                    self.options.fin_timeouts,
                ));
                return response.map(|body| Either::Left(Either::Left(LeasedBody::new(body, None, None))));
            }
        }
        // Decided on the pod's headers, before the response header actions (HAProxy's filter order).
        let compress = gzip && self.compress_response(&mut response);
        let headers = response.headers_mut();
        strip_hop_by_hop(headers, false);
        if let Some(cookie) = &backend.policy.cookie {
            let value = lease.endpoint().cookie.as_str();
            if client_cookie.as_deref() != Some(value) {
                insert_cookie(headers, cookie.set_cookie(value));
            }
        }
        header_actions::apply(&backend.policy.response_headers, headers);
        response.map(|body| {
            // The body's bytes count toward the backend's and the server's `bytes_out`.
            let endpoint = lease.endpoint();
            let server = self.metrics.haproxy.server(&backend.labels.backend, &endpoint.id, &endpoint.proxy).clone();
            let counters = [self.metrics.backend_proxy(&backend.labels, &backend.requests).clone(), server];
            let body = LeasedBody::new(body, Some(lease), Some(counters));
            Either::Left(if compress { Either::Right(Box::new(GzipBody::new(body))) } else { Either::Left(body) })
        })
    }

    /// The request side of ROUTER_ENABLE_COMPRESSION (see `compression`).
    fn client_takes_gzip(&self, request: &Request<RequestBody>) -> bool {
        let compression = self.options.compression.as_deref();
        compression.is_some_and(|c| c.client_accepts(request.method(), request.version(), request.headers()))
    }

    /// The response side: true when the body is to be gzipped (its headers are then rewritten for it).
    fn compress_response(&self, response: &mut Response<PodResponseBody>) -> bool {
        let Some(compression) = self.options.compression.as_deref() else { return false };
        let status = response.status();
        let headers = response.headers();
        // hyper's client bodies (h2c, reencrypt) end by their framing; the router's HTTP/1.1 client's only
        // with a Content-Length or chunked coding, not when the pod closes the connection.
        let delimited = matches!(response.body(), Either::Left(_))
            || headers.contains_key(header::CONTENT_LENGTH)
            || headers
                .get_all(header::TRANSFER_ENCODING)
                .iter()
                .next_back()
                .is_some_and(|coding| ends_in_chunked(coding.as_bytes()));
        compression.compress_response(status, response.headers_mut(), delimited)
    }
}

/// Where `route` leaves a request.
#[allow(clippy::large_enum_variant)] // returned once per request and matched at once: a box would cost an allocation
enum Routed {
    /// Answered by the router itself, for the route it was meant for (if one took it).
    Answered(Option<Arc<Backend>>, Response<ProxyBody>),
    /// Rewritten for the route's pods; `gzip`: the client takes a gzipped response.
    Forward { backend: Arc<Backend>, gzip: bool },
}

/// The client asked for trailers (`TE: trailers`), as gRPC clients do.
fn wants_trailers(request: &Request<RequestBody>) -> bool {
    request
        .headers()
        .get_all(header::TE)
        .iter()
        .any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("trailers"))))
}

/// HAProxy (and so the OpenShift router) refuses `Content-Length:` with an empty value.
fn has_empty_content_length(request: &Request<RequestBody>) -> bool {
    request.headers().get_all(header::CONTENT_LENGTH).iter().any(|v| v.as_bytes().iter().all(u8::is_ascii_whitespace))
}
