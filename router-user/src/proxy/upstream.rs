//! The connection to pods: one pooled keep-alive HTTP/1.1 client shared by every route, with the connect
//! and server timeouts applied and failures classified.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{Either, Empty};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// A request body on its way to a pod: the client's stream, or nothing (then the request can be retried on
/// another pod).
pub type UpstreamBody = Either<Incoming, Empty<Bytes>>;

/// Idle pooled connections to pods are closed after this long.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

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
}

impl Upstream {
    pub fn new(connect_timeout: Duration) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(connect_timeout));
        connector.set_nodelay(true);
        connector.enforce_http(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            // The Host header is the client's, never the pod address.
            .set_host(false)
            .build(connector);
        Self { client }
    }

    /// Sends `request` (absolute URI naming the pod) and waits up to `server_timeout` for the response head.
    pub async fn send(
        &self,
        request: Request<UpstreamBody>,
        server_timeout: Duration,
    ) -> Result<Response<Incoming>, UpstreamError> {
        match tokio::time::timeout(server_timeout, self.client.request(request)).await {
            Err(_) => Err(UpstreamError::Timeout(server_timeout)),
            Ok(Err(error)) if error.is_connect() => Err(UpstreamError::Connect(error)),
            Ok(Err(error)) => Err(UpstreamError::Exchange(error)),
            Ok(Ok(response)) => Ok(response),
        }
    }
}
