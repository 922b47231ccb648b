//! One HTTP request through the router, in named phases:
//! 1. check: refuse what must not be forwarded (empty Content-Length) with 400;
//! 2. route: normalised Host + path (no query) -> backend in the live table, else 503;
//! 3. rewrite: lowercase Host, drop `Proxy` and hop-by-hop headers, append the forwarded headers;
//! 4. forward: pick an endpoint round robin, send, retry another endpoint on a connect failure when the
//!    request has no body; all failed -> 503, no answer in time -> 504, broken exchange -> 502;
//! 5. respond: strip hop-by-hop response headers, splice upgrades (WebSocket) into a tunnel, count.

use std::convert::Infallible;
use std::sync::Arc;

use http::header::{self, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{Either, Empty};
use hyper::body::{Body, Incoming};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tracing::{debug, warn};

use super::forwarded::{append_forwarded, ConnectionInfo};
use super::headers::{is_upgrade, strip_hop_by_hop, PROXY};
use super::response::{bad_request, gateway_error, redirect_to_https, unavailable, ProxyBody};
use super::upstream::{Upstream, UpstreamBody, UpstreamError};
use crate::metrics::{BackendLabels, Metrics, UpstreamErrorLabels};
use crate::table::{normalize_request_host, Backend, HttpAction, TableHandle};

/// At most this many endpoints are tried for one request (HAProxy: `retries 3` with `option redispatch`).
const MAX_ATTEMPTS: usize = 3;

pub struct HttpProxy {
    table: TableHandle,
    upstream: Upstream,
    metrics: Arc<Metrics>,
}

impl HttpProxy {
    pub fn new(table: TableHandle, upstream: Upstream, metrics: Arc<Metrics>) -> Self {
        Self { table, upstream, metrics }
    }

    pub async fn handle(
        &self,
        info: ConnectionInfo,
        request: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Infallible> {
        let (labels, response) = self.route_and_forward(info, request).await;
        self.metrics.http_requests.get_or_create(&labels.with_code(response.status().as_u16())).inc();
        Ok(response)
    }

    async fn route_and_forward(
        &self,
        info: ConnectionInfo,
        mut request: Request<Incoming>,
    ) -> (BackendLabels, Response<ProxyBody>) {
        if has_empty_content_length(&request) {
            return (BackendLabels::unrouted(), bad_request());
        }
        let Some(raw_host) = request_host(&request) else { return (BackendLabels::unrouted(), unavailable()) };
        let table = self.table.load();
        let host = normalize_request_host(&raw_host);
        let Some(backend) = table.lookup(&host, request.uri().path()).cloned() else {
            debug!(%host, path = request.uri().path(), "no route");
            return (BackendLabels::unrouted(), unavailable());
        };
        drop(table);
        let labels = backend.labels.clone();
        let response = match backend.action {
            HttpAction::NotOnHttp => unavailable(),
            HttpAction::RedirectToHttps => {
                let target = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
                redirect_to_https(&host, target)
            }
            HttpAction::Forward => {
                let lowered = raw_host.to_ascii_lowercase();
                rewrite_request(&mut request, &info, &lowered);
                self.forward(&backend, request).await
            }
        };
        (labels, response)
    }

    async fn forward(&self, backend: &Backend, mut request: Request<Incoming>) -> Response<ProxyBody> {
        let upgrade = is_upgrade(request.headers());
        let client_upgrade: Option<OnUpgrade> = upgrade.then(|| hyper::upgrade::on(&mut request));
        let (parts, body) = request.into_parts();
        // A request without a body can be sent again to another endpoint when a connect fails.
        let retryable = body.is_end_stream();
        let mut body = if retryable { None } else { Some(body) };
        let mut tried = Vec::with_capacity(MAX_ATTEMPTS);

        while tried.len() < MAX_ATTEMPTS.min(backend.endpoints.len()) {
            let Some(index) = backend.pick(&tried) else { break };
            tried.push(index);
            let endpoint = &backend.endpoints[index];
            let mut upstream_request = Request::from_parts(parts.clone(), upstream_body(&mut body));
            *upstream_request.uri_mut() = upstream_uri(endpoint.addr, &parts.uri);
            match self.upstream.send(upstream_request).await {
                Ok(response) => {
                    endpoint.health.mark_up();
                    return finish_response(response, client_upgrade);
                }
                Err(error) => {
                    let labels = UpstreamErrorLabels { backend: backend.labels.backend.clone(), kind: error.kind() };
                    self.metrics.upstream_errors.get_or_create(&labels).inc();
                    warn!(backend = %backend.labels.backend, endpoint = %endpoint.addr, %error, "upstream failed");
                    match error {
                        UpstreamError::Connect(_) => {
                            endpoint.health.mark_down();
                            if retryable {
                                continue;
                            }
                            return unavailable();
                        }
                        UpstreamError::Timeout(_) => return gateway_error(StatusCode::GATEWAY_TIMEOUT),
                        UpstreamError::Exchange(_) => return gateway_error(StatusCode::BAD_GATEWAY),
                    }
                }
            }
        }
        unavailable()
    }
}

/// The Host header, or the authority of an absolute-form request URI.
fn request_host(request: &Request<Incoming>) -> Option<String> {
    let from_header = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    from_header.map(str::to_string).or_else(|| request.uri().authority().map(|a| a.as_str().to_string()))
}

/// HAProxy (and so the OpenShift router) refuses `Content-Length:` with an empty value.
fn has_empty_content_length(request: &Request<Incoming>) -> bool {
    request.headers().get_all(header::CONTENT_LENGTH).iter().any(|v| v.as_bytes().iter().all(u8::is_ascii_whitespace))
}

fn rewrite_request(request: &mut Request<Incoming>, info: &ConnectionInfo, host: &str) {
    let upgrade = is_upgrade(request.headers());
    let headers = request.headers_mut();
    strip_hop_by_hop(headers, upgrade);
    headers.remove(PROXY);
    if let Ok(value) = HeaderValue::from_str(host) {
        headers.insert(header::HOST, value);
    }
    append_forwarded(headers, info, host);
}

/// The client's body the first time; nothing on a retry (only bodiless requests are retried).
fn upstream_body(body: &mut Option<Incoming>) -> UpstreamBody {
    match body.take() {
        Some(incoming) => Either::Left(incoming),
        None => Either::Right(Empty::new()),
    }
}

fn upstream_uri(addr: std::net::SocketAddr, original: &Uri) -> Uri {
    let path = original.path_and_query().map_or("/", |pq| pq.as_str());
    // An IP, a port and an already-parsed path always form a valid URI; fall back to the pod root if not.
    format!("http://{addr}{path}").parse().unwrap_or_else(|_| Uri::from_static("/"))
}

fn finish_response(mut response: Response<Incoming>, client_upgrade: Option<OnUpgrade>) -> Response<ProxyBody> {
    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
        if let Some(client_side) = client_upgrade {
            let pod_side = hyper::upgrade::on(&mut response);
            tokio::spawn(tunnel(client_side, pod_side));
            return response.map(Either::Left);
        }
    }
    strip_hop_by_hop(response.headers_mut(), false);
    response.map(Either::Left)
}

/// Copies bytes both ways between the upgraded client and pod connections until both sides close.
async fn tunnel(client: OnUpgrade, pod: OnUpgrade) {
    match tokio::try_join!(client, pod) {
        Ok((client, pod)) => {
            let (mut client, mut pod) = (TokioIo::new(client), TokioIo::new(pod));
            if let Err(error) = tokio::io::copy_bidirectional(&mut client, &mut pod).await {
                debug!(%error, "upgraded connection ended with an error");
            }
        }
        Err(error) => debug!(%error, "upgrade did not complete"),
    }
}
