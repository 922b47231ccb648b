//! TLS clients on rustls for tests that need finer control than curl: choose SNI (or none), ALPN, trust and
//! client certificate; see the certificate the router presented; send HTTP/1.1 or HTTP/2 over any stream
//! (after a PROXY header, for instance); and write a ClientHello in small pieces.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Version};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::client::Reply;
use crate::pki::Leaf;

/// The process's crypto provider for tests: ring, as everywhere in this workspace.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Which server certificates a client accepts.
#[derive(Clone, Copy, Debug)]
pub enum Trust<'a> {
    /// Chains to one of the CA certificates in this PEM bundle, for the name asked.
    Ca(&'a str),
    /// Anything (like `curl -k`); the presented certificate can still be read from the connection.
    Anything,
}

/// A rustls client configuration offering `alpn` (e.g. `&["h2", "http/1.1"]`, or `&[]` for none), with a
/// client certificate when `identity` is given.
pub fn client_config(trust: Trust<'_>, alpn: &[&str], identity: Option<&Leaf>) -> Arc<ClientConfig> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match trust {
        Trust::Ca(pem) => {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(cert.expect("CA PEM")).expect("add CA");
            }
            builder.with_root_certificates(roots)
        }
        Trust::Anything => builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAnything(provider()))),
    };
    let mut config = match identity {
        Some(leaf) => {
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(leaf.chain_pem().as_bytes())
                .map(|c| c.expect("client certificate PEM"))
                .collect();
            let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).expect("client key PEM");
            builder.with_client_auth_cert(chain, key).expect("client certificate")
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(config)
}

/// A server certificate verifier that accepts any certificate (like `curl -k`) and checks handshake signatures
/// with the provider's algorithms.
#[derive(Debug)]
pub struct AcceptAnything(pub Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The name a client sends as SNI, or — for `None` — an IP address, for which rustls sends no SNI at all.
pub fn server_name(sni: Option<&str>) -> ServerName<'static> {
    match sni {
        Some(name) => ServerName::try_from(name.to_string()).expect("DNS name for SNI"),
        None => ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()),
    }
}

/// A TCP connection to `addr` from source address `source` (any 127.0.0.0/8 address works on Linux loopback).
pub async fn connect_from(source: Option<IpAddr>, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    if let Some(source) = source {
        socket.bind(SocketAddr::new(source, 0))?;
    }
    socket.connect(addr).await
}

/// A TLS handshake over `io` with SNI `sni` (none for `None`).
pub async fn tls_handshake<S>(io: S, sni: Option<&str>, config: Arc<ClientConfig>) -> std::io::Result<TlsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    TlsConnector::from(config).connect(server_name(sni), io).await
}

/// TCP connect to `addr` and a TLS handshake with SNI `sni` (none for `None`).
pub async fn tls_connect(
    addr: SocketAddr,
    sni: Option<&str>,
    config: Arc<ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    tls_handshake(TcpStream::connect(addr).await?, sni, config).await
}

/// The leaf certificate the server presented, DER.
pub fn peer_certificate<S>(stream: &TlsStream<S>) -> Option<Vec<u8>> {
    stream.get_ref().1.peer_certificates().and_then(|chain| chain.first()).map(|c| c.to_vec())
}

/// Every certificate the server presented, DER, leaf first.
pub fn peer_chain<S>(stream: &TlsStream<S>) -> Vec<Vec<u8>> {
    stream.get_ref().1.peer_certificates().map(|chain| chain.iter().map(|c| c.to_vec()).collect()).unwrap_or_default()
}

/// The ALPN protocol negotiated, if any.
pub fn negotiated_alpn<S>(stream: &TlsStream<S>) -> Option<String> {
    stream.get_ref().1.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned())
}

/// A reply over TLS, with what the handshake settled.
pub struct TlsReply {
    pub reply: Reply,
    pub version: Version,
    pub alpn: Option<String>,
    pub peer_certificate: Option<Vec<u8>>,
}

impl std::ops::Deref for TlsReply {
    type Target = Reply;
    fn deref(&self) -> &Reply {
        &self.reply
    }
}

