//! HTTP/1.1 to pods, written for the proxy's one job: the request is written and the response read by the
//! task that serves the client connection, on a pooled keep-alive connection, with no connection task and
//! no channel between them (hyper's client hands every request to a per-connection task). The response head
//! is parsed in place and its header values share the read buffer.

mod body;
pub(crate) mod chunked;
mod conn;
mod exchange;
pub(crate) mod head;
mod pool;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{request, Response, StatusCode, Version};
use hyper::body::Body;
use tokio::net::TcpStream;

pub use body::PodBody;
use conn::PodConn;
use exchange::{exchange, ExchangeError};
use head::encode_request;
use pool::PodPool;

use crate::proxy::client_body::ClientBody;

#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error("connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// The pod closed or reset the connection before any byte of an answer to an idempotent request without a
    /// body: nothing reached the pod's application that another endpoint could not do again.
    #[error("no answer: {0}")]
    Unanswered(#[source] ExchangeError),
}

/// How a response's pod connection was had (kept by its `PodBody`), for the `haproxy_*` connect latency and
/// reuse columns.
#[derive(Clone, Copy, Debug)]
pub struct PodConnection {
    /// Taken from the pool of kept-alive connections.
    pub reused: bool,
    /// How long the connect took (zero when reused).
    pub connect: Duration,
}

/// The pod side of a `101 Switching Protocols`: its connection and any bytes it sent after the head, for
/// the tunnel. Taken once.
#[derive(Clone, Debug)]
pub struct PodUpgrade(Arc<Mutex<Option<(TcpStream, Bytes)>>>);

impl PodUpgrade {
    pub fn take(&self) -> Option<(TcpStream, Bytes)> {
        self.0.lock().ok().and_then(|mut inner| inner.take())
    }
}

pub struct PodClient {
    pool: Arc<PodPool>,
    connect_timeout: Duration,
}

impl PodClient {
    pub fn new(connect_timeout: Duration, idle_timeout: Duration) -> PodClient {
        PodClient { pool: PodPool::new(idle_timeout), connect_timeout }
    }

    /// Sends the request (`parts` as rewritten for the pod; only its path and query are used from the URI)
    /// to `addr` and returns the response once its head is in. A request without a body that fails on a
    /// kept-alive connection before any response byte goes once more on a new connection: the pod may have
    /// closed the idle connection as the request left. Failing so on a new connection, an idempotent one is
    /// [`PodError::Unanswered`], which the caller may try on another endpoint.
    pub async fn send(
        &self,
        addr: SocketAddr,
        parts: &request::Parts,
        body: Option<ClientBody>,
    ) -> Result<Response<PodBody>, PodError> {
        let mut body = body.filter(|body| !body.is_end_stream());
        let exact = body.as_ref().and_then(|body| body.size_hint().exact());
        loop {
            // Encoded per attempt (a retry is rare) so that the exchange takes the buffer instead of a copy.
            let mut head = BytesMut::new();
            let framing = encode_request(parts, body.is_none(), exact, &mut head);
            let started = std::time::Instant::now();
            let mut conn = match self.pool.take(addr) {
                Some(conn) => conn,
                None => PodConn::connect(addr, self.connect_timeout)
                    .await
                    .map_err(|source| PodError::Connect { addr, source })?,
            };
            let connected = PodConnection { reused: conn.reused, connect: started.elapsed() };
            match exchange(&mut conn, head, &mut body, framing, &parts.method).await {
                Ok(done) => {
                    let pool = (done.head.keep_alive && done.request_complete).then(|| self.pool.clone());
                    let mut response = response(conn, done.head, pool);
                    response.body_mut().set_connection(connected);
                    return Ok(response);
                }
                Err(failure) if failure.retry_safe => continue,
                Err(failure) if failure.unanswered && parts.method.is_idempotent() => {
                    return Err(PodError::Unanswered(failure.error))
                }
                Err(failure) => return Err(failure.error.into()),
            }
        }
    }
}

fn response(mut conn: PodConn, head: head::ResponseHead, pool: Option<Arc<PodPool>>) -> Response<PodBody> {
    let (body, upgrade) = if head.status == StatusCode::SWITCHING_PROTOCOLS {
        let leftover = conn.buf.split().freeze();
        (PodBody::empty(), Some(PodUpgrade(Arc::new(Mutex::new(Some((conn.stream, leftover)))))))
    } else {
        (PodBody::new(conn, head.framing, pool), None)
    };
    let mut response = Response::new(body);
    *response.status_mut() = head.status;
    // The client hears the router's HTTP version, whatever the pod spoke (HTTP/1.0 pods included).
    *response.version_mut() = Version::HTTP_11;
    *response.headers_mut() = head.headers;
    if let Some(reason) = head.reason.and_then(|reason| hyper::ext::ReasonPhrase::try_from(reason).ok()) {
        response.extensions_mut().insert(reason);
    }
    if let Some(upgrade) = upgrade {
        response.extensions_mut().insert(upgrade);
    }
    response
}

#[cfg(test)]
mod tests;
