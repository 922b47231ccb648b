//! A real HTTP/1.1 client on one keep-alive connection, so tests can tell whether a connection survives.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    /// The `x-backend` header of the test backend that answered, or "" when none did.
    pub fn backend(&self) -> &str {
        self.headers.get("x-backend").and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// The JSON report of the test backend.
    pub fn report(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("backend report is not JSON ({e}): {}", self.body))
    }

    /// Every value the backend saw for request header `name` (lowercase).
    pub fn seen_header(&self, name: &str) -> Vec<String> {
        crate::backend_report::seen_header(&self.report(), name)
    }
}

pub struct KeepAliveClient {
    sender: SendRequest<Empty<Bytes>>,
    connection: tokio::task::JoinHandle<()>,
}

impl KeepAliveClient {
    pub async fn connect(addr: SocketAddr) -> KeepAliveClient {
        let stream = TcpStream::connect(addr).await.expect("connect to router");
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await.expect("http handshake");
        let connection = tokio::spawn(async move {
            let _ = connection.await;
        });
        KeepAliveClient { sender, connection }
    }

    pub async fn get(&mut self, host: &str, path: &str) -> Reply {
        self.get_with(host, path, &[]).await
    }

    pub async fn get_with(&mut self, host: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send("GET", host, path, headers).await
    }

    /// A request of `method` without a body.
    pub async fn send(&mut self, method: &str, host: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut builder = Request::builder().method(method).uri(path).header("host", host);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Empty::new()).expect("request");
        self.sender.ready().await.expect("connection still open");
        let response = self.sender.send_request(request).await.expect("response");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        Reply { status: parts.status, headers: parts.headers, body: String::from_utf8_lossy(&body).into() }
    }

    /// True while the underlying connection is open.
    pub fn is_open(&self) -> bool {
        !self.connection.is_finished() && !self.sender.is_closed()
    }
}

/// One request on a fresh connection.
pub async fn get(addr: SocketAddr, host: &str, path: &str) -> Reply {
    KeepAliveClient::connect(addr).await.get(host, path).await
}
