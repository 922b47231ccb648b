//! Malformed chunked request bodies on :80 are the client's fault: the router answers 400 and closes the
//! connection, and the pod never gets a complete request (no last chunk reaches it; its connection is closed).
//! Raw sockets on both sides: the client writes exact bytes, the pod records exact bytes.

use std::net::SocketAddr;
use std::time::Duration;

use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::manifests::{route, service, service_with_app_protocol, ManifestDir};
use router_tests::read_until_closed;
use router_tests::recording_pod::RecordingPod;
use router_tests::start_router;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const HOST: &str = "chunks.example.com";
const HEAD: &str = "POST /upload HTTP/1.1\r\nHost: chunks.example.com\r\nTransfer-Encoding: chunked\r\n\r\n";

async fn one_route(pod: SocketAddr) -> (ManifestDir, RunningRouter) {
    route_to(service("ns", "app", &[pod])).await
}

async fn route_to(service: String) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("app.yaml", &[service, route("ns", "app", HOST, "/", "app")].concat());
    let router = start_router(dir.path()).await;
    (dir, router)
}

/// Sends the chunked head (with `Connection: close` when `close`) and `body` on a new connection; returns what
/// the router answered and whether it closed the connection.
async fn send(router: &RunningRouter, close: bool, body: &[u8]) -> (String, bool) {
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let head = if close { HEAD.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n") } else { HEAD.to_string() };
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).await.expect("send");
    let (answer, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_well_formed_chunked_body_reaches_the_pod_whole() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr).await;
    let (answer, _) = send(&router, true, b"3\r\nabc\r\n5;name=value\r\nhello\r\n0\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let recorded = pod.recorded();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].answered, 1, "{}", recorded[0].text());
    assert!(recorded[0].text().ends_with("\r\n\r\n3\r\nabc\r\n5\r\nhello\r\n0\r\n\r\n"), "{}", recorded[0].text());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunk_extensions_never_reach_the_pod() {
    // hyper passes any byte but CR and LF inside an extension; the router re-frames the body without them,
    // as HAProxy does, so what a pod parses never depends on them.
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr).await;
    let (answer, _) = send(&router, true, b"5;odd=\"a b\"\0\x7f\r\nhello\r\n0\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let text = pod.recorded()[0].text();
    assert!(text.ends_with("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), "{text}");
    assert!(!text.contains("odd"), "{text}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_chunked_bodies_get_400_and_never_reach_the_pod_whole() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr).await;
    let cases: [(&str, &[u8]); 14] = [
        ("a size with a plus sign", b"3\r\nabc\r\n+5\r\nhello\r\n0\r\n\r\n"),
        ("a size with a minus sign", b"-5\r\nhello\r\n0\r\n\r\n"),
        ("a size with a non-hex digit", b"3\r\nabc\r\n5g\r\nhello\r\n0\r\n\r\n"),
        ("a size in 0x notation", b"0x5\r\nhello\r\n0\r\n\r\n"),
        ("an empty size", b"\r\nhello\r\n0\r\n\r\n"),
        ("a size overflowing 64 bits", b"3\r\nabc\r\n10000000000000005\r\nhello\r\n0\r\n\r\n"),
        ("a bare LF ending the size line", b"3\r\nabc\r\n5\nhello\r\n0\r\n\r\n"),
        ("a bare LF ending an extension", b"3\r\nabc\r\n5;name=value\nhello\r\n0\r\n\r\n"),
        ("a bare CR in the size line", b"5\rhello\r\n0\r\n\r\n"),
        ("a NUL after the size", b"5\0\r\nhello\r\n0\r\n\r\n"),
        ("text after the size", b"5 x\r\nhello\r\n0\r\n\r\n"),
        ("no CRLF after the data", b"5\r\nhelloXX0\r\n\r\n"),
        ("a bare LF after the data", b"3\r\nabc\r\n5\r\nhello\n0\r\n\r\n"),
        ("more data than the size", b"3\r\nabcdef\r\n0\r\n\r\n"),
    ];
    for (what, body) in cases {
        let before = pod.connections();
        let (answer, closed) = send(&router, false, body).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{what}: {answer}");
        assert!(closed, "{what}: the client connection is closed after the 400");
        let recorded = pod.wait_all_closed(Duration::from_secs(10)).await;
        for connection in &recorded[before..] {
            assert!(connection.closed, "{what}: the pod connection is aborted");
            assert_eq!(connection.answered, 0, "{what}: the pod saw a complete request: {}", connection.text());
            assert!(!connection.text().contains("\r\n0\r\n\r\n"), "{what}: {}", connection.text());
        }
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_body_for_an_h2c_pod_is_the_clients_fault_too() {
    // hyper's HTTP/2 client resets the stream when the body fails: the pod gets no END_STREAM, the client a
    // 400 at once (not a 504 after the server timeout).
    let pod = TestBackend::start_h2c("h2c").await;
    let (_dir, router) = route_to(service_with_app_protocol("ns", "app", &[pod.addr], "h2c")).await;
    let (answer, _) = send(&router, true, b"3\r\nabc\r\n0\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("\"version\":\"HTTP/2.0\""), "{answer}");
    let started = std::time::Instant::now();
    let (answer, closed) = send(&router, false, b"3\r\nabc\r\n-5\r\nhello\r\n0\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(closed);
    assert!(started.elapsed() < Duration::from_secs(5), "answered at once: {:?}", started.elapsed());
    router.shutdown().await;
}
