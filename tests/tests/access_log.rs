//! The access log on real listeners: HTTP requests as httplog lines over UDP (RFC 3164) with captured headers
//! and the unique id the pod also gets, a unix datagram socket (RFC 5424) with a custom ROUTER_SYSLOG_FORMAT and
//! passthrough tcplog lines, empty connections with and without dontlognull, OpenShift's default level sending
//! nothing, an unknown variable refused at start, lines dropped and counted (requests unharmed) when the listener
//! is gone, a client leaving mid-body (`CD`), and bare lines on the binary's stdout. `access_log_haproxy.rs`
//! compares the lines with Debian's HAProxy's.

mod access_log_common;

use std::time::Duration;

use access_log_common::{next_udp, next_unix, nothing_for, parse_httplog, parse_rfc3164, parse_rfc5424, parse_tcplog};
use router::access_log::Framing;
use router::config::Settings;
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::client::KeepAliveClient;
use router_tests::manifests::{route, service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::start_router_with;
use router_tests::tls_client::{client_config, tls_connect, Trust};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket, UnixDatagram};

/// local1 (17) * 8 + info (6)
const LOCAL1_INFO: u32 = 142;

fn web_routes(backend: &TestBackend) -> ManifestDir {
    let dir = ManifestDir::new();
    dir.write(
        "web.yaml",
        &[service("ns", "web", &[backend.addr]), route("ns", "web", "log.example.com", "/", "web")].concat(),
    );
    dir
}