/// One GET over an established stream: HTTP/2 when `version` is `HTTP_2`, else HTTP/1.1. `host` goes into the
/// Host header (HTTP/1.1) or `:authority` (HTTP/2).
pub async fn request_over<S>(
    io: S,
    version: Version,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Reply, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    let response = if version == Version::HTTP_2 {
        let mut builder = Request::get(format!("https://{host}{path}")).version(Version::HTTP_2);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Empty::<Bytes>::new()).map_err(|e| format!("request: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| format!("h2 handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        sender.send_request(request).await.map_err(|e| format!("h2 request: {e}"))?
    } else {
        let mut builder = Request::get(path).header("host", host);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder.body(Empty::<Bytes>::new()).map_err(|e| format!("request: {e}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(io).await.map_err(|e| format!("http/1.1 handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        sender.send_request(request).await.map_err(|e| format!("http/1.1 request: {e}"))?
    };
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| format!("response body: {e}"))?.to_bytes();
    Ok(Reply { status: parts.status, headers: parts.headers, body: String::from_utf8_lossy(&body).into() })
}

/// A GET over TLS on a fresh connection; HTTP/2 when ALPN settled on `h2`. Errors (handshake refused, connection
/// closed, alert) come back as text.
pub async fn try_https_get(
    addr: SocketAddr,
    sni: Option<&str>,
    host: &str,
    path: &str,
    config: Arc<ClientConfig>,
    headers: &[(&str, &str)],
) -> Result<TlsReply, String> {
    let stream = tls_connect(addr, sni, config).await.map_err(|e| format!("TLS connect: {e}"))?;
    https_get_over(stream, host, path, headers).await
}

/// A GET over an established TLS stream, HTTP/2 when ALPN settled on `h2`.
pub async fn https_get_over<S>(
    stream: TlsStream<S>,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<TlsReply, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let alpn = negotiated_alpn(&stream);
    let peer_certificate = peer_certificate(&stream);
    let version = if alpn.as_deref() == Some("h2") { Version::HTTP_2 } else { Version::HTTP_11 };
    let reply = request_over(stream, version, host, path, headers).await?;
    Ok(TlsReply { reply, version, alpn, peer_certificate })
}

/// `try_https_get` that panics on failure.
pub async fn https_get(
    addr: SocketAddr,
    sni: Option<&str>,
    host: &str,
    path: &str,
    config: Arc<ClientConfig>,
) -> TlsReply {
    try_https_get(addr, sni, host, path, config, &[])
        .await
        .unwrap_or_else(|e| panic!("GET https://{host}{path} via {addr} (SNI {sni:?}): {e}"))
}

/// Blocking: connects to `addr`, writes the first TLS flight (the ClientHello) in `chunk`-byte TCP segments
/// with `pause` between them (TCP_NODELAY), then completes the handshake and sends `GET path` with
/// `Connection: close`. Returns the raw HTTP response text. Run it in `spawn_blocking`.
pub fn split_hello_get(
    addr: SocketAddr,
    sni: &str,
    host: &str,
    path: &str,
    config: Arc<ClientConfig>,
    chunk: usize,
    pause: Duration,
) -> Result<String, String> {
    let mut socket = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    socket.set_nodelay(true).map_err(|e| format!("nodelay: {e}"))?;
    socket.set_read_timeout(Some(Duration::from_secs(15))).map_err(|e| format!("timeout: {e}"))?;
    let mut connection =
        rustls::ClientConnection::new(config, server_name(Some(sni))).map_err(|e| format!("client: {e}"))?;
    let mut hello = Vec::new();
    while connection.wants_write() {
        connection.write_tls(&mut hello).map_err(|e| format!("ClientHello: {e}"))?;
    }
    if hello.len() <= chunk {
        return Err(format!("ClientHello of {} bytes does not split into {chunk}-byte pieces", hello.len()));
    }
    for piece in hello.chunks(chunk.max(1)) {
        socket.write_all(piece).map_err(|e| format!("write ClientHello piece: {e}"))?;
        std::thread::sleep(pause);
    }
    let mut stream = rustls::Stream::new(&mut connection, &mut socket);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("handshake or request: {e}"))?;
    stream.flush().map_err(|e| format!("flush: {e}"))?;
    let mut response = Vec::new();
    let mut buffer = [0u8; 16384];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buffer[..n]),
            // A peer that closes without close_notify: what arrived is the answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => break,
            Err(e) => return Err(format!("read response: {e} (after {} bytes)", response.len())),
        }
    }
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// The status code of a raw HTTP/1.x response text, 0 if there is none.
pub fn status_of(raw: &str) -> u16 {
    raw.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}

/// The body of a raw HTTP/1.x response text (after the blank line; chunked framing is not undone).
pub fn body_of(raw: &str) -> &str {
    raw.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// Upgrades `stream` to a WebSocket for `host` (`GET /ws`), checks the 101 answer and that two messages come back
/// echoed through the tunnel (the test backend echoes); returns the response head for the caller's own checks.
pub async fn websocket_echo<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, host: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upgrade = format!(
        "GET /ws HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream.write_all(upgrade.as_bytes()).await.expect("send upgrade");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert!(head.len() < 16 * 1024, "response head too long: {}", String::from_utf8_lossy(&head));
        let n = tokio::time::timeout(Duration::from_secs(15), stream.read(&mut byte))
            .await
            .expect("response head within 15 s")
            .expect("read response head");
        assert_eq!(n, 1, "connection closed in the response head: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    for message in [&b"ping-1"[..], &b"a longer frame of bytes"[..]] {
        stream.write_all(message).await.expect("send through the tunnel");
        let mut echoed = vec![0u8; message.len()];
        tokio::time::timeout(Duration::from_secs(15), stream.read_exact(&mut echoed))
            .await
            .expect("echo within 15 s")
            .expect("read echo");
        assert_eq!(echoed, message);
    }
    head
}
