//! Route protection on real connections: the IP allowlist, per-client rate limits, per-pod concurrency, and
//! the client timeouts (slowloris and idle keep-alive).

use std::time::Duration;

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::manifests::{service, ManifestDir, RouteSpec};
use router_tests::start_router_with;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one request on a new connection; `None` when the router closed it without answering.
async fn answer(addr: std::net::SocketAddr, host: &str) -> Option<String> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut reply = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut reply)).await.expect("bounded");
    match read {
        Ok(_) if !reply.is_empty() => Some(String::from_utf8_lossy(&reply).into()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_allowlist_refuses_other_clients_before_any_byte() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let open = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/ip_allowlist", "10.0.0.0/8 127.0.0.1")],
        ..RouteSpec::new("ns", "open", "open.test", "web")
    };
    let closed = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/ip_whitelist", "192.0.2.0/24 2001:db8::/32")],
        ..RouteSpec::new("ns", "closed", "closed.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), open.yaml(), closed.yaml()].concat());
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    assert!(answer(router.http_addr, "open.test").await.is_some_and(|r| r.starts_with("HTTP/1.1 200")));
    assert_eq!(answer(router.http_addr, "closed.test").await, None, "closed without a response");
    assert!(router
        .metrics
        .render()
        .contains(r#"router_connections_refused_total{backend="be_http:ns:closed",reason="ip_allowlist"} 1"#));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_close_connections_of_a_client_over_the_limit() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let limited = RouteSpec {
        annotations: &[
            ("haproxy.router.openshift.io/rate-limit-connections", "true"),
            ("haproxy.router.openshift.io/rate-limit-connections.rate-http", "4"),
        ],
        ..RouteSpec::new("ns", "web", "limited.test", "web")
    };
    dir.write(
        "all.yaml",
        &[service("ns", "web", &[web.addr]), limited.yaml(), RouteSpec::new("ns", "free", "free.test", "web").yaml()]
            .concat(),
    );
    let router = start_router_with(Settings::for_loopback(dir.path())).await;
    // Like HAProxy, the request being judged counts: with a limit of 4, three requests per 10 s pass.
    for i in 0..3 {
        assert!(answer(router.http_addr, "limited.test").await.is_some(), "request {i} within the limit");
    }
    assert_eq!(answer(router.http_addr, "limited.test").await, None, "over the limit: closed");
    assert!(answer(router.http_addr, "free.test").await.is_some(), "other routes are not limited");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_concurrent_connections_queue_then_503() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    let capped = RouteSpec {
        annotations: &[("haproxy.router.openshift.io/pod-concurrent-connections", "1")],
        ..RouteSpec::new("ns", "web", "capped.test", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), capped.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.connect_timeout = Duration::from_millis(400);
    let router = start_router_with(settings).await;
    let http = router.http_addr;
    let long = tokio::spawn(async move { get(http, "capped.test", "/slow/1500").await.status });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The pod's one slot is taken for 1.5 s; a second request waits 400 ms for it, then gets a 503.
    assert_eq!(get(http, "capped.test", "/").await.status, 503);
    assert_eq!(long.await.expect("long request"), 200);
    // Once the slot is free, requests pass again, and a short wait for a slot succeeds.
    let short = tokio::spawn(async move { get(http, "capped.test", "/slow/150").await.status });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(get(http, "capped.test", "/").await.status, 200, "queued until the slot freed");
    assert_eq!(short.await.expect("short request"), 200);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_and_idle_keep_alive_connections_are_closed() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write(
        "all.yaml",
        &[service("ns", "web", &[web.addr]), RouteSpec::new("ns", "web", "t.test", "web").yaml()].concat(),
    );
    let mut settings = Settings::for_loopback(dir.path());
    settings.http_request_timeout = Duration::from_millis(300);
    settings.routing.keep_alive_timeout = Duration::from_millis(1000);
    let router = start_router_with(settings).await;

    // Half a request head, never finished: closed after the http-request timeout.
    let mut slow = TcpStream::connect(router.http_addr).await.expect("connect");
    slow.write_all(b"GET / HTTP/1.1\r\nHost: t.test\r\nX-Drip: 1").await.expect("send");
    let mut buffer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(3), slow.read_to_end(&mut buffer)).await;
    assert!(closed.is_ok(), "a dripping client is cut off");

    // A keep-alive connection survives a pause shorter than the keep-alive timeout, not a longer one.
    let mut idle = TcpStream::connect(router.http_addr).await.expect("connect");
    let request = b"GET / HTTP/1.1\r\nHost: t.test\r\n\r\n";
    idle.write_all(request).await.expect("first request");
    let mut chunk = vec![0u8; 4096];
    let n = idle.read(&mut chunk).await.expect("first response");
    assert!(String::from_utf8_lossy(&chunk[..n]).starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(400)).await;
    idle.write_all(request).await.expect("second request after a short pause");
    let n = idle.read(&mut chunk).await.expect("second response");
    assert!(String::from_utf8_lossy(&chunk[..n]).starts_with("HTTP/1.1 200"), "still open after 400 ms");
    let closed = tokio::time::timeout(Duration::from_secs(3), idle.read(&mut chunk)).await.expect("closed in time");
    assert_eq!(closed.expect("read"), 0, "closed after 1 s idle");
    router.shutdown().await;
}
