//! Message bodies through :80 with curl: uploads with either framing, HEAD, and pods that frame their answers
//! in every way HTTP/1.1 allows (chunked with trailers, until close, custom reason, an answer before the
//! upload is done, garbage).

use std::net::SocketAddr;
use std::time::Duration;

use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_http;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::start_router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn one_route(pod: SocketAddr, host: &str) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("app.yaml", &[service("ns", "app", &[pod]), route("ns", "app", host, "/", "app")].concat());
    let router = start_router(dir.path()).await;
    (dir, router)
}

/// A pod that answers every connection's first request with `answer`; with `drain` it then reads the rest
/// of what the router sends until the router closes, else it closes at once.
async fn scripted_pod(answer: &'static str, drain: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                read_head(&mut stream).await;
                if stream.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
                if drain {
                    let mut sink = vec![0u8; 64 * 1024];
                    let limit = tokio::time::sleep(Duration::from_secs(20));
                    tokio::pin!(limit);
                    loop {
                        tokio::select! {
                            read = stream.read(&mut sink) => if !matches!(read, Ok(n) if n > 0) { break },
                            _ = &mut limit => break,
                        }
                    }
                }
            });
        }
    });
    addr
}

async fn read_head(stream: &mut TcpStream) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && matches!(stream.read(&mut byte).await, Ok(1)) {
        head.push(byte[0]);
    }
}

fn upload_file(bytes: usize) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), (0..bytes).map(|i| (i % 251) as u8).collect::<Vec<_>>()).expect("write upload");
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_reach_the_pod_whole_with_either_framing() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = one_route(web.addr, "up.example.com").await;
    let file = upload_file(300 * 1024);
    let data = format!("@{}", file.path().display());

    let sized = curl_http(router.http_addr, "up.example.com", "/", &["--data-binary", &data]).await;
    assert_eq!(sized.status, 200, "{}", sized.stderr);
    assert_eq!(sized.report()["method"], "POST");
    assert_eq!(sized.report()["body_len"], 300 * 1024);

    let chunked_args = ["--data-binary", &data, "-H", "Transfer-Encoding: chunked"];
    let chunked = curl_http(router.http_addr, "up.example.com", "/", &chunked_args).await;
    assert_eq!(chunked.status, 200, "{}", chunked.stderr);
    assert_eq!(chunked.report()["body_len"], 300 * 1024);
    assert_eq!(chunked.seen_header("transfer-encoding"), ["chunked"]);
    assert!(chunked.seen_header("content-length").is_empty());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_answers_carry_no_body_and_the_connection_goes_on() {
    let web = TestBackend::start("web").await;
    let (_dir, router) = one_route(web.addr, "head.example.com").await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let requests = "HEAD / HTTP/1.1\r\nHost: head.example.com\r\n\r\nGET /second HTTP/1.1\r\nHost: head.example.com\r\nConnection: close\r\n\r\n";
    stream.write_all(requests.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("answers")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    let (head_answer, rest) = answer.split_once("\r\n\r\n").expect("HEAD answer head");
    assert!(head_answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(head_answer.to_ascii_lowercase().contains("content-length:"), "{head_answer}");
    assert!(rest.starts_with("HTTP/1.1 200"), "the GET answer follows the HEAD head directly: {answer}");
    assert!(rest.contains("\"path\":\"/second\""), "{rest}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_pod_answers_arrive_decoded() {
    let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Pod: raw\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n";
    let pod = scripted_pod(answer, false).await;
    let (_dir, router) = one_route(pod, "chunked.example.com").await;
    let reply = curl_http(router.http_addr, "chunked.example.com", "/", &[]).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "hello world"), "{}", reply.stderr);
    assert_eq!(reply.header("x-pod").as_deref(), Some("raw"));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_answers_delimited_by_close_and_custom_reasons_pass_through() {
    let pod = scripted_pod("HTTP/1.0 299 Fine By Me\r\nX-Pod: old\r\n\r\nall of it until close", false).await;
    let (_dir, router) = one_route(pod, "old.example.com").await;
    let reply = curl_http(router.http_addr, "old.example.com", "/", &[]).await;
    assert_eq!(reply.status, 299, "{}", reply.stderr);
    assert_eq!(reply.body, "all of it until close");
    assert!(reply.headers.starts_with("HTTP/1.1 299 Fine By Me"), "{}", reply.headers);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_refusing_an_upload_early_is_answered_through() {
    let answer = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo much";
    let pod = scripted_pod(answer, true).await;
    let (_dir, router) = one_route(pod, "big.example.com").await;
    let file = upload_file(8 * 1024 * 1024);
    let data = format!("@{}", file.path().display());
    let reply = curl_http(router.http_addr, "big.example.com", "/", &["--data-binary", &data]).await;
    assert_eq!(reply.status, 413, "{}", reply.stderr);
    assert_eq!(reply.body, "too much");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_a_pod_is_a_502() {
    let pod = scripted_pod("this is not HTTP\r\n\r\n", false).await;
    let (_dir, router) = one_route(pod, "junk.example.com").await;
    let reply = curl_http(router.http_addr, "junk.example.com", "/", &[]).await;
    assert_eq!(reply.status, 502, "{}", reply.stderr);
    router.shutdown().await;
}
