//! Reencrypt: TLS from the router to the pods of one route, with that route's verification (see
//! `reencrypt_tls`), over pooled keep-alive clients of its own. The route table keeps one per route, so that
//! its connections outlive table rebuilds; the proxy sends requests through it. ALPN offers `h2, http/1.1`;
//! a connection on which the pod picked `h2` carries requests as HTTP/2 streams (gRPC, with trailers), any
//! other as HTTP/1.1. Those clients are per pod (`per_pod_clients`), so that the request URI names the
//! client's host: HTTP/2 carries it as `:authority` without a Host header (nginx refuses both). An upgrade
//! request (WebSocket) goes over a second pool offering `http/1.1` only, since HTTP/2 has no `Upgrade`, its URI
//! naming the pod and the Host header kept.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{header, Method, Request, Uri};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tracing::warn;

use super::per_pod_clients::{name_the_host, HostHeader, PerPodClients, UpstreamBody};
use super::upstream_config::{ReencryptTls, Verification};

/// Idle pooled connections to pods are closed after this long.
pub const POD_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// One reencrypt route's way to its pods.
pub struct ReencryptUpstream {
    /// ALPN `h2, http/1.1`: HTTP/2 when the pod picks it; one client per pod.
    pods: PerPodClients<PodTlsConnector>,
    /// ALPN `http/1.1` only: for upgrades.
    http1: Client<PodTlsConnector, UpstreamBody>,
}

impl std::fmt::Debug for ReencryptUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReencryptUpstream").finish_non_exhaustive()
    }
}

impl ReencryptUpstream {
    pub fn new(tls: ReencryptTls, connect_timeout: Duration) -> Self {
        if tls.verify == Verification::None {
            warn!(server_name = ?tls.server_name, "reencrypt route without a destination CA: pod certificates are not verified");
        }
        let mut tcp = HttpConnector::new();
        tcp.set_connect_timeout(Some(connect_timeout));
        tcp.set_nodelay(true);
        // The pod's URI says https (HTTP/2's :scheme); the connector speaks TCP and this one adds TLS.
        tcp.enforce_http(false);
        let mut http1_config = (*tls.config).clone();
        http1_config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let connector = |config| PodTlsConnector {
            tcp: tcp.clone(),
            tls: tokio_rustls::TlsConnector::from(config),
            name: tls.server_name.clone(),
        };
        let builder = |set_host| {
            let mut builder = Client::builder(TokioExecutor::new());
            builder
                .pool_idle_timeout(POD_POOL_IDLE_TIMEOUT)
                .pool_timer(TokioTimer::new())
                .timer(TokioTimer::new())
                .set_host(set_host);
            builder
        };
        // Per pod, the URI names the client's host: with `set_host(true)`, HTTP/1.1 writes back the Host header
        // `name_the_host` removed. The upgrade pool's URI names the pod: its Host header is the client's.
        let pods = PerPodClients::new(builder(true), connector(Arc::clone(&tls.config)), "https");
        Self { pods, http1: builder(false).build(connector(Arc::new(http1_config))) }
    }

    /// Sends `request` (its URI `https://<pod><path>`) to `pod` on a pooled TLS connection, or a new one: an
    /// upgrade request on an HTTP/1.1 one, any other on whatever the pod picked, its URI then naming the
    /// client's host (HTTP/2's `:authority`).
    pub fn request(&self, pod: SocketAddr, mut request: Request<UpstreamBody>) -> ResponseFuture {
        let upgrade = request.headers().contains_key(header::UPGRADE) || request.method() == Method::CONNECT;
        if upgrade {
            return self.http1.request(request);
        }
        name_the_host(&mut request, HostHeader::DropWhenRebuilt);
        self.pods.client(pod).request(request)
    }
}

#[derive(Clone)]
pub struct PodTlsConnector {
    tcp: HttpConnector,
    tls: tokio_rustls::TlsConnector,
    name: rustls_pki_types::ServerName<'static>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Uri> for PodTlsConnector {
    type Response = TokioIo<PodTls>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, pod: Uri) -> Self::Future {
        let (connecting, tls, name) = (self.tcp.call(pod), self.tls.clone(), self.name.clone());
        Box::pin(async move {
            let tcp = connecting.await?.into_inner();
            let stream = tls.connect(name, tcp).await?;
            Ok(TokioIo::new(PodTls(stream)))
        })
    }
}

/// A TLS connection to a pod, as the pooled client needs it.
pub struct PodTls(tokio_rustls::client::TlsStream<TcpStream>);

impl Connection for PodTls {
    fn connected(&self) -> Connected {
        match self.0.get_ref().1.alpn_protocol() {
            Some(b"h2") => Connected::new().negotiated_h2(),
            _ => Connected::new(),
        }
    }
}

impl AsyncRead for PodTls {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for PodTls {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
