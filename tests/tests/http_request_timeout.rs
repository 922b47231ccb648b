//! Connections that never complete a request head, as HAProxy's `timeout http-request` treats them
//! (ROUTER_SLOWLORIS_TIMEOUT): a connection still waiting for its head when the timer passes gets HAProxy's 408
//! page, on :80 and on a terminated :443 connection, and a `<BADREQ>` line (408 `cR--`); one that closes mid-head
//! gets a 400 `CR--` line and no answer; a keep-alive connection idle between requests closes silently and
//! unlogged, while a later head left unfinished is answered and logged like a first one. dontlognull drops only
//! the lines of connections that sent nothing; http-ignore-probes also sends them no 408. Each `<BADREQ>` counts
//! as a 4xx response of its frontend (`haproxy_frontend_http_responses_total`), except the ignored probes.
//! `access_log_haproxy.rs` compares these lines with Debian's HAProxy's.

mod access_log_common;

use std::net::SocketAddr;
use std::time::Duration;

use access_log_common::{next_udp, nothing_for, parse_httplog, parse_rfc3164, HttpLog};
use router::config::Settings;
use router::server::RunningRouter;
use router_tests::backend::TestBackend;
use router_tests::client::get;
use router_tests::manifests::{route, service, ManifestDir};
use router_tests::metrics_text::value_of;
use router_tests::tls_client::{client_config, tls_connect, Trust};
use router_tests::{read_until_closed, start_router_with};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UdpSocket};

const HEAD_TIMEOUT: Duration = Duration::from_millis(400);
/// Long enough for any timer above to pass and the close to arrive.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
const PAGE: &str = "<h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n";
const PART: &[u8] = b"GET / HTTP/1.1\r\nHost: t.test\r\n";

struct Logged {
    router: RunningRouter,
    syslog: UdpSocket,
    _web: TestBackend,
    _dir: ManifestDir,
}

impl Logged {
    async fn start(adjust: impl FnOnce(&mut Settings)) -> Logged {
        let syslog = UdpSocket::bind("127.0.0.1:0").await.expect("syslog listener");
        let web = TestBackend::start("web").await;
        let dir = ManifestDir::new();
        dir.write("web.yaml", &[service("ns", "web", &[web.addr]), route("ns", "web", "t.test", "/", "web")].concat());
        let mut settings = Settings::for_loopback(dir.path());
        settings.access_log.syslog_address = Some(syslog.local_addr().expect("addr").to_string());
        settings.access_log.log_level = "info".into();
        settings.http_request_timeout = HEAD_TIMEOUT;
        settings.routing.keep_alive_timeout = Duration::from_millis(800);
        adjust(&mut settings);
        let router = start_router_with(settings).await;
        Logged { router, syslog, _web: web, _dir: dir }
    }

    async fn line(&self) -> HttpLog {
        parse_httplog(&parse_rfc3164(&next_udp(&self.syslog).await).message)
    }

    async fn no_line(&self) {
        assert_eq!(nothing_for(&self.syslog, Duration::from_millis(500)).await, None, "no line");
    }

    /// `haproxy_frontend_http_responses_total` of `frontend` for `code` (HAProxy counts each `<BADREQ>`).
    async fn responses(&self, frontend: &str, code: &str) -> f64 {
        let page = get(self.router.stats_addr, "admin", "/metrics").await.body;
        value_of(&page, &format!("haproxy_frontend_http_responses_total{{frontend=\"{frontend}\",code=\"{code}\"}}"))
    }
}

/// Sends `bytes` on a new connection and waits for the router to close it: what came back.
async fn left_waiting(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("send");
    let (answer, closed) = read_until_closed(&mut stream, CLOSE_WAIT).await;
    assert!(closed, "closed after the http-request timeout");
    String::from_utf8(answer).expect("text")
}

/// Sends `bytes` on a new connection, then closes it.
async fn closed_by_client(addr: SocketAddr, bytes: &[u8]) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("send");
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(stream);
}

fn assert_408(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 408 Request Time-out\r\n"), "HAProxy's status line: {answer:?}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer:?}");
    assert!(answer.ends_with(&format!("<html><body>{PAGE}</body></html>\n")), "{answer:?}");
}

