//! ROUTER_USE_PROXY_PROTOCOL: every :80 and :443 connection starts with a PROXY v1 or v2 header, and the
//! address it carries is the client's everywhere (X-Forwarded-For, Forwarded). A connection without one is
//! closed. The carried addresses are documentation ranges: they are only bytes in the header, no traffic goes
//! there.

use std::net::SocketAddr;
use std::time::Duration;

use http::Version;
use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::client::Reply;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::proxy_header::{v1, v2, v2_local};
use router_tests::tls_client::{client_config, https_get_over, request_over, tls_handshake, Trust};
use router_tests::{read_until_closed, start_tls_router};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Fixture {
    router: RunningRouter,
    https: SocketAddr,
    _web: TestBackend,
    _echo: TlsEcho,
    _dir: ManifestDir,
    ca: TestCa,
}

/// Backend `web` behind a plain route `pp.example.com` and an edge route `edge.example.com`, and a TLS echo
/// pod behind passthrough `pass.example.com`; the router expects PROXY headers.
async fn fixture() -> Fixture {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("pp-ca");
    let pod_leaf = ca.leaf(&["pass.example.com"]);
    let echo = TlsEcho::start(&pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let dir = ManifestDir::new();
    let plain = RouteSpec::new("ns", "plain", "pp.example.com", "web");
    let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "edge", "edge.example.com", "web") };
    let pass =
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "pass", "pass.example.com", "echo") };
    dir.write(
        "all.yaml",
        &[
            service("ns", "web", &[web.addr]),
            service("ns", "echo", &[echo.addr]),
            plain.yaml(),
            edge.yaml(),
            pass.yaml(),
        ]
        .concat(),
    );
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.use_proxy_protocol = true;
    let (router, https) = start_tls_router(settings).await;
    Fixture { router, https, _web: web, _echo: echo, _dir: dir, ca }
}

fn addr(text: &str) -> SocketAddr {
    text.parse().expect("socket address")
}

/// A PROXY header for a client at `source` talking to `destination`, in `version` 1 or 2.
fn header(version: u8, source: SocketAddr, destination: SocketAddr) -> Vec<u8> {
    let destination = match (source, destination) {
        (SocketAddr::V6(_), SocketAddr::V4(d)) => SocketAddr::new(d.ip().to_ipv6_mapped().into(), d.port()),
        _ => destination,
    };
    if version == 1 {
        v1(source, destination)
    } else {
        v2(source, destination)
    }
}

async fn http_after_header(router: SocketAddr, header: &[u8], host: &str) -> Reply {
    let mut stream = TcpStream::connect(router).await.expect("connect :80");
    stream.write_all(header).await.expect("PROXY header");
    request_over(stream, Version::HTTP_11, host, "/", &[]).await.expect("HTTP after the PROXY header")
}

