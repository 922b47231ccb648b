//! The connection to pods: pooled keep-alive clients (HTTP/1.1 shared by every route, HTTP/2 cleartext for
//! h2c endpoints, TLS per reencrypt route), with the connect and server timeouts applied and failures
//! classified.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Version};
use http_body_util::{Either, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::upstream_tls::ReencryptUpstream;

/// A request body on its way to a pod: the client's stream, or nothing (then the request can be retried on
/// another pod).
pub type UpstreamBody = Either<Incoming, Empty<Bytes>>;

/// Idle pooled connections to pods are closed after this long.
pub(super) const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("connect: {0}")]
    Connect(#[source] hyper_util::client::legacy::Error),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("exchange failed: {0}")]
    Exchange(#[source] hyper_util::client::legacy::Error),
}

impl UpstreamError {
    /// Metric label for the failure.
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Connect(_) => "connect",
            UpstreamError::Timeout(_) => "timeout",
            UpstreamError::Exchange(_) => "response",
        }
    }
}

pub struct Upstream {
    client: Client<HttpConnector, UpstreamBody>,
    h2c: Client<HttpConnector, UpstreamBody>,
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
        let builder = || {
            let mut builder = Client::builder(TokioExecutor::new());
            builder
                .pool_idle_timeout(POOL_IDLE_TIMEOUT)
                .pool_timer(TokioTimer::new())
                .timer(TokioTimer::new())
                // The Host header is the client's, never the pod address.
                .set_host(false);
            builder
        };
        let client = builder().build(connector.clone());
        let h2c = builder().http2_only(true).build(connector);
        Self { client, h2c }
    }

    /// Sends `request` (absolute URI naming the pod) and waits up to `server_timeout` for the response head.
    pub async fn send(
        &self,
        mut request: Request<UpstreamBody>,
        via: Via<'_>,
        server_timeout: Duration,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let sent = match via {
            Via::Http1 => {
                *request.version_mut() = Version::HTTP_11;
                self.client.request(request)
            }
            Via::H2c => {
                *request.version_mut() = Version::HTTP_2;
                self.h2c.request(request)
            }
            Via::Reencrypt(upstream) => {
                *request.version_mut() = Version::HTTP_11;
                upstream.client.request(request)
            }
        };
        match tokio::time::timeout(server_timeout, sent).await {
            Err(_) => Err(UpstreamError::Timeout(server_timeout)),
            Ok(Err(error)) if error.is_connect() => Err(UpstreamError::Connect(error)),
            Ok(Err(error)) => Err(UpstreamError::Exchange(error)),
            Ok(Ok(response)) => Ok(response),
        }
    }
}
