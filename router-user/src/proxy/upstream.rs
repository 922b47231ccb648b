//! The connection to pods: HTTP/1.1 by the router's own pooled client (`pod`), HTTP/2 cleartext for h2c
//! endpoints and TLS per reencrypt route by hyper's pooled clients, with the connect and server timeouts
//! applied and failures classified. Over HTTP/2 the client's host is the `:authority` and no Host header goes
//! along (hyper's clients are per pod for that, see `tls::per_pod_clients`).

use std::net::SocketAddr;
use std::time::Duration;

use http::{request, Request, Response, Uri, Version};
use http_body_util::{BodyExt, Either, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::client_body::ClientBody;
use super::pod::{PodBody, PodClient, PodError};
use crate::balance::AttemptError;
use crate::tls::{name_the_host, HostHeader, PerPodClients, ReencryptUpstream, POD_POOL_IDLE_TIMEOUT};

/// A pod's response body: from hyper's client (h2c, reencrypt) or the router's HTTP/1.1 client.
pub type PodResponseBody = Either<Incoming, PodBody>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("connect: {0}")]
    Connect(#[source] BoxError),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("exchange failed: {0}")]
    Exchange(#[source] BoxError),
    /// The pod closed or reset the connection before answering an idempotent request without a body
    /// (`PodError::Unanswered`): another endpoint may be tried.
    #[error("no answer: {0}")]
    Unanswered(#[source] BoxError),
    /// The client's request body failed first (malformed chunked framing, client gone): the exchange was
    /// abandoned because of the client, and says nothing about the pod.
    #[error("the client's request body failed: {0}")]
    ClientBody(#[source] BoxError),
}

impl AttemptError for UpstreamError {
    fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Connect(_) => "connect",
            UpstreamError::Timeout(_) => "timeout",
            UpstreamError::Exchange(_) | UpstreamError::Unanswered(_) => "response",
            UpstreamError::ClientBody(_) => "client",
        }
    }

    fn is_connect(&self) -> bool {
        matches!(self, UpstreamError::Connect(_))
    }

    fn may_try_another(&self) -> bool {
        matches!(self, UpstreamError::Connect(_) | UpstreamError::Unanswered(_))
    }

    fn blames_client(&self) -> bool {
        matches!(self, UpstreamError::ClientBody(_))
    }
}

pub struct Upstream {
    http1: PodClient,
    h2c: PerPodClients<HttpConnector>,
}

/// How a request reaches its pod.
#[derive(Clone, Copy)]
pub enum Via<'a> {
    Http1,
    /// HTTP/2 with prior knowledge, no TLS (appProtocol h2c).
    H2c,
    Reencrypt(&'a ReencryptUpstream),
}

impl Upstream {
    pub fn new(connect_timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(connect_timeout));
        connector.set_nodelay(true);
        connector.enforce_http(true);
        let mut h2c = Client::builder(TokioExecutor::new());
        h2c.pool_idle_timeout(POD_POOL_IDLE_TIMEOUT)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            // HTTP/2 only: the client's host goes as `:authority` (`name_the_host`), never the pod address.
            .set_host(false)
            .http2_only(true);
        let h2c = PerPodClients::new(h2c, connector, "http");
        Self { http1: PodClient::new(connect_timeout, POD_POOL_IDLE_TIMEOUT), h2c }
    }

    /// Sends the request (`parts` as rewritten for the pod, `body` the client's unless it had none) to `addr`
    /// and waits up to `server_timeout` for the response head.
    pub async fn send(
        &self,
        addr: SocketAddr,
        parts: &request::Parts,
        body: Option<ClientBody>,
        via: Via<'_>,
        server_timeout: Duration,
    ) -> Result<Response<PodResponseBody>, UpstreamError> {
        if let Via::Http1 = via {
            let sent = self.http1.send(addr, parts, body);
            return match tokio::time::timeout(server_timeout, sent).await {
                Err(_) => Err(UpstreamError::Timeout(server_timeout)),
                Ok(Err(error @ PodError::Connect { .. })) => Err(UpstreamError::Connect(error.into())),
                Ok(Err(error @ PodError::Unanswered(_))) => Err(UpstreamError::Unanswered(error.into())),
                Ok(Err(error)) => Err(UpstreamError::Exchange(error.into())),
                Ok(Ok(response)) => Ok(response.map(Either::Right)),
            };
        }
        // Boxed: hyper's request futures would otherwise size every request's future, HTTP/1.1 ones included,
        // and each layer of the handler copies what it holds when it starts the next one.
        Box::pin(self.send_by_hyper(addr, parts, body, via, server_timeout)).await
    }

    /// h2c and reencrypt: hyper's pooled clients.
    async fn send_by_hyper(
        &self,
        addr: SocketAddr,
        parts: &request::Parts,
        body: Option<ClientBody>,
        via: Via<'_>,
        server_timeout: Duration,
    ) -> Result<Response<PodResponseBody>, UpstreamError> {
        let body = match body {
            Some(client) => Either::Left(client.boxed_unsync()),
            None => Either::Right(Empty::new()),
        };
        let mut request = Request::from_parts(parts.clone(), body);
        let scheme = if matches!(via, Via::Reencrypt(_)) { "https" } else { "http" };
        *request.uri_mut() = upstream_uri(scheme, addr, &parts.uri);
        *request.version_mut() = if matches!(via, Via::H2c) { Version::HTTP_2 } else { Version::HTTP_11 };
        let sent = match via {
            Via::Reencrypt(upstream) => tokio::time::timeout(server_timeout, upstream.request(addr, request)).await,
            _ => {
                name_the_host(&mut request, HostHeader::Drop);
                tokio::time::timeout(server_timeout, self.h2c.client(addr).request(request)).await
            }
        };
        match sent {
            Err(_) => Err(UpstreamError::Timeout(server_timeout)),
            Ok(Err(error)) if error.is_connect() => Err(UpstreamError::Connect(error.into())),
            Ok(Err(error)) => Err(UpstreamError::Exchange(error.into())),
            Ok(Ok(response)) => Ok(response.map(Either::Left)),
        }
    }
}

/// `<scheme>://<pod>/<path>` (`https` over reencrypt TLS): HTTP/1.1 sends the path alone; for HTTP/2,
/// `name_the_host` puts the client's host in place of the pod (`:authority`).
fn upstream_uri(scheme: &str, addr: SocketAddr, original: &Uri) -> Uri {
    let path = original.path_and_query().map_or("/", |pq| pq.as_str());
    // An IP, a port and an already-parsed path always form a valid URI; fall back to the pod root if not.
    format!("{scheme}://{addr}{path}").parse().unwrap_or_else(|_| Uri::from_static("/"))
}
