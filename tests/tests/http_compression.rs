//! ROUTER_ENABLE_COMPRESSION / ROUTER_COMPRESSION_MIME with real clients: curl `--compressed` decodes what the
//! router gzipped, a raw socket sees the headers HAProxy would send and a streamed body arriving piece by
//! piece; what must stay untouched (other types, HEAD, already encoded, `no-transform`, compression off) does.

use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::cli::curl_https;
use router_tests::manifests::{route, service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::{start_router_with, start_tls_router};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

const HOST: &str = "gz.example.com";
/// Long and repetitive enough that gzip makes it much smaller.
const TEXT: &str = "All work and no play makes the router a dull proxy. ";

fn text_body() -> String {
    TEXT.repeat(200)
}

/// A pod answering by path: `/text`, `/png`, `/json`, `/encoded` (Content-Encoding: br), `/no-transform`,
/// `/etag`, `/stream` (chunked; its second piece waits for `release`). Keep-alive, requests without bodies.
async fn scripted_pod(release: std::sync::Arc<Notify>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind pod");
    let addr = listener.local_addr().expect("pod address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let release = release.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(30), serve_pod(stream, release)).await;
            });
        }
    });
    addr
}

async fn serve_pod(mut stream: TcpStream, release: std::sync::Arc<Notify>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
        buffer.drain(..end + 4);
        let mut words = head.split_whitespace();
        let method = words.next().unwrap_or_default().to_string();
        let path = words.next().unwrap_or_default().to_string();
        let accept = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("accept-encoding:").map(|v| v.trim().to_string()))
            .unwrap_or_default();
        let seen = format!("X-Seen-Accept-Encoding: {accept}\r\n");
        if path == "/stream" {
            let first = "<p>first piece</p>";
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n{seen}Transfer-Encoding: chunked\r\n\r\n");
            let piece = format!("{:x}\r\n{first}\r\n", first.len());
            if stream.write_all(format!("{head}{piece}").as_bytes()).await.is_err() {
                return;
            }
            release.notified().await;
            let second = "<p>second piece</p>";
            let rest = format!("{:x}\r\n{second}\r\n0\r\n\r\n", second.len());
            if stream.write_all(rest.as_bytes()).await.is_err() {
                return;
            }
            continue;
        }
        let (extra, body) = match path.as_str() {
            "/text" => ("Content-Type: text/plain; charset=utf-8\r\n", text_body()),
            "/png" => ("Content-Type: image/png\r\n", text_body()),
            "/json" => ("Content-Type: application/json\r\n", format!("{{\"text\":\"{}\"}}", text_body())),
            "/encoded" => ("Content-Type: text/plain\r\nContent-Encoding: br\r\n", text_body()),
            "/no-transform" => ("Content-Type: text/plain\r\nCache-Control: no-transform\r\n", text_body()),
            "/etag" => ("Content-Type: text/css\r\nETag: \"v7\"\r\n", text_body()),
            _ => ("Content-Type: text/plain\r\n", "not found".to_string()),
        };
        let status = if body == "not found" { "404 Not Found" } else { "200 OK" };
        let answer = format!("HTTP/1.1 {status}\r\n{extra}{seen}Content-Length: {}\r\n\r\n", body.len());
        let mut out = answer.into_bytes();
        if method != "HEAD" {
            out.extend_from_slice(body.as_bytes());
        }
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
}

async fn router_with(pod: SocketAddr, compression: bool, mime: Option<&str>) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("gz.yaml", &[service("ns", "gz", &[pod]), route("ns", "gz", HOST, "/", "gz")].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.http.enable_compression = compression;
    if let Some(mime) = mime {
        settings.http.compression_mime = mime.to_string();
    }
    let router = start_router_with(settings).await;
    (dir, router)
}

