//! A tiny HTTP backend that says who answered: every response carries `x-backend: <name>` and a JSON body with
//! the backend's name and the request it saw (method, path, HTTP/2 `:authority`, headers). Upgrade requests
//! get a 101 and an echo of every byte sent afterwards, like a minimal WebSocket server. The report also says
//! which HTTP version the backend saw (`version`), the peer address (`peer`) and, for TLS backends, the SNI
//! and ALPN of the connection (`tls`).
//!
//! Besides plain HTTP/1.1 (`start`), a backend can serve over TLS with a given certificate (`start_tls`, for
//! reencrypt and passthrough pods; HTTP/1.1 or HTTP/2 by ALPN) or over cleartext HTTP/1.1 and prior-knowledge
//! HTTP/2 (`start_h2c`). `TlsEcho` is a TLS pod that sends back every byte it reads and closes its side once
//! the client closed its own, for byte-exactness and half-close tests of passthrough.

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
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// What the backend knows about the connection a request came on.
#[derive(Debug, Default)]
struct ConnectionInfo {
    peer: Option<SocketAddr>,
    /// Some for TLS connections: (SNI, ALPN).
    tls: Option<(Option<String>, Option<String>)>,
}

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
        Self::serve_clear(name, listener, false)
    }

    /// Starts a backend on a free port of 127.0.0.1 that speaks HTTP/1.1 and prior-knowledge HTTP/2 in clear
    /// text (h2c), telling them apart by the connection preface.
    pub async fn start_h2c(name: &str) -> TestBackend {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind h2c backend");
        Self::serve_h2c(name, listener)
    }

    pub fn serve_h2c(name: &str, listener: TcpListener) -> TestBackend {
        Self::serve_clear(name, listener, true)
    }

    /// Serves clear-text connections: HTTP/1.1 only, or (`h2c`) HTTP/1.1 and prior-knowledge HTTP/2.
    fn serve_clear(name: &str, listener: TcpListener, h2c: bool) -> TestBackend {
        let addr = listener.local_addr().expect("backend address");
        let name_owned: Arc<str> = name.into();
        let task = tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                let name = name_owned.clone();
                let info = Arc::new(ConnectionInfo { peer: Some(peer), tls: None });
                tokio::spawn(async move {
                    let service = service_fn(move |request| answer(name.clone(), info.clone(), request));
                    let io = TokioIo::new(stream);
                    let _ = if h2c {
                        auto::Builder::new(TokioExecutor::new()).serve_connection_with_upgrades(io, service).await
                    } else {
                        http1::Builder::new().serve_connection(io, service).with_upgrades().await.map_err(Into::into)
                    };
                });
            }
        });
        TestBackend { name: name.to_string(), addr, task }
    }

    /// Starts a backend on a free port of 127.0.0.1 that serves over TLS with `cert_pem` (leaf first, then any
    /// chain) and `key_pem`, offering ALPN `h2` and `http/1.1` (no ALPN: HTTP/1.1).
    pub async fn start_tls(name: &str, cert_pem: &str, key_pem: &str) -> TestBackend {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind TLS backend");
        Self::serve_tls(name, listener, tls_server_config(cert_pem, key_pem, &["h2", "http/1.1"]))
    }

    pub fn serve_tls(name: &str, listener: TcpListener, config: Arc<ServerConfig>) -> TestBackend {
        let addr = listener.local_addr().expect("backend address");
        let name_owned: Arc<str> = name.into();
        let acceptor = TlsAcceptor::from(config);
        let task = tokio::spawn(async move {
            while let Ok((stream, peer)) = listener.accept().await {
                let name = name_owned.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else { return };
                    let (_, session) = tls.get_ref();
                    let sni = session.server_name().map(str::to_string);
                    let alpn = session.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
                    let info = Arc::new(ConnectionInfo { peer: Some(peer), tls: Some((sni, alpn)) });
                    let service = service_fn(move |request| answer(name.clone(), info.clone(), request));
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let _ = builder.serve_connection_with_upgrades(TokioIo::new(tls), service).await;
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

async fn answer(
    name: Arc<str>,
    info: Arc<ConnectionInfo>,
    mut request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
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
    let version = format!("{:?}", request.version());
    let path = request.uri().path_and_query().map_or("/".to_string(), |pq| pq.to_string());
    // HTTP/2's `:authority` (an HTTP/1.1 origin-form target has none).
    let authority = request.uri().authority().map(|authority| authority.to_string());
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let report = serde_json::json!({
        "backend": &*name,
        "method": method,
        "path": path,
        "authority": authority,
        "headers": seen_headers,
        "body_len": body.len(),
        // Whether a body arrived intact, for bodies too long to echo in the report.
        "body_fnv1a": format!("{:016x}", fnv1a(&body)),
        "version": version,
        "peer": info.peer.map(|p| p.to_string()),
        "tls": info.tls.as_ref().map(|(sni, alpn)| serde_json::json!({ "sni": sni, "alpn": alpn })),
    });
    let mut response = Response::new(Full::new(Bytes::from(report.to_string())));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("x-backend", HeaderValue::from_str(&name).expect("backend name"));
    Ok(response)
}

/// The 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

async fn echo<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut stream: S) {
    let mut buffer = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buffer).await {
        if n == 0 || stream.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
}

/// A rustls server configuration for `cert_pem` (leaf first, then any chain) and `key_pem`, offering `alpn`.
pub fn tls_server_config(cert_pem: &str, key_pem: &str, alpn: &[&str]) -> Arc<ServerConfig> {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert_pem.as_bytes()).map(|c| c.expect("certificate PEM")).collect();
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
    let mut config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("certificate and key match");
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(config)
}

/// A TLS pod that echoes: every byte read is written back; when the client has closed its sending side
/// (close_notify or FIN) the pod finishes writing and closes its own. Counts the connections it accepted and
/// remembers the SNI of the last one.
pub struct TlsEcho {
    pub addr: SocketAddr,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    last_sni: Arc<std::sync::Mutex<Option<String>>>,
    task: JoinHandle<()>,
}

impl TlsEcho {
    pub async fn start(cert_pem: &str, key_pem: &str) -> TlsEcho {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind TLS echo");
        let addr = listener.local_addr().expect("echo address");
        let acceptor = TlsAcceptor::from(tls_server_config(cert_pem, key_pem, &[]));
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let last_sni = Arc::new(std::sync::Mutex::new(None));
        let (counter, sni_slot) = (accepted.clone(), last_sni.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let (counter, sni_slot) = (counter.clone(), sni_slot.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else { return };
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if let Ok(mut slot) = sni_slot.lock() {
                        *slot = tls.get_ref().1.server_name().map(str::to_string);
                    }
                    let (mut reader, mut writer) = tokio::io::split(tls);
                    let mut buffer = vec![0u8; 64 * 1024];
                    loop {
                        match reader.read(&mut buffer).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                if writer.write_all(&buffer[..n]).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                    let _ = writer.shutdown().await;
                });
            }
        });
        TlsEcho { addr, accepted, last_sni, task }
    }

    /// TLS connections accepted so far (handshake completed).
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The SNI of the last connection accepted.
    pub fn last_sni(&self) -> Option<String> {
        self.last_sni.lock().ok().and_then(|slot| slot.clone())
    }
}

impl Drop for TlsEcho {
    fn drop(&mut self) {
        self.task.abort();
    }
}