fn assert_badreq(line: &HttpLog, status: i32, termination: &str) {
    assert_eq!((line.status, line.termination.as_str(), line.request_line.as_str()), (status, termination, "<BADREQ>"));
    let frontend = line.frontend.trim_end_matches('~');
    assert_eq!((line.backend.as_str(), line.server.as_str()), (frontend, "<NOSRV>"), "{line:?}");
    assert_eq!(&line.timers[..4], &[-1, -1, -1, -1], "{line:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfinished_head_gets_haproxys_408_and_a_badreq_line() {
    let logged = Logged::start(|_| {}).await;
    let http = logged.router.http_addr;

    // Nothing sent, then a part of a head: 408 after the timer, logged 408 cR--.
    for sent in [&b""[..], PART] {
        let started = tokio::time::Instant::now();
        assert_408(&left_waiting(http, sent).await);
        assert!(started.elapsed() >= HEAD_TIMEOUT - Duration::from_millis(20), "{:?}", started.elapsed());
        let line = logged.line().await;
        assert_badreq(&line, 408, "cR--");
        assert!(line.timers[4] >= HEAD_TIMEOUT.as_millis() as i64 - 20, "Tt: {line:?}");
    }

    // A client that closes mid-head: no answer to give, logged 400 CR--.
    closed_by_client(http, PART).await;
    assert_badreq(&logged.line().await, 400, "CR--");

    // Idle between requests past the keep-alive timer: closed without a byte and without a line.
    let mut stream = TcpStream::connect(http).await.expect("connect");
    stream.write_all(b"GET /first HTTP/1.1\r\nHost: t.test\r\n\r\n").await.expect("send");
    let (answer, closed) = read_until_closed(&mut stream, CLOSE_WAIT).await;
    assert!(closed, "closed after the keep-alive timeout");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 ") && !answer.contains(" 408 "), "{answer}");
    assert_eq!(logged.line().await.request_line, "GET /first HTTP/1.1");
    logged.no_line().await;

    // A later head left unfinished is answered and logged as a first one would be.
    let mut stream = TcpStream::connect(http).await.expect("connect");
    stream.write_all(b"GET /a HTTP/1.1\r\nHost: t.test\r\n\r\n").await.expect("send");
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(b"GET /b HTTP/1.1\r\n").await.expect("send a part");
    let (answer, closed) = read_until_closed(&mut stream, CLOSE_WAIT).await;
    assert!(closed);
    let answer = String::from_utf8(answer).expect("text");
    let (_, after_first) = answer.split_once("HTTP/1.1 408 ").expect("a 408 after the first answer");
    assert_408(&format!("HTTP/1.1 408 {after_first}"));
    assert_eq!(logged.line().await.request_line, "GET /a HTTP/1.1");
    let line = logged.line().await;
    assert_badreq(&line, 408, "cR--");
    assert!(line.timers[4] < 2 * HEAD_TIMEOUT.as_millis() as i64, "Tt counts from the head's first byte: {line:?}");

    // On a terminated :443 connection the 408 goes over TLS.
    let config = client_config(Trust::Anything, &[], None);
    let mut tls = tls_connect(logged.router.https_addr, Some("t.test"), config).await.expect("handshake");
    let (answer, closed) = read_until_closed(&mut tls, CLOSE_WAIT).await;
    assert!(closed);
    assert_408(&String::from_utf8(answer).expect("text"));
    let line = logged.line().await;
    assert_eq!(line.frontend, "fe_sni~");
    assert_badreq(&line, 408, "cR--");

    // Each of those heads is a 4xx of its frontend, as HAProxy counts them; the requests served are 2xx.
    assert_eq!(logged.responses("public", "4xx").await, 4.0);
    assert_eq!(logged.responses("public", "2xx").await, 2.0);
    assert_eq!(logged.responses("fe_sni", "4xx").await, 1.0);
    logged.router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dontlognull_drops_the_line_and_ignore_probes_the_408_of_a_silent_connection() {
    // dontlognull: the silent connection still gets its 408, only its line goes.
    let logged = Logged::start(|settings| settings.access_log.dont_log_null = true).await;
    let http = logged.router.http_addr;
    assert_408(&left_waiting(http, b"").await);
    closed_by_client(http, b"").await;
    logged.no_line().await;
    // What sent a byte is logged as ever.
    closed_by_client(http, PART).await;
    assert_badreq(&logged.line().await, 400, "CR--");
    assert_eq!(logged.responses("public", "4xx").await, 3.0, "counted, logged or not");
    logged.router.shutdown().await;

    // http-ignore-probes: a silent connection is closed at the timer with no answer and no line.
    let logged = Logged::start(|settings| settings.access_log.http_ignore_probes = true).await;
    let http = logged.router.http_addr;
    assert_eq!(left_waiting(http, b"").await, "");
    closed_by_client(http, b"").await;
    logged.no_line().await;
    assert_408(&left_waiting(http, PART).await);
    assert_badreq(&logged.line().await, 408, "cR--");
    assert_eq!(logged.responses("public", "4xx").await, 1.0, "the silent ones are not counted either");
    logged.router.shutdown().await;
}
