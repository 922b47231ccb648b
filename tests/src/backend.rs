//! A tiny HTTP backend that says who answered: every response carries `x-backend: <name>` and a JSON body with
//! the backend's name and the request it saw (method, path, headers). Upgrade requests get a 101 and an echo
//! of every byte sent afterwards, like a minimal WebSocket server.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub struct TestBackend {
    pub name: String,
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl TestBackend {
    /// Starts a backend on a free port of 127.0.0.1.
    pub async fn start(name: &str) -> TestBackend {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind test backend");
        Self::serve(name, listener)
    }

    pub fn serve(name: &str, listener: TcpListener) -> TestBackend {
        let addr = listener.local_addr().expect("backend address");
        let name_owned: Arc<str> = name.into();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let name = name_owned.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| answer(name.clone(), request));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).with_upgrades().await;
                });
            }
        });
        TestBackend { name: name.to_string(), addr, task }
    }

    /// Stops accepting; open connections end with the runtime.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for TestBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(name: Arc<str>, mut request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.headers().contains_key(header::UPGRADE) {
        let upgrade = hyper::upgrade::on(&mut request);
        tokio::spawn(async move {
            if let Ok(upgraded) = upgrade.await {
                echo(TokioIo::new(upgraded)).await;
            }
        });
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert("x-backend", HeaderValue::from_str(&name).expect("backend name"));
        return Ok(response);
    }

    // `/slow/<ms>`: answer late, for timeout and shutdown tests.
    if let Some(ms) = request.uri().path().strip_prefix("/slow/").and_then(|ms| ms.parse::<u64>().ok()) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let mut seen_headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value) in request.headers() {
        seen_headers
            .entry(key.as_str().to_string())
            .or_default()
            .push(String::from_utf8_lossy(value.as_bytes()).into());
    }
    let method = request.method().to_string();
    let path = request.uri().path_and_query().map_or("/".to_string(), |pq| pq.to_string());
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let report = serde_json::json!({
        "backend": &*name,
        "method": method,
        "path": path,
        "headers": seen_headers,
        "body_len": body.len(),
    });
    let mut response = Response::new(Full::new(Bytes::from(report.to_string())));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("x-backend", HeaderValue::from_str(&name).expect("backend name"));
    Ok(response)
}

async fn echo<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut stream: S) {
    let mut buffer = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buffer).await {
        if n == 0 || stream.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
}
