//! Absolute-form request targets (`GET http://a.example.com/x HTTP/1.1`, RFC 9112 section 3.2.2) on :80:
//! routed by their authority, with the Host sent to the pod made from it (lowercased, default port dropped);
//! a Host header that names another host (or port) is refused with 400, as HAProxy refuses it, so it can never
//! steer the request to another route's pods.

use std::time::Duration;

use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::read_until_closed;
use router_tests::start_router;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

struct Fixture {
    _a: TestBackend,
    _b: TestBackend,
    _dir: ManifestDir,
    router: RunningRouter,
}

/// Routes `a.example.com` to backend `a` and `b.example.com` to backend `b`.
async fn fixture() -> Fixture {
    let (a, b) = (TestBackend::start("a").await, TestBackend::start("b").await);
    let dir = ManifestDir::new();
    let manifests = [
        service("ns", "a", &[a.addr]),
        service("ns", "b", &[b.addr]),
        route("ns", "a", "a.example.com", "/", "a"),
        route("ns", "b", "b.example.com", "/", "b"),
    ];
    dir.write("all.yaml", &manifests.concat());
    let router = start_router(dir.path()).await;
    Fixture { _a: a, _b: b, _dir: dir, router }
}

struct Answer {
    status: u16,
    /// The `x-backend` header: which pod answered ("" for the router itself).
    backend: String,
    body: String,
    closed: bool,
}

impl Answer {
    /// The Host header the pod saw.
    fn host_seen(&self) -> String {
        let report: serde_json::Value = serde_json::from_str(&self.body).expect("backend report");
        report["headers"]["host"][0].as_str().unwrap_or("").to_string()
    }

    fn path_seen(&self) -> String {
        let report: serde_json::Value = serde_json::from_str(&self.body).expect("backend report");
        report["path"].as_str().unwrap_or("").to_string()
    }
}

/// Sends `target` as the request target with `host` as the Host header (none for `None`) and
/// `Connection: close`, on a new connection.
async fn send(router: &RunningRouter, target: &str, host: Option<&str>) -> Answer {
    let host_line = host.map_or(String::new(), |host| format!("Host: {host}\r\n"));
    let request = format!("GET {target} HTTP/1.1\r\n{host_line}Connection: close\r\n\r\n");
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let (raw, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let backend = head
        .lines()
        .find_map(|line| line.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("x-backend")))
        .map_or(String::new(), |(_, value)| value.trim().to_string());
    Answer { status, backend, body: body.to_string(), closed }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absolute_form_targets_route_by_their_authority() {
    let f = fixture().await;
    let cases = [
        ("http://a.example.com/x?q=1", Some("a.example.com"), "/x?q=1", "a.example.com"),
        ("http://A.Example.COM:80/x", Some("a.example.com"), "/x", "a.example.com"),
        ("http://a.example.com/x", Some("A.EXAMPLE.COM:80"), "/x", "a.example.com"),
        ("http://a.example.com/x", None, "/x", "a.example.com"),
        ("http://a.example.com:8080/x", Some("a.example.com:8080"), "/x", "a.example.com:8080"),
        ("http://a.example.com", Some("a.example.com"), "/", "a.example.com"),
    ];
    for (target, host, path, host_seen) in cases {
        let answer = send(&f.router, target, host).await;
        assert_eq!((answer.status, answer.backend.as_str()), (200, "a"), "{target} with Host {host:?}");
        assert_eq!(answer.path_seen(), path, "{target}");
        assert_eq!(answer.host_seen(), host_seen, "{target} with Host {host:?}");
    }
    f.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_header_that_disagrees_with_the_authority_is_refused() {
    let f = fixture().await;
    let cases = [
        ("http://a.example.com/x", "b.example.com"),
        ("http://b.example.com/x", "a.example.com"),
        ("http://a.example.com/x", "a.example.com:8080"),
        ("http://a.example.com:8080/x", "a.example.com"),
        ("https://a.example.com/x", "a.example.com:80"),
    ];
    for (target, host) in cases {
        let answer = send(&f.router, target, Some(host)).await;
        assert_eq!(answer.status, 400, "{target} with Host {host}: {}", answer.body);
        assert_eq!(answer.backend, "", "{target} with Host {host}: no pod answered");
        assert!(answer.closed, "{target} with Host {host}: the connection is closed");
    }
    // Origin-form requests still route by Host.
    let answer = send(&f.router, "/y", Some("b.example.com")).await;
    assert_eq!((answer.status, answer.backend.as_str(), answer.host_seen().as_str()), (200, "b", "b.example.com"));
    f.router.shutdown().await;
}
