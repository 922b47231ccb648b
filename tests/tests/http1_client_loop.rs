//! What the router's own HTTP/1.1 client-side loop makes reachable, on raw sockets: pipelined requests
//! answered in order, request heads and bodies that arrive split at any byte, `Expect: 100-continue`, and a
//! pod that answers before the request body has ended.

use std::net::SocketAddr;
use std::time::Duration;

use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::{read_until_closed, start_router};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HOST: &str = "loop.example.com";
const LIMIT: Duration = Duration::from_secs(10);

async fn router_to(pod: SocketAddr) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("app.yaml", &[service("ns", "app", &[pod]), route("ns", "app", HOST, "/", "app")].concat());
    let router = start_router(dir.path()).await;
    (dir, router)
}

/// One response read off `stream`: its head and its Content-Length body (`buffered` keeps what came after).
async fn read_response(stream: &mut TcpStream, buffered: &mut Vec<u8>) -> (String, Vec<u8>) {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(end) = buffered.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4) {
            let head = String::from_utf8_lossy(&buffered[..end]).into_owned();
            let length = head
                .lines()
                .find_map(|line| {
                    line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
                })
                .and_then(|value| value.parse::<usize>().ok())
                .unwrap_or(0);
            if buffered.len() >= end + length {
                let body = buffered[end..end + length].to_vec();
                buffered.drain(..end + length);
                return (head, body);
            }
        }
        let mut chunk = [0u8; 8192];
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .expect("a response in time")
            .expect("read");
        assert!(n > 0, "closed before a whole response: {}", String::from_utf8_lossy(buffered));
        buffered.extend_from_slice(&chunk[..n]);
    }
}

fn report(body: &[u8]) -> serde_json::Value {
    serde_json::from_slice(body).expect("the test backend's JSON report")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = router_to(web.addr).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let pipeline = format!(
        "GET /first HTTP/1.1\r\nHost: {HOST}\r\n\r\n\
         POST /second HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 5\r\n\r\nhello\
         POST /third HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
         GET /fourth HTTP/1.1\r\nHost: {HOST}\r\n\r\n"
    );
    stream.write_all(pipeline.as_bytes()).await.expect("send all four at once");
    let mut buffered = Vec::new();
    for (path, body_len) in [("/first", 0), ("/second", 5), ("/third", 3), ("/fourth", 0)] {
        let (head, body) = read_response(&mut stream, &mut buffered).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
        let seen = report(&body);
        assert_eq!(seen["path"], path, "answered in the order asked: {seen}");
        assert_eq!(seen["body_len"], body_len, "{path}: {seen}");
    }
    assert!(buffered.is_empty(), "nothing more: {}", String::from_utf8_lossy(&buffered));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_and_bodies_split_at_every_byte_are_read_whole() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = router_to(web.addr).await;
    let requests = [
        format!("POST /length HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 11\r\n\r\nhello world"),
        format!("POST /chunked HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n"),
    ];
    for request in &requests {
        let bytes = request.as_bytes();
        for split in 1..bytes.len() {
            let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            stream.write_all(&bytes[..split]).await.expect("first part");
            // Long enough for the router to read the first part on its own.
            tokio::time::sleep(Duration::from_millis(3)).await;
            stream.write_all(&bytes[split..]).await.expect("the rest");
            let (head, body) = read_response(&mut stream, &mut Vec::new()).await;
            assert!(head.starts_with("HTTP/1.1 200"), "split at {split}: {head}");
            assert_eq!(report(&body)["body_len"], 11, "split at {split} of {request:?}");
        }
    }
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_100_continue_gets_the_100_before_the_body_is_sent() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = router_to(web.addr).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let head = format!("PUT /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("head");
    let mut interim = [0u8; 25];
    tokio::time::timeout(LIMIT, stream.read_exact(&mut interim)).await.expect("the 100 in time").expect("read");
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(b"data").await.expect("body");
    let (head, body) = read_response(&mut stream, &mut Vec::new()).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(report(&body)["body_len"], 4);
    router.shutdown().await;
}

/// A pod that reads a request head, answers 413 at once and closes, whatever body follows.
async fn refusing_pod() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut chunk = [0u8; 4096];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&chunk[..n]),
                    }
                }
                let answer =
                    b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n";
                let _ = stream.write_all(answer).await;
            });
        }
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_answers_before_the_body_ends_is_relayed_and_the_connection_closed() {
    let (pod, pod_task) = refusing_pod().await;
    let (_dir, router) = router_to(pod).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let head = format!("POST /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: 1000000\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(&[b'x'; 1000]).await.expect("the first kilobyte of the body");
    let (answer, closed) = read_until_closed(&mut stream, LIMIT).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413 Payload Too Large\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\ntoo big\n"), "{answer}");
    assert!(closed, "the rest of the body cannot be told from a next request: the connection closes");
    router.shutdown().await;
    pod_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_written_while_the_router_drains_says_close_and_the_connection_closes() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = router_to(web.addr).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let mut buffered = Vec::new();
    let request = format!("GET /slow/600 HTTP/1.1\r\nHost: {HOST}\r\n\r\n");
    stream.write_all(format!("GET /before HTTP/1.1\r\nHost: {HOST}\r\n\r\n").as_bytes()).await.expect("send");
    let (head, _) = read_response(&mut stream, &mut buffered).await;
    assert!(!head.to_ascii_lowercase().contains("connection: close"), "kept open before the drain: {head}");
    // The pod answers 600 ms later; the drain begins meanwhile.
    stream.write_all(request.as_bytes()).await.expect("send");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopped = tokio::spawn(router.shutdown());
    let (head, body) = read_response(&mut stream, &mut buffered).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(report(&body)["path"], "/slow/600");
    assert!(head.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "the last response says so: {head}");
    let (rest, closed) = read_until_closed(&mut stream, LIMIT).await;
    assert!(closed && rest.is_empty() && buffered.is_empty(), "closed after it: {}", String::from_utf8_lossy(&rest));
    stopped.await.expect("router stopped");
}