fn logging_to(dir: &ManifestDir, address: &str) -> Settings {
    let mut settings = Settings::for_loopback(dir.path());
    settings.access_log.syslog_address = Some(address.to_string());
    settings.access_log.log_level = "info".into();
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_an_httplog_line_over_udp_with_captures_and_the_unique_id_the_pod_got() {
    let syslog = UdpSocket::bind("127.0.0.1:0").await.expect("syslog listener");
    let web = TestBackend::start("web").await;
    let dir = web_routes(&web);
    let mut settings = logging_to(&dir, &syslog.local_addr().expect("addr").to_string());
    settings.access_log.capture_http_request_headers = "Host:30,User-Agent:8".into();
    settings.access_log.capture_http_response_headers = "Content-Type:30".into();
    settings.access_log.unique_id_header_name = Some("X-Request-ID".into());
    settings.access_log.unique_id_format = Some(r"%{+X}o\ %ci:%cp_%fi:%fp_%Ts_%rt:%pid".into());
    let router = start_router_with(settings).await;

    let stream = TcpStream::connect(router.http_addr).await.expect("connect");
    let client_port = stream.local_addr().expect("client addr").port();
    drop(stream);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let reply = client.get_with("log.example.com", "/x?a=b", &[("user-agent", "curl/8.0.1")]).await;
    assert_eq!(reply.status, 200);
    let unique_id = reply.seen_header("x-request-id");
    assert_eq!(unique_id.len(), 1, "the pod gets one X-Request-ID");

    // The empty connection first (400 CR-- <BADREQ>, no captures), then the request.
    let empty = parse_rfc3164(&next_udp(&syslog).await);
    assert_eq!(empty.pri, LOCAL1_INFO);
    let empty = parse_httplog(&empty.message);
    assert_eq!(empty.client_port, client_port);
    assert_eq!(
        (empty.frontend.as_str(), empty.backend.as_str(), empty.server.as_str()),
        ("public", "public", "<NOSRV>")
    );
    assert_eq!((empty.status, empty.termination.as_str(), empty.request_line.as_str()), (400, "CR--", "<BADREQ>"));
    assert_eq!(&empty.timers[..4], &[-1, -1, -1, -1]);
    assert!(empty.captures.is_empty());

    let framed = parse_rfc3164(&next_udp(&syslog).await);
    assert_eq!(framed.pri, LOCAL1_INFO);
    assert_eq!(framed.tag, "router");
    assert_eq!(framed.pid, std::process::id());
    assert_eq!(framed.time.len(), 15, "{framed:?}");
    assert!(!framed.hostname.is_empty());
    let line = parse_httplog(&framed.message);
    assert_eq!(line.client_ip, "127.0.0.1");
    assert_eq!(line.frontend, "public");
    assert_eq!(line.backend, "be_http:ns:web");
    assert!(line.server.starts_with("pod:") && line.server.ends_with(&format!(":{}", web.addr)), "{line:?}");
    assert_eq!(line.status, 200);
    assert_eq!(line.termination, "--NI", "no sticky cookie came, one was inserted");
    assert_eq!((line.request_cookie.as_str(), line.response_cookie.as_str()), ("-", "-"));
    assert_eq!(line.captures, ["log.example.com|curl/8.0", "application/json"]);
    assert_eq!(line.request_line, "GET /x?a=b HTTP/1.1");
    let [tr, tw, tc, tr_pod, ta] = line.timers[..] else { panic!("five timers: {line:?}") };
    assert!(tr >= 0 && tw == 0 && tc == 0 && tr_pod >= 0 && ta >= tr_pod, "{line:?}");
    assert!(line.bytes > reply.body.len() as u64, "head and body: {line:?}");
    assert_eq!(line.counts[0], "1", "{line:?}");
    assert_eq!(line.queues, [0, 0]);
    // The id: client, frontend, accept time, request counter and pid in hexadecimal, as HAProxy writes it.
    let id = &unique_id[0];
    let client_port = format!("{:04X}", line.client_port);
    let frontend = format!("7F000001:{:04X}", router.http_addr.port());
    assert!(id.starts_with(&format!("7F000001:{client_port}_{frontend}_")), "{id}");
    assert!(id.ends_with(&format!(":{:04X}", std::process::id())), "{id}");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_gets_rfc5424_lines_in_the_custom_format_and_passthrough_tcplog_lines() {
    let socket_dir = tempfile::tempdir().expect("socket dir");
    let path = socket_dir.path().join("rsyslog.sock");
    let syslog = UnixDatagram::bind(&path).expect("unix syslog listener");
    let web = TestBackend::start("web").await;
    let ca = TestCa::new("pod-ca");
    let pod_leaf = ca.leaf(&["pass.example.com"]);
    let echo = TlsEcho::start(&pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let dir = web_routes(&web);
    let passthrough =
        RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "echo", "pass.example.com", "echo") };
    dir.write("pass.yaml", &[service("ns", "echo", &[echo.addr]), passthrough.yaml()].concat());
    let mut settings = logging_to(&dir, path.to_str().expect("path"));
    settings.access_log.syslog_framing = Framing::Rfc5424;
    settings.access_log.log_facility = "local3".into();
    // As the ingress operator writes httpLogFormat into ROUTER_SYSLOG_FORMAT: quoted for HAProxy's parser.
    settings.access_log.syslog_format = Some(r#""%ci %ft %b/%s %ST %HM %HU %{+Q}r %B""#.into());
    let router = start_router_with(settings).await;

    let mut client = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(client.get("log.example.com", "/p?q=1").await.status, 200);
    assert_eq!(client.get("nothing.example.com", "/").await.status, 503);
    let first = parse_rfc5424(&next_unix(&syslog).await);
    assert_eq!(first.pri, 19 * 8 + 6, "local3.info");
    assert!(first.time.ends_with("+00:00") && first.time.len() == 32, "{first:?}");
    assert_eq!(first.pid, std::process::id());
    let fields: Vec<&str> = first.message.splitn(6, ' ').collect();
    assert_eq!(fields[..5], ["127.0.0.1", "public", fields[2], "200", "GET"]);
    assert!(fields[2].starts_with("be_http:ns:web/pod:"), "{first:?}");
    assert!(fields[5].starts_with("/p?q=1 \"GET /p?q=1 HTTP/1.1\" "), "{first:?}");
    let second = parse_rfc5424(&next_unix(&syslog).await);
    assert!(
        second.message.starts_with("127.0.0.1 public openshift_default/<NOSRV> 503 GET / \"GET / HTTP/1.1\" "),
        "{second:?}"
    );

    let stream =
        tls_connect(router.https_addr, Some("pass.example.com"), client_config(Trust::Ca(&ca.cert_pem), &[], None))
            .await
            .expect("handshake with the pod through the router");
    let (mut reader, mut writer) = tokio::io::split(stream);
    writer.write_all(b"ping").await.expect("send");
    let mut echoed = [0u8; 4];
    reader.read_exact(&mut echoed).await.expect("echo");
    writer.shutdown().await.expect("close");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), reader.read_to_end(&mut rest)).await;
    drop((reader, writer));
    let tcp = parse_rfc5424(&next_unix(&syslog).await);
    let line = parse_tcplog(&tcp.message);
    assert_eq!((line.client_ip.as_str(), line.frontend.as_str()), ("127.0.0.1", "public_ssl"));
    assert_eq!(line.backend, "be_tcp:ns:echo");
    assert!(line.server.ends_with(&format!(":{}", echo.addr)), "{line:?}");
    assert_eq!(line.termination, "--");
    assert!(line.bytes > 4, "the pod's TLS records and the echo: {line:?}");
    let [tw, tc, tt] = line.timers[..] else { panic!("three timers: {line:?}") };
    assert!(tw == 0 && tc >= 0 && tt >= tc, "{line:?}");
    assert_eq!(line.counts.len(), 5);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dontlognull_skips_empty_connections_and_the_default_level_sends_nothing() {
    let syslog = UdpSocket::bind("127.0.0.1:0").await.expect("syslog listener");
    let address = syslog.local_addr().expect("addr").to_string();
    let web = TestBackend::start("web").await;
    let dir = web_routes(&web);

    let mut settings = logging_to(&dir, &address);
    settings.access_log.dont_log_null = true;
    let router = start_router_with(settings).await;
    drop(TcpStream::connect(router.http_addr).await.expect("connect"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(client.get("log.example.com", "/after-empty").await.status, 200);
    let line = parse_httplog(&parse_rfc3164(&next_udp(&syslog).await).message);
    assert_eq!(line.request_line, "GET /after-empty HTTP/1.1", "the empty connection was not logged");
    router.shutdown().await;

    // OpenShift's default level is warning: access lines (info) are never sent.
    let mut settings = logging_to(&dir, &address);
    settings.access_log.log_level = "warning".into();
    let router = start_router_with(settings).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(client.get("log.example.com", "/quiet").await.status, 200);
    assert_eq!(nothing_for(&syslog, Duration::from_millis(500)).await, None);
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_variable_is_refused_at_start() {
    let dir = ManifestDir::new();
    let mut settings = logging_to(&dir, "127.0.0.1:514");
    settings.access_log.syslog_format = Some("%ci %Tz".into());
    let error = router::server::start(settings).await.err().expect("refused");
    let message = error.to_string();
    assert!(message.contains("ROUTER_SYSLOG_FORMAT: unknown log-format variable %Tz at byte 4"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_to_a_gone_listener_are_dropped_and_counted_and_requests_go_on() {
    let socket_dir = tempfile::tempdir().expect("socket dir");
    let path = socket_dir.path().join("gone.sock");
    let syslog = UnixDatagram::bind(&path).expect("unix syslog listener");
    let web = TestBackend::start("web").await;
    let dir = web_routes(&web);
    let router = start_router_with(logging_to(&dir, path.to_str().expect("path"))).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    assert_eq!(client.get("log.example.com", "/one").await.status, 200);
    next_unix(&syslog).await;
    drop(syslog);
    std::fs::remove_file(&path).expect("remove the socket");
    for _ in 0..20 {
        assert_eq!(client.get("log.example.com", "/lost").await.status, 200);
    }
    let dropped = router_tests::eventually("dropped lines counted", Duration::from_secs(5), || {
        let text = router.metrics.render();
        let count = text
            .lines()
            .find_map(|l| l.strip_prefix("router_access_log_dropped_lines_total "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        async move { count.filter(|n| *n == 20) }
    })
    .await;
    assert_eq!(dropped, 20);
    router.shutdown().await;
}

/// A pod that answers every connection's first request with the head of a 100 kB body and 1000 bytes of it, then
/// holds the connection open.
async fn stalling_pod() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("pod listener");
    let addr = listener.local_addr().expect("pod addr");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        for _ in 0..4 {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                match stream.read(&mut byte).await {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n").await;
            let _ = stream.write_all(&[b'x'; 1000]).await;
            held.push(stream);
        }
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_body_is_logged_cd_with_the_bytes_it_got() {
    let syslog = UdpSocket::bind("127.0.0.1:0").await.expect("syslog listener");
    let (pod, pod_task) = stalling_pod().await;
    let dir = ManifestDir::new();
    dir.write("web.yaml", &[service("ns", "web", &[pod]), route("ns", "web", "log.example.com", "/", "web")].concat());
    let router = start_router_with(logging_to(&dir, &syslog.local_addr().expect("addr").to_string())).await;

    let mut stream = TcpStream::connect(router.http_addr).await.expect("connect");
    stream.write_all(b"GET /big HTTP/1.1\r\nHost: log.example.com\r\n\r\n").await.expect("send");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < 1000 {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("the first bytes within 5 s")
            .expect("read");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    drop(stream);
    let line = parse_httplog(&parse_rfc3164(&next_udp(&syslog).await).message);
    assert_eq!((line.status, &line.termination[..2]), (200, "CD"), "the client left during the data: {line:?}");
    assert!(line.bytes >= 1000 && line.bytes < 100_000, "the head and the 1000 body bytes sent: {line:?}");
    assert_eq!(line.request_line, "GET /big HTTP/1.1");
    router.shutdown().await;
    pod_task.abort();
}

/// The router process, stopped (by its PID) when dropped.
struct RouterProcess(std::process::Child);

impl Drop for RouterProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_gets_bare_lines_for_container_logs() {
    use std::io::BufRead;
    let web = TestBackend::start("web").await;
    let dir = web_routes(&web);
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let mut child = std::process::Command::new(router_tests::binaries::router_binary())
        .args(["--manifests", dir.path().to_str().expect("dir"), "--allow-loopback-endpoints"])
        .args([
            "--listen-addr",
            "127.0.0.1",
            "--http-port",
            &port.to_string(),
            "--https-port",
            "0",
            "--stats-port",
            "0",
        ])
        .env("ROUTER_SYSLOG_ADDRESS", "stdout")
        .env("ROUTER_SYSLOG_FRAMING", "raw")
        .env("ROUTER_LOG_LEVEL", "info")
        .env("RUST_LOG", "off")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the router");
    let stdout = child.stdout.take().expect("stdout");
    let _router = RouterProcess(child);
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    router_tests::eventually("the router serving the route", Duration::from_secs(20), || async move {
        let stream = TcpStream::connect(addr).await.ok()?;
        drop(stream);
        let mut client = KeepAliveClient::connect(addr).await;
        (client.get("log.example.com", "/ready").await.status == 200).then_some(())
    })
    .await;
    let mut client = KeepAliveClient::connect(addr).await;
    assert_eq!(client.get("log.example.com", "/out").await.status, 200);
    // Readiness probes and their empty connections came first; the request's line is among the next ones.
    let mut seen = Vec::new();
    for _ in 0..50 {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.recv())
            .await
            .expect("a line on stdout within 5 s")
            .expect("stdout open");
        let parsed = parse_httplog(&line);
        if parsed.request_line == "GET /out HTTP/1.1" {
            assert_eq!(
                (parsed.frontend.as_str(), parsed.backend.as_str(), parsed.status),
                ("public", "be_http:ns:web", 200)
            );
            assert!(!line.starts_with('<'), "raw: no syslog header: {line}");
            return;
        }
        seen.push(line);
    }
    panic!("no line for GET /out among {seen:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unique_id_reaches_the_pod_without_an_access_log() {
    let web = TestBackend::start("web").await;
    let dir = web_routes(&web);
    let mut settings = Settings::for_loopback(dir.path());
    settings.access_log.unique_id_header_name = Some("X-Unique-ID".into());
    settings.access_log.unique_id_format = Some("%ci_%rt".into());
    let router = start_router_with(settings).await;
    let mut client = KeepAliveClient::connect(router.http_addr).await;
    let first = client.get("log.example.com", "/a").await.seen_header("x-unique-id");
    let second = client.get("log.example.com", "/b").await.seen_header("x-unique-id");
    assert_eq!(first.len(), 1);
    assert_eq!(second.len(), 1);
    assert!(first[0].starts_with("127.0.0.1_") && second[0].starts_with("127.0.0.1_"), "{first:?} {second:?}");
    assert_ne!(first, second, "%rt counts requests");
    router.shutdown().await;
}