fn assert_client_address(reply: &Reply, ip: &str, what: &str) {
    assert_eq!(reply.status, 200, "{what}");
    assert_eq!(reply.seen_header("x-forwarded-for"), [ip], "{what}");
    let forwarded = reply.seen_header("forwarded").join(",");
    let expected = if ip.contains(':') { format!("for=\"[{ip}]\"") } else { format!("for={ip}") };
    assert!(forwarded.contains(&expected), "{what}: Forwarded {forwarded:?} lacks {expected}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_and_v2_on_port_80_carry_the_client_address() {
    let f = fixture().await;
    let http = f.router.http_addr;
    for (version, source) in
        [(1, "203.0.113.7:40000"), (2, "198.51.100.9:40001"), (1, "[2001:db8::5]:40002"), (2, "[2001:db8::6]:40003")]
    {
        let source = addr(source);
        let reply = http_after_header(http, &header(version, source, http), "pp.example.com").await;
        assert_client_address(&reply, &source.ip().to_string(), &format!("v{version} from {source} on :80"));
    }
    // v2 LOCAL (the balancer's own health check): the connection's own address applies.
    let reply = http_after_header(http, &v2_local(), "pp.example.com").await;
    assert_client_address(&reply, "127.0.0.1", "v2 LOCAL on :80");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_and_v2_on_port_443_before_the_tls_handshake() {
    let f = fixture().await;
    let config = client_config(Trust::Anything, &["http/1.1"], None);
    for (version, source) in [(1, "203.0.113.20:50000"), (2, "198.51.100.21:50001"), (2, "[2001:db8::22]:50002")] {
        let source = addr(source);
        let mut stream = TcpStream::connect(f.https).await.expect("connect :443");
        stream.write_all(&header(version, source, f.https)).await.expect("PROXY header");
        let tls = tls_handshake(stream, Some("edge.example.com"), config.clone()).await.expect("TLS after PROXY");
        let reply = https_get_over(tls, "edge.example.com", "/", &[]).await.expect("GET over TLS");
        assert_client_address(&reply, &source.ip().to_string(), &format!("v{version} from {source} on :443"));
        assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"]);
    }
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passthrough_after_a_proxy_header_reaches_the_pod() {
    let f = fixture().await;
    let config = client_config(Trust::Ca(&f.ca.cert_pem), &[], None);
    let mut stream = TcpStream::connect(f.https).await.expect("connect :443");
    stream.write_all(&v2(addr("203.0.113.30:1234"), f.https)).await.expect("PROXY header");
    let mut tls = tls_handshake(stream, Some("pass.example.com"), config).await.expect("handshake with the pod");
    tls.write_all(b"hello through passthrough").await.expect("send");
    tls.shutdown().await.expect("half-close");
    let mut echoed = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), tls.read_to_end(&mut echoed))
        .await
        .expect("echo within 15 s")
        .expect("read echo");
    assert_eq!(echoed, b"hello through passthrough", "the PROXY header is consumed, not forwarded");
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_without_a_proxy_header_are_closed() {
    let f = fixture().await;
    let mut stream = TcpStream::connect(f.router.http_addr).await.expect("connect :80");
    stream.write_all(b"GET / HTTP/1.1\r\nHost: pp.example.com\r\n\r\n").await.expect("request");
    let (received, closed) = read_until_closed(&mut stream, Duration::from_secs(15)).await;
    assert!(closed, ":80 without a PROXY header is closed");
    let text = String::from_utf8_lossy(&received);
    assert!(!text.contains("200 OK") && !text.contains("x-backend"), "nothing is served: {text}");

    let config = client_config(Trust::Anything, &[], None);
    let stream = TcpStream::connect(f.https).await.expect("connect :443");
    let handshake =
        tokio::time::timeout(Duration::from_secs(15), tls_handshake(stream, Some("edge.example.com"), config)).await;
    assert!(
        matches!(handshake, Ok(Err(_))),
        ":443 without a PROXY header: the handshake fails (closed), got {}",
        match handshake {
            Ok(Ok(_)) => "a completed handshake",
            Err(_) => "no answer within 15 s",
            Ok(Err(_)) => "",
        }
    );

    // A malformed header is refused the same way.
    let mut stream = TcpStream::connect(f.router.http_addr).await.expect("connect :80");
    stream
        .write_all(b"PROXY TCP4 not-an-address 127.0.0.1 1 80\r\nGET / HTTP/1.1\r\nHost: pp.example.com\r\n\r\n")
        .await
        .expect("send");
    let (received, closed) = read_until_closed(&mut stream, Duration::from_secs(15)).await;
    assert!(closed, "malformed PROXY header: closed");
    assert!(!String::from_utf8_lossy(&received).contains("x-backend"), "nothing is served");

    // And the router still serves well-formed connections.
    let reply =
        http_after_header(f.router.http_addr, &v1(addr("203.0.113.40:1"), f.router.http_addr), "pp.example.com").await;
    assert_client_address(&reply, "203.0.113.40", "after refused connections");
    f.router.shutdown().await;
}
