//! Request head limits as OpenShift's defaults: a request line plus header section longer than
//! ROUTER_BUF_SIZE (32768) minus ROUTER_MAX_REWRITE_SIZE (8192) is refused with 431 and the connection closed
//! before any pod sees it; both settings move the limit; HTTP/2 header lists on :443 get the same limit.

use std::net::SocketAddr;
use std::time::Duration;

use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::manifests::{route, service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{PemDir, TestCa};
use router_tests::read_until_closed;
use router_tests::recording_pod::RecordingPod;
use router_tests::{start_router_with, start_tls_router};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const HOST: &str = "heads.example.com";

async fn one_route(pod: SocketAddr, settings: impl FnOnce(&mut Settings)) -> (ManifestDir, RunningRouter) {
    let dir = ManifestDir::new();
    dir.write("app.yaml", &[service("ns", "app", &[pod]), route("ns", "app", HOST, "/", "app")].concat());
    let mut values = Settings::for_loopback(dir.path());
    settings(&mut values);
    let router = start_router_with(values).await;
    (dir, router)
}

/// A GET whose request line plus header section (blank line included) is exactly `total` bytes: the Host
/// header, `Connection: close`, and one `x-pad` header of the length that makes up the rest.
fn head_of(total: usize) -> String {
    let start = format!("GET / HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\nx-pad: ");
    let pad = total - start.len() - "\r\n\r\n".len();
    let head = format!("{start}{}\r\n\r\n", "v".repeat(pad));
    assert_eq!(head.len(), total);
    head
}

/// Sends `head` on a new connection; returns the status the router answered (0 for none) and whether the
/// connection was closed.
async fn send(router: &RunningRouter, head: &str) -> (u16, bool) {
    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    // The router may refuse and close before the whole head is written.
    let _ = stream.write_all(head.as_bytes()).await;
    let (answer, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    let answer = String::from_utf8_lossy(&answer);
    (answer.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0), closed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_68k_header_section_is_refused_before_any_pod_sees_it() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr, |_| {}).await;
    let (status, closed) = send(&router, &head_of(68 * 1024)).await;
    assert_eq!(status, 431);
    assert!(closed, "the connection is closed after the refusal");
    assert_eq!(pod.connections(), 0, "nothing reached the pod");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_is_buf_size_minus_max_rewrite_size() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr, |_| {}).await;
    assert_eq!(send(&router, &head_of(24576)).await.0, 200, "32768 - 8192 bytes fit");
    assert_eq!(pod.recorded().len(), 1);
    assert_eq!(send(&router, &head_of(24577)).await, (431, true), "one byte more does not");
    assert_eq!(pod.recorded().iter().map(|r| r.answered).sum::<usize>(), 1, "the refused head reached no pod");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_settings_move_the_limit() {
    let pod = RecordingPod::start().await;
    let (_dir, router) = one_route(pod.addr, |settings| {
        settings.limits.buf_size = 65536;
        settings.limits.max_rewrite_size = 16384;
    })
    .await;
    assert_eq!(send(&router, &head_of(49152)).await.0, 200);
    assert_eq!(send(&router, &head_of(49153)).await, (431, true));
    router.shutdown().await;

    let (_dir, router) = one_route(pod.addr, |settings| settings.limits.max_rewrite_size = 1024).await;
    assert_eq!(send(&router, &head_of(31744)).await.0, 200);
    assert_eq!(send(&router, &head_of(31745)).await, (431, true));
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_header_lists_get_the_same_limit() {
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("limits-ca");
    let leaf = ca.leaf(&["h2.example.com"]);
    let files = PemDir::new();
    files.write("ca.pem", &ca.cert_pem);
    let cacert = files.path().join("ca.pem").to_string_lossy().into_owned();
    let dir = ManifestDir::new();
    let own = RouteSpec {
        tls: Some(RouteTls::edge().with_certificate(&leaf.cert_pem, &leaf.key_pem)),
        ..RouteSpec::new("ns", "own", "h2.example.com", "web")
    };
    dir.write("all.yaml", &[service("ns", "web", &[web.addr]), own.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    // 20000 bytes: over hyper's own HTTP/2 default (16 KiB), within 32768 - 8192.
    let fits = format!("x-big: {}", "v".repeat(20000));
    let reply = curl_https(https, "h2.example.com", "/", &["--http2", "--cacert", &cacert, "-H", &fits]).await;
    assert_eq!((reply.http_version.as_str(), reply.status), ("2", 200), "{}", reply.stderr);
    let too_big = format!("x-big: {}", "v".repeat(26000));
    let reply = curl_https(https, "h2.example.com", "/", &["--http2", "--cacert", &cacert, "-H", &too_big]).await;
    assert_eq!(reply.status, 431, "{}", reply.stderr);
    assert!(!reply.headers.contains("x-backend"), "no pod answered: {}", reply.headers);
    router.shutdown().await;
}
