//! The same requests through the router and through Debian's HAProxy 2.6, each logging to its own syslog
//! listener with the settings OpenShift's template writes (`log <addr> len 1024 local1 info`,
//! `log-send-hostname`, `option httplog`, `log global`, header captures and `unique-id-format` /
//! `unique-id-header` in `frontend public`, a sticky cookie inserted by the backend): an empty connection, a
//! request, a request no route takes (503 from openshift_default), a connection that sent garbage, one whose head
//! never ended (and HAProxy's 408 page it got), one that never sent a byte, one that left mid-head, a keep-alive
//! connection whose second head never ended, and a passthrough connection (`option tcplog` in `frontend public_ssl`); the lines agree field by
//! field where they must. Not compared, and why: the timers (two processes, two clocks), `%B` (the router's
//! response head is not the pod's byte for byte), `%bc`/`%sc` (HAProxy counts when the line is written, the
//! router when the response head came), the client port and the process id.

mod access_log_common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use access_log_common::{
    listening_on_loopback, next_udp, parse_httplog, parse_rfc3164, parse_tcplog, HttpLog, Syslog, TcpLog,
};
use router::config::Settings;
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::client::{KeepAliveClient, Reply};
use router_tests::manifests::{route, service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::tls_client::{client_config, tls_connect, Trust};
use router_tests::{eventually, start_router_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

const HAPROXY: &str = "/usr/sbin/haproxy";
const UNIQUE_ID_FORMAT: &str = r"%{+X}o\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid";

/// HAProxy, stopped (by its PID) when dropped.
struct Haproxy(Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("addr").port()
}

/// The parts of OpenShift's haproxy-config.template that decide the access log, for one HTTP route.
fn haproxy_config(syslog: SocketAddr, port: u16, pod: SocketAddr) -> String {
    format!(
        "global
  log {syslog} len 1024 local1 info
  log-send-hostname
defaults
  maxconn 50000
  option httplog
  log global
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  timeout http-request 1s
  timeout http-keep-alive 300s
frontend public
  bind 127.0.0.1:{port}
  mode http
  capture request header Host len 30
  capture request header User-Agent len 8
  capture response header Content-Type len 30
  unique-id-format {UNIQUE_ID_FORMAT}
  unique-id-header X-Request-ID
  http-request del-header Proxy
  use_backend be_http:ns:web if {{ hdr(host) -i log.example.com }}
  default_backend openshift_default
backend openshift_default
  mode http
backend be_http:ns:web
  mode http
  option redispatch
  option forwardfor
  balance random
  cookie 0123456789abcdef0123456789abcdef insert indirect nocache httponly
  server pod:web:web:http:{pod} {pod} cookie 0011223344556677 weight 1
"
    )
}

fn start_haproxy(dir: &Path, config: &str) -> Haproxy {
    assert!(Path::new(HAPROXY).exists(), "{HAPROXY} is missing: `cargo xtask setup` installs Debian's haproxy");
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config).expect("write haproxy.cfg");
    let check = Command::new(HAPROXY).arg("-c").arg("-f").arg(&path).output().expect("run haproxy -c");
    assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stderr));
    let child = Command::new(HAPROXY)
        .arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start haproxy");
    Haproxy(child)
}

async fn request(addr: SocketAddr) -> Reply {
    let mut client = KeepAliveClient::connect(addr).await;
    client.get_with("log.example.com", "/x?a=b", &[("user-agent", "curl/8.0.1")]).await
}

/// An empty connection (opened, closed without a byte), then one request on a new connection: their lines.
async fn exchange(addr: SocketAddr, syslog: &UdpSocket) -> (Syslog, Syslog, Reply) {
    drop(TcpStream::connect(addr).await.expect("connect"));
    let empty = parse_rfc3164(&next_udp(syslog).await);
    // HAProxy writes the empty connection's line before it releases that connection from its counts (a CI run
    // saw actconn/feconn 2/2 on the next line): the request waits until the first is surely gone.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reply = request(addr).await;
    let served = parse_rfc3164(&next_udp(syslog).await);
    (empty, served, reply)
}

