//! An HTTP/3 client for tests: quinn + h3 (the stack the router serves with, driven from the client side),
//! one QUIC connection per `H3Client`, requests with any method, headers and body, replies read whole.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, Method, Request, StatusCode};
use quinn::crypto::rustls::QuicClientConfig;
use rustls::ClientConfig;

use crate::pki::Leaf;
use crate::tls_client::{client_config, Trust};

/// No request of a test takes longer than this (the client then reports an error instead of hanging).
const REQUEST_LIMIT: Duration = Duration::from_secs(20);

/// A reply read whole.
#[derive(Debug)]
pub struct H3Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl H3Reply {
    /// The test backend's JSON report.
    pub fn report(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("report is JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    }

    /// The values of request header `name` as the backend saw it.
    pub fn seen_header(&self, name: &str) -> Vec<String> {
        crate::backend_report::seen_header(&self.report(), name)
    }
}

/// The rustls configuration of an HTTP/3 client: ALPN `h3`, TLS 1.3.
pub fn h3_client_config(trust: Trust<'_>, identity: Option<&Leaf>) -> Arc<ClientConfig> {
    client_config(trust, &["h3"], identity)
}

/// One HTTP/3 connection; its requests may run at once (each on its own stream).
pub struct H3Client {
    endpoint: quinn::Endpoint,
    connection: quinn::Connection,
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    driver: tokio::task::JoinHandle<h3::error::ConnectionError>,
}

impl H3Client {
    /// Connects to `addr` with server name `sni`; `Err` with the reason when the QUIC handshake fails.
    pub async fn connect(addr: SocketAddr, sni: &str, tls: Arc<ClientConfig>) -> Result<H3Client, String> {
        H3Client::connect_within(addr, sni, tls, REQUEST_LIMIT).await
    }

    /// `connect`, giving up after `limit` (nothing answers QUIC where no listener is: the handshake only
    /// times out).
    pub async fn connect_within(
        addr: SocketAddr,
        sni: &str,
        tls: Arc<ClientConfig>,
        limit: Duration,
    ) -> Result<H3Client, String> {
        let crypto = QuicClientConfig::try_from(tls).map_err(|e| format!("QUIC client config: {e}"))?;
        let bind: SocketAddr = if addr.is_ipv6() { "[::1]:0" } else { "127.0.0.1:0" }.parse().expect("address");
        let mut endpoint = quinn::Endpoint::client(bind).map_err(|e| format!("client endpoint: {e}"))?;
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let connecting = endpoint.connect(addr, sni).map_err(|e| format!("connect: {e}"))?;
        let connection = match tokio::time::timeout(limit, connecting).await {
            Ok(Ok(connection)) => connection,
            Ok(Err(error)) => return Err(format!("QUIC handshake: {error}")),
            Err(_) => return Err("QUIC handshake timed out".to_string()),
        };
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
            .await
            .map_err(|e| format!("HTTP/3 setup: {e}"))?;
        let driver = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        Ok(H3Client { endpoint, connection, send, driver })
    }

    /// `GET https://<host><path>`.
    pub async fn get(&self, host: &str, path: &str) -> Result<H3Reply, String> {
        self.request(Method::GET, host, path, &[], Bytes::new()).await
    }

    /// A request with `headers` and `body` (sent in 16 KiB DATA frames, then the stream's end).
    pub async fn request(
        &self,
        method: Method,
        host: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<H3Reply, String> {
        let exchange = async {
            let mut builder = Request::builder().method(method).uri(format!("https://{host}{path}"));
            for (name, value) in headers {
                builder = builder.header(*name, *value);
            }
            let request = builder.body(()).map_err(|e| format!("request: {e}"))?;
            let mut send = self.send.clone();
            let mut stream = send.send_request(request).await.map_err(|e| format!("send request: {e}"))?;
            for chunk in body.chunks(16 * 1024) {
                stream.send_data(Bytes::copy_from_slice(chunk)).await.map_err(|e| format!("send body: {e}"))?;
            }
            stream.finish().await.map_err(|e| format!("finish: {e}"))?;
            let response = stream.recv_response().await.map_err(|e| format!("response: {e}"))?;
            let mut received = BytesMut::new();
            while let Some(mut chunk) = stream.recv_data().await.map_err(|e| format!("response body: {e}"))? {
                received.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
            }
            let (parts, ()) = response.into_parts();
            Ok(H3Reply {
                status: parts.status,
                headers: parts.headers,
                body: String::from_utf8_lossy(&received).into_owned(),
            })
        };
        tokio::time::timeout(REQUEST_LIMIT, exchange).await.unwrap_or_else(|_| Err("request timed out".to_string()))
    }

    /// Waits until the server closes the connection (or `limit` passes); the close reason, `None` on timeout.
    pub async fn closed_within(&self, limit: Duration) -> Option<quinn::ConnectionError> {
        tokio::time::timeout(limit, self.connection.closed()).await.ok()
    }

    /// Closes the connection and waits (briefly) for the server to hear it.
    pub async fn close(self) {
        self.connection.close(0u32.into(), b"");
        self.driver.abort();
        let _ = tokio::time::timeout(Duration::from_secs(1), self.endpoint.wait_idle()).await;
    }
}

/// One request on a fresh connection.
pub async fn h3_get(
    addr: SocketAddr,
    sni: &str,
    host: &str,
    path: &str,
    tls: Arc<ClientConfig>,
) -> Result<H3Reply, String> {
    let client = H3Client::connect(addr, sni, tls).await?;
    let reply = client.get(host, path).await;
    client.close().await;
    reply
}