struct CurlReply {
    /// Header lines, names lowercased.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl CurlReply {
    fn header(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// curl through the router; `args` come before the URL (`--compressed`, `-I`, `-H ...`).
async fn curl(router: &RunningRouter, path: &str, args: &[&str]) -> CurlReply {
    let dir = tempfile::tempdir().expect("temp dir");
    let headers_file = dir.path().join("headers");
    let body_file = dir.path().join("body");
    let url = format!("http://{HOST}:{}{path}", router.http_addr.port());
    let resolve = format!("{HOST}:{}:127.0.0.1", router.http_addr.port());
    let output = tokio::process::Command::new("curl")
        .args(["-sS", "--noproxy", "*", "--max-time", "10", "--resolve", &resolve, "-D"])
        .arg(&headers_file)
        .arg("-o")
        .arg(&body_file)
        .args(args)
        .arg(&url)
        .output()
        .await
        .expect("run curl");
    assert!(output.status.success(), "curl failed: {}", String::from_utf8_lossy(&output.stderr));
    let raw = std::fs::read_to_string(&headers_file).expect("headers file");
    let headers = raw
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    CurlReply { headers, body: std::fs::read(&body_file).unwrap_or_default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_compressed_gets_gzip_of_listed_types_with_haproxys_headers() {
    let pod = scripted_pod(Default::default()).await;
    let (_dir, router) = router_with(pod, true, None).await;

    let reply = curl(&router, "/text", &["--compressed"]).await;
    assert_eq!(reply.header("content-encoding"), ["gzip"], "{:?}", reply.headers);
    assert_eq!(reply.header("vary"), ["Accept-Encoding"]);
    assert!(reply.header("content-length").is_empty(), "the pod's length no longer holds: {:?}", reply.headers);
    assert_eq!(reply.header("transfer-encoding"), ["chunked"]);
    assert_eq!(String::from_utf8_lossy(&reply.body), text_body(), "curl decodes the router's gzip");
    let seen = reply.header("x-seen-accept-encoding");
    assert!(seen.first().is_some_and(|v| v.contains("gzip")), "Accept-Encoding still reaches the pod: {seen:?}");

    // A strong ETag becomes weak on the compressed copy.
    let reply = curl(&router, "/etag", &["--compressed"]).await;
    assert_eq!(reply.header("content-encoding"), ["gzip"]);
    assert_eq!(reply.header("etag"), ["W/\"v7\""]);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_haproxy_leaves_alone_stays_as_the_pod_sent_it() {
    let pod = scripted_pod(Default::default()).await;
    let (_dir, router) = router_with(pod, true, None).await;
    let length = text_body().len().to_string();

    let plain = curl(&router, "/text", &[]).await;
    assert!(plain.header("content-encoding").is_empty(), "no Accept-Encoding, no gzip");
    assert_eq!(plain.header("content-length"), [length.as_str()]);
    assert_eq!(String::from_utf8_lossy(&plain.body), text_body());

    for path in ["/png", "/json", "/no-transform"] {
        let reply = curl(&router, path, &["-H", "Accept-Encoding: gzip"]).await;
        assert!(reply.header("content-encoding").is_empty(), "{path}: {:?}", reply.headers);
        assert!(reply.header("vary").is_empty(), "{path}");
        assert!(!reply.header("content-length").is_empty(), "{path}: {:?}", reply.headers);
    }
    let encoded = curl(&router, "/encoded", &["-H", "Accept-Encoding: gzip"]).await;
    assert_eq!(encoded.header("content-encoding"), ["br"], "already encoded by the pod");
    assert_eq!(encoded.body, text_body().as_bytes());

    let refused = curl(&router, "/text", &["-H", "Accept-Encoding: gzip;q=0, br"]).await;
    assert!(refused.header("content-encoding").is_empty(), "q=0 refuses gzip");

    let head = curl(&router, "/text", &["-I", "-H", "Accept-Encoding: gzip"]).await;
    assert!(head.header("content-encoding").is_empty(), "HEAD: {:?}", head.headers);
    assert_eq!(head.header("content-length"), [length.as_str()]);

    let not_found = curl(&router, "/missing", &["-H", "Accept-Encoding: gzip"]).await;
    assert!(not_found.header("content-encoding").is_empty(), "only 200-203 are compressed");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compression_is_off_by_default_and_the_mime_list_is_the_admins() {
    let pod = scripted_pod(Default::default()).await;
    let (_dir, router) = router_with(pod, false, None).await;
    let reply = curl(&router, "/text", &["--compressed"]).await;
    assert!(reply.header("content-encoding").is_empty(), "off unless ROUTER_ENABLE_COMPRESSION");
    router.shutdown().await;

    let (_dir, router) = router_with(pod, true, Some("application/json")).await;
    let json = curl(&router, "/json", &["--compressed"]).await;
    assert_eq!(json.header("content-encoding"), ["gzip"]);
    assert!(String::from_utf8_lossy(&json.body).starts_with("{\"text\":\"All work"));
    let text = curl(&router, "/text", &["--compressed"]).await;
    assert!(text.header("content-encoding").is_empty(), "text/plain is no longer listed");
    router.shutdown().await;
}

/// Reads one chunk of a chunked body: its data, or `None` at the last chunk.
async fn read_chunk(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Option<Vec<u8>> {
    async fn fill(stream: &mut TcpStream, pending: &mut Vec<u8>) {
        let mut buffer = [0u8; 4096];
        let n = stream.read(&mut buffer).await.expect("read");
        assert!(n > 0, "closed mid-body");
        pending.extend_from_slice(&buffer[..n]);
    }
    let line_end = loop {
        if let Some(i) = pending.windows(2).position(|w| w == b"\r\n") {
            break i;
        }
        fill(stream, pending).await;
    };
    let size = usize::from_str_radix(std::str::from_utf8(&pending[..line_end]).expect("size").trim(), 16).expect("hex");
    pending.drain(..line_end + 2);
    while pending.len() < size + 2 {
        fill(stream, pending).await;
    }
    let data: Vec<u8> = pending.drain(..size).collect();
    pending.drain(..2);
    (size > 0).then_some(data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_response_is_compressed_piece_by_piece() {
    let release = std::sync::Arc::new(Notify::new());
    let pod = scripted_pod(release.clone()).await;
    let (_dir, router) = router_with(pod, true, None).await;
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let request = format!("GET /stream HTTP/1.1\r\nHost: {HOST}\r\nAccept-Encoding: gzip\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut pending = Vec::new();
    let head_end = loop {
        if let Some(i) = pending.windows(4).position(|w: &[u8]| w == b"\r\n\r\n") {
            break i;
        }
        let mut buffer = [0u8; 4096];
        let n =
            tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer)).await.expect("head").expect("read");
        assert!(n > 0);
        pending.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8_lossy(&pending[..head_end]).to_ascii_lowercase();
    pending.drain(..head_end + 4);
    assert!(head.contains("content-encoding: gzip"), "{head}");

    // The first piece arrives, decodable, while the pod still holds the second.
    let mut all = Vec::new();
    let mut decoder = flate2::write::GzDecoder::new(Vec::new());
    for _ in 0..10 {
        if decoder.get_ref().len() >= "<p>first piece</p>".len() {
            break;
        }
        let data = tokio::time::timeout(Duration::from_secs(5), read_chunk(&mut stream, &mut pending))
            .await
            .expect("the first piece is flushed at once")
            .expect("data before the end");
        std::io::Write::write_all(&mut decoder, &data).expect("decode");
        std::io::Write::flush(&mut decoder).expect("decode");
        all.extend_from_slice(&data);
    }
    assert_eq!(String::from_utf8_lossy(decoder.get_ref()), "<p>first piece</p>");

    release.notify_one();
    while let Some(data) =
        tokio::time::timeout(Duration::from_secs(5), read_chunk(&mut stream, &mut pending)).await.expect("rest in time")
    {
        all.extend_from_slice(&data);
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(&all[..]).read_to_string(&mut text).expect("a complete gzip stream");
    assert_eq!(text, "<p>first piece</p><p>second piece</p>");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_clients_of_an_edge_route_get_gzip_too() {
    let pod = scripted_pod(Default::default()).await;
    let ca = TestCa::new("gz-ca");
    let leaf = ca.leaf(&[HOST]);
    let files = PemDir::new();
    files.write("ca.pem", &ca.cert_pem);
    let ca_file = files.path().join("ca.pem").to_string_lossy().into_owned();
    let dir = ManifestDir::new();
    let edge = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "gz", HOST, "gz")
    };
    dir.write("gz.yaml", &[service("ns", "gz", &[pod]), edge.yaml()].concat());
    let mut settings = Settings::for_loopback(dir.path());
    settings.http.enable_compression = true;
    let (router, https) = start_tls_router(settings).await;
    let reply = curl_https(https, HOST, "/text", &["--http2", "--compressed", "--cacert", &ca_file]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    assert_eq!(reply.http_version, "2");
    let headers = reply.headers.to_ascii_lowercase();
    assert!(headers.contains("content-encoding: gzip"), "{headers}");
    assert!(!headers.contains("content-length"), "{headers}");
    assert_eq!(reply.body, text_body(), "curl decodes the gzip of the HTTP/2 stream");
    router.shutdown().await;
}
