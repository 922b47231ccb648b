//! OpenShift's connection and client limits on real sockets: ROUTER_MAX_CONNECTIONS holds new connections in the
//! listen backlog (not accepted, not dropped) until one closes, and counts it; ROUTER_DEFAULT_CLIENT_TIMEOUT
//! disconnects a client that stops sending its request body (the pod never gets the request whole) or stops
//! reading its response; ROUTER_DEFAULT_SERVER_FIN_TIMEOUT closes a WebSocket tunnel whose client has sent its
//! FIN once the pod stays silent that long, instead of the hour of the tunnel timeout.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::client::{self, KeepAliveClient};
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::read_until_closed;
use router_tests::recording_pod::RecordingPod;
use router_tests::start_router_with;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

const HOST: &str = "limits.example.com";
const SHORT: Duration = Duration::from_millis(300);

async fn one_route(pod: SocketAddr, settings: impl FnOnce(&mut Settings)) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("app.yaml", &[service("ns", "app", &[pod]), route("ns", "app", HOST, "/", "app")].concat());
    let mut values = Settings::for_loopback(dir.path());
    settings(&mut values);
    let router = start_router_with(values).await;
    (dir, router)
}

/// The value of an unlabelled series on the admin port's /metrics.
async fn metric(router: &RunningRouter, name: &str) -> f64 {
    let text = client::get(router.stats_addr, "admin", "/metrics").await.body;
    text.lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// One GET on an open connection, left open: the status, once the whole response is read.
async fn keep_alive_get(stream: &mut TcpStream) -> u16 {
    stream.write_all(format!("GET / HTTP/1.1\r\nHost: {HOST}\r\n\r\n").as_bytes()).await.expect("send");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n =
            tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await.expect("answer").expect("read");
        assert_eq!(n, 1, "closed mid-answer: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .expect("a Content-Length");
    let mut body = vec![0u8; length];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut body)).await.expect("body").expect("read");
    head.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_connections_a_connection_waits_in_the_backlog_until_one_closes() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = one_route(web.addr, |s| s.limits.max_connections = "2".into()).await;
    assert_eq!(metric(&router, "router_max_connections").await, 2.0);
    let mut first = TcpStream::connect(router.http_addr).await.expect("connect");
    assert_eq!(keep_alive_get(&mut first).await, 200);

    let mut second = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(second.get(HOST, "/").await.status, 200);

    // The kernel completes the third handshake, but the router does not accept it: no answer, and no close.
    let mut third = TcpStream::connect(router.http_addr).await.expect("the backlog takes the connection");
    third
        .write_all(format!("GET / HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .expect("send");
    let (early, closed) = read_until_closed(&mut third, Duration::from_millis(800)).await;
    assert!(early.is_empty() && !closed, "held in the backlog: {:?}, closed {closed}", String::from_utf8_lossy(&early));
    assert_eq!(metric(&router, "router_client_connections").await, 2.0, "the admin port is outside the limit");
    assert!(metric(&router, "router_connection_limit_waits_total").await >= 1.0);

    // One closes: the waiting connection is accepted and served.
    drop(first);
    let (answer, closed) = read_until_closed(&mut third, Duration::from_secs(10)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(closed);
    assert_eq!(second.get(HOST, "/").await.status, 200, "the open connections went on");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_sending_its_body_is_disconnected_and_the_pod_never_gets_it_whole() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr, |s| s.limits.timeouts.client_timeout = SHORT).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let head = format!("POST /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 100\r\n\r\n0123456789");
    stream.write_all(head.as_bytes()).await.expect("send a tenth of the body");
    let started = Instant::now();
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let took = started.elapsed();
    assert!(closed, "the router closed the connection");
    assert!(took >= SHORT - Duration::from_millis(50) && took < Duration::from_secs(5), "closed after {took:?}");
    let recorded = pod.recorded();
    assert_eq!(recorded.iter().map(|r| r.answered).sum::<usize>(), 0, "no complete request reached the pod");
    router_tests::eventually("the pod connection aborted", Duration::from_secs(5), || {
        let closed = pod.recorded().iter().all(|r| r.closed);
        async move { closed.then_some(()) }
    })
    .await;
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn within_the_client_timeout_a_slow_body_still_arrives() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr, |s| s.limits.timeouts.client_timeout = SHORT).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let head = format!("POST /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 4\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("send head");
    for byte in [b"a", b"b", b"c", b"d"] {
        tokio::time::sleep(SHORT / 2).await;
        stream.write_all(byte).await.expect("send a byte");
    }
    let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "each byte came within the timeout: {answer}");
    router.shutdown().await;
}

/// A pod that answers any request with a large body, written as fast as the router takes it.
async fn big_answer_pod(body_len: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        for _ in 0..4 {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {body_len}\r\n\r\n");
                let _ = stream.write_all(answer.as_bytes()).await;
                let chunk = vec![b'x'; 64 * 1024];
                let mut sent = 0;
                while sent < body_len {
                    let n = chunk.len().min(body_len - sent);
                    let write = stream.write_all(&chunk[..n]);
                    match tokio::time::timeout(Duration::from_secs(30), write).await {
                        Ok(Ok(())) => sent += n,
                        _ => return,
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_its_response_is_disconnected() {
    const BODY: usize = 256 * 1024 * 1024;
    let pod = big_answer_pod(BODY).await;
    let (_dir, router) = one_route(pod, |s| s.limits.timeouts.client_timeout = SHORT).await;
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("small receive buffer");
    let mut stream = socket.connect(router.http_addr).await.expect("connect");
    stream.write_all(format!("GET /big HTTP/1.1\r\nHost: {HOST}\r\n\r\n").as_bytes()).await.expect("send");
    // Read nothing while the router's buffers fill and it waits for the client, well past the timeout.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut received = 0usize;
    let mut buffer = vec![0u8; 1 << 20];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let ended = loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => received += n,
        }
    };
    assert!(ended, "the router closed the connection");
    assert!(received < BODY / 4, "cut short, not served whole: {received} bytes");
    router.shutdown().await;
}

/// A WebSocket pod that answers the upgrade, then reads until the client's FIN and stays open and silent.
async fn silent_websocket_pod() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else { return };
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
            if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                return;
            }
            head.push(byte[0]);
        }
        let answer = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
        let _ = stream.write_all(answer.as_bytes()).await;
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut rest)).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_closed_websocket_tunnel_closes_after_the_server_fin_timeout() {
    let pod = silent_websocket_pod().await;
    let (_dir, router) = one_route(pod, |s| s.limits.timeouts.server_fin_timeout = SHORT).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let upgrade = format!(
        "GET /chat HTTP/1.1\r\nHost: {HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream.write_all(upgrade.as_bytes()).await.expect("send upgrade");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await.expect("101").expect("read");
        assert_eq!(n, 1, "closed during the upgrade: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    stream.shutdown().await.expect("client FIN");
    let started = Instant::now();
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(20)).await;
    let took = started.elapsed();
    assert!(closed, "the router closed the tunnel");
    assert!(took >= SHORT - Duration::from_millis(50), "closed after {took:?}, before the FIN timeout");
    assert!(took < Duration::from_secs(10), "closed after {took:?}: the FIN timeout, not the tunnel timeout");
    router.shutdown().await;
}
