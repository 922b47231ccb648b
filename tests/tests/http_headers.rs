//! What the router changes on a request on its way to a pod, and what it refuses.

use std::time::Duration;

use router_tests::backend::TestBackend;
use router_tests::client::KeepAliveClient;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::start_router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn one_route(backend: &TestBackend, host: &str) -> (ManifestDir, router::server::RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("web.yaml", &[service("ns", "web", &[backend.addr]), route("ns", "web", host, "/", "web")].concat());
    let router = start_router(dir.path()).await;
    (dir, router)
}

/// Sends raw bytes on a new connection and returns everything the router sent back before closing.
async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("send");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "router kept the connection open after: {}", String::from_utf8_lossy(&answer));
    String::from_utf8_lossy(&answer).into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_headers_are_appended_and_proxy_header_removed() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = one_route(&web, "fwd.example.com").await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let reply = client
        .get_with("FWD.Example.com", "/x", &[("x-forwarded-for", "203.0.113.9"), ("proxy", "http://evil:1")])
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.seen_header("host"), ["fwd.example.com"], "Host is lowercased");
    assert_eq!(reply.seen_header("x-forwarded-for"), ["203.0.113.9", "127.0.0.1"], "client address appended");
    assert_eq!(reply.seen_header("x-forwarded-host"), ["fwd.example.com"]);
    assert_eq!(reply.seen_header("x-forwarded-port"), [router.http_addr.port().to_string()]);
    assert_eq!(reply.seen_header("x-forwarded-proto"), ["http"]);
    assert_eq!(reply.seen_header("forwarded"), ["for=127.0.0.1;host=fwd.example.com;proto=http"]);
    assert!(reply.seen_header("proxy").is_empty(), "Proxy header must not reach the pod");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_content_length_gets_400_and_the_connection_closes() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = one_route(&web, "cl.example.com").await;
    let answer =
        raw_exchange(router.http_addr, b"POST / HTTP/1.1\r\nHost: cl.example.com\r\nContent-Length: \r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_request_gets_400_and_the_connection_closes() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = one_route(&web, "bad.example.com").await;
    let answer = raw_exchange(router.http_addr, b"GET / HTTP/1.1\r\nHost bad.example.com\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_upgrade_is_tunnelled_both_ways() {
    let web = TestBackend::start("ws").await;
    let (_dir, router) = one_route(&web, "ws.example.com").await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    stream
        .write_all(b"GET /chat HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        .await
        .expect("send upgrade");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte))
            .await
            .expect("101 in time")
            .expect("read");
        assert_eq!(n, 1, "connection closed during the upgrade: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: websocket"), "{head}");
    for message in [&b"hello"[..], b"second frame"] {
        stream.write_all(message).await.expect("send through tunnel");
        let mut echoed = vec![0u8; message.len()];
        tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut echoed))
            .await
            .expect("echo in time")
            .expect("echo");
        assert_eq!(echoed, message);
    }
    // A stopping router keeps the tunnel (up to ROUTER_HARD_STOP_AFTER) after its listeners closed, and is done
    // once the tunnel ends.
    let http_addr = router.http_addr;
    let stopping = tokio::spawn(router.shutdown());
    router_tests::eventually("the listener closed", Duration::from_secs(5), || async move {
        TcpStream::connect(http_addr).await.is_err().then_some(())
    })
    .await;
    stream.write_all(b"during shutdown").await.expect("send through the tunnel while stopping");
    let mut echoed = [0u8; 15];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut echoed)).await.expect("echo").expect("echo");
    assert_eq!(&echoed, b"during shutdown");
    assert!(!stopping.is_finished(), "the router waits for the open tunnel");
    drop(stream);
    tokio::time::timeout(Duration::from_secs(5), stopping).await.expect("stopped once the tunnel ended").expect("task");
}
