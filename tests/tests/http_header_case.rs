//! ROUTER_H1_CASE_ADJUST with raw sockets on both sides: an HTTP/1 client reads the listed response header
//! names in the listed case (pods' answers and the router's own), a pod reads them in requests only when its
//! route carries `haproxy.router.openshift.io/h1-adjust-case: "true"`; bodies and HEAD responses stay intact
//! on a kept-alive connection, and without the setting every name stays lower case.

use std::net::SocketAddr;
use std::time::Duration;

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::manifests::{route, service, ManifestDir, RouteSpec};
use router_tests::recording_pod::RecordingPod;
use router_tests::start_router_with;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ADJUSTED: &str = "X-Pod,Content-Length,Host,X-Forwarded-For,Cache-Control,Content-Type";

async fn router(pod: SocketAddr, adjust: &str) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    let annotated = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/h1-adjust-case", "true")],
        ..RouteSpec::new("ns", "annotated", "annotated.example.com", "pod")
    };
    let yaml = [service("ns", "pod", &[pod]), annotated.yaml(), route("ns", "plain", "plain.example.com", "/", "pod")]
        .concat();
    dir.write("case.yaml", &yaml);
    let mut settings = Settings::for_loopback(dir.path());
    settings.http.h1_case_adjust = adjust.to_string();
    let router = start_router_with(settings).await;
    (dir, router)
}

/// Sends `request` on `stream` and reads one response: its head, and `body_len` body bytes after it (`None`:
/// whatever came with the head).
async fn exchange(stream: &mut TcpStream, request: &str, body_len: Option<usize>) -> (String, Vec<u8>) {
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if let Some(end) = received.windows(4).position(|w: &[u8]| w == b"\r\n\r\n") {
            if received.len() >= end + 4 + body_len.unwrap_or(0) {
                let head = String::from_utf8_lossy(&received[..end + 4]).into_owned();
                if let Some(body_len) = body_len {
                    let beyond = String::from_utf8_lossy(&received[end + 4 + body_len..]);
                    assert!(beyond.is_empty(), "nothing beyond the response: {beyond}");
                }
                return (head, received[end + 4..].to_vec());
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("response in time")
            .expect("read");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&received));
        received.extend_from_slice(&buffer[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_response_names_reach_http1_clients_in_the_listed_case() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = router(pod.addr, ADJUSTED).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");

    let (head, body) = exchange(&mut stream, "GET / HTTP/1.1\r\nHost: plain.example.com\r\n\r\n", Some(2)).await;
    assert!(head.contains("\r\nX-Pod: recording\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Length: 2\r\n"), "{head}");
    assert!(head.contains("\r\ndate: "), "names not listed stay lower case: {head}");
    assert_eq!(body, b"ok");

    // A HEAD answer announces a length but has no body: the next response on the connection is still a head.
    let (head, _) = exchange(&mut stream, "HEAD / HTTP/1.1\r\nHost: plain.example.com\r\n\r\n", Some(0)).await;
    assert!(head.contains("\r\nX-Pod: recording\r\n"), "{head}");
    let (head, body) = exchange(&mut stream, "GET /again HTTP/1.1\r\nHost: plain.example.com\r\n\r\n", Some(2)).await;
    assert!(head.contains("\r\nX-Pod: recording\r\n"), "{head}");
    assert_eq!(body, b"ok");

    // The router's own answers too (HAProxy adjusts every HTTP/1 response of the frontend).
    let (head, _) = exchange(&mut stream, "GET / HTTP/1.1\r\nHost: nowhere.example.com\r\n\r\n", None).await;
    let head = head.split("\r\n\r\n").next().unwrap_or_default().to_string();
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.contains("\r\nCache-Control: ") && head.contains("\r\nContent-Type: "), "{head}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_see_the_listed_case_only_on_annotated_routes() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = router(pod.addr, ADJUSTED).await;
    for host in ["annotated.example.com", "plain.example.com"] {
        let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
        exchange(&mut stream, &format!("GET / HTTP/1.1\r\nHOST: {host}\r\nx-pod: client\r\n\r\n"), Some(2)).await;
    }
    let recorded = pod.recorded();
    let requests: Vec<String> = recorded.iter().map(|r| r.text()).collect();
    let annotated = requests.iter().find(|r| r.contains("annotated.example.com")).expect("annotated request");
    let plain = requests.iter().find(|r| r.contains("plain.example.com")).expect("plain request");
    assert!(annotated.contains("\r\nHost: annotated.example.com\r\n"), "{annotated}");
    assert!(annotated.contains("\r\nX-Pod: client\r\n"), "{annotated}");
    assert!(annotated.contains("\r\nX-Forwarded-For: 127.0.0.1\r\n"), "{annotated}");
    assert!(annotated.contains("\r\nx-forwarded-proto: "), "names not listed stay lower case: {annotated}");
    assert!(plain.contains("\r\nhost: plain.example.com\r\n"), "{plain}");
    assert!(plain.contains("\r\nx-pod: client\r\n"), "{plain}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_every_name_is_lower_case_even_on_annotated_routes() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = router(pod.addr, "").await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let (head, _) = exchange(&mut stream, "GET / HTTP/1.1\r\nHost: annotated.example.com\r\n\r\n", Some(2)).await;
    assert!(head.contains("\r\nx-pod: recording\r\n"), "{head}");
    let request = pod.recorded().first().map(|r| r.text()).unwrap_or_default();
    assert!(request.contains("\r\nhost: annotated.example.com\r\n"), "{request}");
    router.shutdown().await;
}
