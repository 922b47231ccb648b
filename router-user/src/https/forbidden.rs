//! The answer to a client whose certificate subject does not match ROUTER_MUTUAL_TLS_AUTH_FILTER: 403 for each
//! request on the connection (HTTP/1.1 closes after the first; HTTP/2 as the client sends them), as HAProxy's
//! `http-request deny` answers. The connection lasts at most the request timeout, or until shutdown.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use crate::proxy::HttpVersion;

const BODY: &str = "<html><body><h1>403 Forbidden</h1>\nThe client certificate is not allowed here.\n</body></html>\n";

pub async fn serve_forbidden<I>(io: I, version: HttpVersion, limit: Duration, mut shutdown: watch::Receiver<bool>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let close = version == HttpVersion::Http1;
    let service = service_fn(move |_request: Request<Incoming>| async move {
        let mut response = Response::builder()
            .status(StatusCode::FORBIDDEN)
            .header(header::CONTENT_TYPE, "text/html")
            .header(header::CACHE_CONTROL, "no-cache");
        if close {
            response = response.header(header::CONNECTION, "close");
        }
        let response = response.body(Full::new(Bytes::from_static(BODY.as_bytes()))).unwrap_or_default();
        Ok::<_, Infallible>(response)
    });
    let io = TokioIo::new(io);
    let serving = async move {
        let result = match version {
            HttpVersion::Http1 => {
                http1::Builder::new().timer(TokioTimer::new()).keep_alive(false).serve_connection(io, service).await
            }
            HttpVersion::H2 => {
                http2::Builder::new(TokioExecutor::new()).timer(TokioTimer::new()).serve_connection(io, service).await
            }
        };
        if let Err(error) = result {
            tracing::debug!(%error, "refused connection ended with an error");
        }
    };
    tokio::select! {
        _ = tokio::time::timeout(limit, serving) => {}
        _ = shutdown.changed() => {}
    }
}