/// Sends `bytes` on a new connection and reads until the proxy closes it (at most 5 s): its line and the
/// answer's status code and body.
async fn raw(addr: SocketAddr, bytes: &[u8], syslog: &UdpSocket) -> (Syslog, (String, String)) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("send");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let code = head.split(' ').nth(1).unwrap_or("").to_string();
    (parse_rfc3164(&next_udp(syslog).await), (code, body.to_string()))
}

/// Sends `bytes` on a new connection and closes it: its line.
async fn left(addr: SocketAddr, bytes: &[u8], syslog: &UdpSocket) -> Syslog {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("send");
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(stream);
    parse_rfc3164(&next_udp(syslog).await)
}

fn assert_same_fields(what: &str, ours: &HttpLog, haproxy: &HttpLog) {
    let pick = |l: &HttpLog| {
        (
            l.client_ip.clone(),
            l.frontend.clone(),
            l.backend.clone(),
            l.status,
            l.request_cookie.clone(),
            l.response_cookie.clone(),
            l.termination.clone(),
            l.counts[..2].to_vec(),
            l.counts[4].clone(),
            l.queues.clone(),
            l.captures.clone(),
            l.request_line.clone(),
        )
    };
    eprintln!("{what}:\n  router  {ours:?}\n  haproxy {haproxy:?}");
    assert_eq!(pick(ours), pick(haproxy), "{what}");
    let suffix = |l: &HttpLog| l.server.rsplitn(3, ':').take(2).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(suffix(ours), suffix(haproxy), "{what}: the pod's address ends the server name");
    assert_eq!(ours.server.starts_with("pod:"), haproxy.server.starts_with("pod:"), "{what}");
    assert_eq!(ours.timers.len(), haproxy.timers.len(), "{what}");
    let reached = |l: &HttpLog| l.timers.iter().map(|t| *t >= 0).collect::<Vec<_>>();
    assert_eq!(reached(ours), reached(haproxy), "{what}: the same phases happened (-1 where none did)");
    assert_eq!(ours.date.len(), haproxy.date.len(), "{what}: dd/Mmm/yyyy:hh:mm:ss.mmm");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_and_haproxy_log_the_same_request_alike() {
    let web = TestBackend::start("web").await;
    let dir = ManifestDir::new();
    dir.write(
        "web.yaml",
        &[service("ns", "web", &[web.addr]), route("ns", "web", "log.example.com", "/", "web")].concat(),
    );

    let router_syslog = UdpSocket::bind("127.0.0.1:0").await.expect("router syslog");
    let mut settings = Settings::for_loopback(dir.path());
    settings.access_log.syslog_address = Some(router_syslog.local_addr().expect("addr").to_string());
    settings.access_log.log_level = "info".into();
    settings.access_log.syslog_tag = "haproxy".into();
    // `timeout http-request 1s` on both.
    settings.http_request_timeout = Duration::from_secs(1);
    settings.access_log.capture_http_request_headers = "Host:30,User-Agent:8".into();
    settings.access_log.capture_http_response_headers = "Content-Type:30".into();
    settings.access_log.unique_id_header_name = Some("X-Request-ID".into());
    settings.access_log.unique_id_format = Some(UNIQUE_ID_FORMAT.into());
    let router = start_router_with(settings).await;

    let haproxy_syslog = UdpSocket::bind("127.0.0.1:0").await.expect("haproxy syslog");
    let haproxy_port = free_port();
    let haproxy_addr: SocketAddr = ([127, 0, 0, 1], haproxy_port).into();
    let haproxy_dir = tempfile::tempdir().expect("haproxy dir");
    let config = haproxy_config(haproxy_syslog.local_addr().expect("addr"), haproxy_port, web.addr);
    let _haproxy = start_haproxy(haproxy_dir.path(), &config);
    eventually("haproxy listening", Duration::from_secs(10), || async move {
        listening_on_loopback(haproxy_port).then_some(())
    })
    .await;

    let (our_empty, our_line, our_reply) = exchange(router.http_addr, &router_syslog).await;
    let (their_empty, their_line, their_reply) = exchange(haproxy_addr, &haproxy_syslog).await;
    assert_eq!((our_reply.status.as_u16(), their_reply.status.as_u16()), (200, 200));

    for (ours, theirs) in [(&our_empty, &their_empty), (&our_line, &their_line)] {
        assert_eq!(ours.pri, theirs.pri, "PRI (local1.info)");
        assert_eq!(ours.hostname, theirs.hostname, "log-send-hostname");
        assert_eq!(ours.tag, theirs.tag);
        assert_eq!(ours.time.len(), theirs.time.len(), "Mmm dd hh:mm:ss");
    }
    assert_same_fields("empty connection", &parse_httplog(&our_empty.message), &parse_httplog(&their_empty.message));
    assert_same_fields("request", &parse_httplog(&our_line.message), &parse_httplog(&their_line.message));
    // No route: 503 from the default backend, which has no server.
    let ours = KeepAliveClient::connect(router.http_addr).await.get("nowhere.example.com", "/").await;
    let theirs = KeepAliveClient::connect(haproxy_addr).await.get("nowhere.example.com", "/").await;
    assert_eq!((ours.status.as_u16(), theirs.status.as_u16()), (503, 503));
    let ours = parse_httplog(&parse_rfc3164(&next_udp(&router_syslog).await).message);
    let theirs = parse_httplog(&parse_rfc3164(&next_udp(&haproxy_syslog).await).message);
    assert_same_fields("no route", &ours, &theirs);
    // The no-route clients closed as their statements ended; the next lines count the open connections
    // (actconn/feconn), so let each proxy handle those closes before the next connection arrives: the router's
    // worker threads may otherwise see the new connection first and count 2.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Not a request (400 PR--), a head that never ends and a connection that never sends a byte (408 cR--
    // after the request timeout, with HAProxy's page).
    let cases = [
        ("garbage", &b"GARBAGE\r\n\r\n"[..]),
        ("unfinished head", b"GET / HTTP/1.1\r\nHost: a\r\n"),
        ("silent connection", b""),
    ];
    for (what, bytes) in cases {
        let (ours, our_answer) = raw(router.http_addr, bytes, &router_syslog).await;
        let (theirs, their_answer) = raw(haproxy_addr, bytes, &haproxy_syslog).await;
        assert_same_fields(what, &parse_httplog(&ours.message), &parse_httplog(&theirs.message));
        if what != "garbage" {
            assert_eq!(our_answer, their_answer, "{what}: the 408 page");
        }
    }
    // A client that leaves mid-head (400 CR--).
    let bytes = b"GET / HTTP/1.1\r\nHost: a\r\n";
    let ours = parse_httplog(&left(router.http_addr, bytes, &router_syslog).await.message);
    let theirs = parse_httplog(&left(haproxy_addr, bytes, &haproxy_syslog).await.message);
    assert_same_fields("closed mid-head", &ours, &theirs);
    // A keep-alive connection whose second head never ends: the first request's line, then 408 cR--.
    let mut lines = Vec::new();
    for (addr, syslog) in [(router.http_addr, &router_syslog), (haproxy_addr, &haproxy_syslog)] {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await.expect("first request");
        tokio::time::sleep(Duration::from_millis(300)).await;
        stream.write_all(b"GET /second HTTP/1.1\r\n").await.expect("part of a second");
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(answer.contains("HTTP/1.1 408 "), "{answer}");
        let first = parse_httplog(&parse_rfc3164(&next_udp(syslog).await).message);
        let second = parse_httplog(&parse_rfc3164(&next_udp(syslog).await).message);
        lines.push((first, second));
    }
    assert_same_fields("first request on the connection", &lines[0].0, &lines[1].0);
    assert_same_fields("second head never ended", &lines[0].1, &lines[1].1);

    // The unique id the pod got: the same shape, the client and frontend in hexadecimal.
    let ids = [our_reply.seen_header("x-request-id"), their_reply.seen_header("x-request-id")];
    let shape = |id: &str| id.split(['_', ':']).map(str::len).collect::<Vec<_>>();
    assert_eq!(ids[0].len(), 1);
    assert_eq!(ids[1].len(), 1);
    assert_eq!(shape(&ids[0][0]), shape(&ids[1][0]), "router {:?} haproxy {:?}", ids[0], ids[1]);
    assert!(ids[0][0].starts_with("7F000001:") && ids[1][0].starts_with("7F000001:"));
    router.shutdown().await;
}

/// OpenShift's template for one passthrough route: `option tcplog` in `frontend public_ssl`, the SNI inspected.
fn haproxy_tcp_config(syslog: SocketAddr, port: u16, pod: SocketAddr) -> String {
    format!(
        "global
  log {syslog} len 1024 local1 info
  log-send-hostname
defaults
  option httplog
  log global
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend public_ssl
  option tcplog
  bind 127.0.0.1:{port}
  mode tcp
  tcp-request inspect-delay 5s
  tcp-request content accept if {{ req_ssl_hello_type 1 }}
  default_backend be_tcp:ns:echo
backend be_tcp:ns:echo
  mode tcp
  balance source
  server pod:echo:echo:https:{pod} {pod} weight 1
"
    )
}

/// A TLS connection through `addr` to the echo pod: a ping echoed, then both sides closed; the line it left.
async fn passthrough_exchange(addr: SocketAddr, ca: &TestCa, syslog: &UdpSocket) -> TcpLog {
    let config = client_config(Trust::Ca(&ca.cert_pem), &[], None);
    let stream = tls_connect(addr, Some("pass.example.com"), config).await.expect("handshake with the pod");
    let (mut reader, mut writer) = tokio::io::split(stream);
    writer.write_all(b"ping").await.expect("send");
    let mut echoed = [0u8; 4];
    reader.read_exact(&mut echoed).await.expect("echo");
    writer.shutdown().await.expect("close");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), reader.read_to_end(&mut rest)).await;
    drop((reader, writer));
    let framed = parse_rfc3164(&next_udp(syslog).await);
    assert_eq!(framed.pri, 142);
    parse_tcplog(&framed.message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_and_haproxy_log_the_same_passthrough_connection_alike() {
    let ca = TestCa::new("pod-ca");
    let pod_leaf = ca.leaf(&["pass.example.com"]);
    let echo = TlsEcho::start(&pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let dir = ManifestDir::new();
    let passthrough =
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "echo", "pass.example.com", "echo") };
    dir.write("pass.yaml", &[service("ns", "echo", &[echo.addr]), passthrough.yaml()].concat());
    let router_syslog = UdpSocket::bind("127.0.0.1:0").await.expect("router syslog");
    let mut settings = Settings::for_loopback(dir.path());
    settings.access_log.syslog_address = Some(router_syslog.local_addr().expect("addr").to_string());
    settings.access_log.log_level = "info".into();
    let router = start_router_with(settings).await;

    let haproxy_syslog = UdpSocket::bind("127.0.0.1:0").await.expect("haproxy syslog");
    let haproxy_port = free_port();
    let haproxy_addr: SocketAddr = ([127, 0, 0, 1], haproxy_port).into();
    let haproxy_dir = tempfile::tempdir().expect("haproxy dir");
    let config = haproxy_tcp_config(haproxy_syslog.local_addr().expect("addr"), haproxy_port, echo.addr);
    let _haproxy = start_haproxy(haproxy_dir.path(), &config);
    eventually("haproxy listening", Duration::from_secs(10), || async move {
        TcpStream::connect(haproxy_addr).await.ok().map(drop)
    })
    .await;
    // The probe's own line (an empty connection in tcp mode).
    next_udp(&haproxy_syslog).await;

    let ours = passthrough_exchange(router.https_addr, &ca, &router_syslog).await;
    let theirs = passthrough_exchange(haproxy_addr, &ca, &haproxy_syslog).await;
    eprintln!("passthrough:\n  router  {ours:?}\n  haproxy {theirs:?}");
    let pick = |l: &TcpLog| {
        (l.client_ip.clone(), l.frontend.clone(), l.backend.clone(), l.termination.clone(), l.counts[..2].to_vec())
    };
    assert_eq!(pick(&ours), pick(&theirs));
    let address = |l: &TcpLog| l.server.rsplitn(3, ':').take(2).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(address(&ours), address(&theirs), "the pod's address ends the server name");
    let reached = |l: &TcpLog| l.timers.iter().map(|t| *t >= 0).collect::<Vec<_>>();
    assert_eq!(reached(&ours), reached(&theirs));
    assert!(ours.bytes > 4 && theirs.bytes > 4, "the pod's TLS records reached the client through both");
    router.shutdown().await;
}
