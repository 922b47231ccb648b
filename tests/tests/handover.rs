//! Router upgrades without a gap (ROUTER_HANDOVER_SOCKET), as real processes: router A serves; router B starts
//! on the same ports and socket path, takes A's listeners, and A drains and exits; then C takes over from B the
//! same way. Through both hand-overs a fixed-rate load runs on loopback: plain HTTP/1.1 keep-alive and
//! connection-per-request clients, HTTP/1.1 and HTTP/2 over edge TLS, a WebSocket echoing all along, and a
//! passthrough TLS stream carrying 16 MiB both ways. Every request must succeed (a `Connection: close` on a
//! response is the server ending a keep-alive connection cleanly, counted, not a failure), and every long
//! stream must arrive intact.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use router_tests::backend::{TestBackend, TlsEcho};
use router_tests::binaries::router_binary;
use router_tests::load::{self, Connector, Io, Load, Shape, Tally};
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::TestCa;
use router_tests::tls_client::{client_config, tls_connect, Trust};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PLAIN: &str = "plain.example.com";
const EDGE: &str = "edge.example.com";
const PASS: &str = "pass.example.com";
/// One request per client per 5 ms.
const PACE: Duration = Duration::from_millis(5);
/// What each load client may do at most.
const REQUESTS_PER_CLIENT: u64 = 20_000;
const LOAD_LIMIT: Duration = Duration::from_secs(90);
/// The passthrough stream: this many bytes each way, paced so that it spans the first hand-over.
const STREAM_BYTES: usize = 16 << 20;
const STREAM_CHUNK: usize = 64 << 10;
const STREAM_CHUNK_PAUSE: Duration = Duration::from_millis(10);

/// A router process on fixed loopback ports, logging to a file.
struct RouterProcess {
    child: Child,
    log: PathBuf,
}

impl RouterProcess {
    fn start(ports: &Ports, manifests: &Path, socket: &Path, log: PathBuf) -> RouterProcess {
        let out = std::fs::File::create(&log).expect("router log");
        let child = Command::new(router_binary())
            .args(["--manifests", &manifests.display().to_string(), "--allow-loopback-endpoints"])
            .args(["--listen-addr", "127.0.0.1"])
            .args(["--http-port", &ports.http.to_string(), "--https-port", &ports.https.to_string()])
            .args(["--stats-port", &ports.stats.to_string()])
            .args(["--handover-socket", &socket.display().to_string()])
            .env("RUST_LOG", "info")
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .expect("start the router");
        RouterProcess { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn sigterm(&self) {
        let status = Command::new("kill").arg(self.child.id().to_string()).status().expect("run kill");
        assert!(status.success(), "kill -TERM {}", self.child.id());
    }

    /// Waits for the process to exit, at most `limit`.
    fn exits_within(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the router") {
                return status;
            }
            assert!(Instant::now() < deadline, "the router did not exit within {limit:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the log says `what`, at most 30 s.
    async fn logged(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.log().contains(what) {
            assert!(Instant::now() < deadline, "the router never logged {what:?}:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for RouterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A router that handed over: it drains, then stays (a supervisor would restart a process that exits) until
/// SIGTERM, on which it exits at once. Returns its log.
async fn retire(mut old: RouterProcess) -> String {
    let deadline = Instant::now() + Duration::from_secs(40);
    while !old.log().contains("handed over and drained") {
        assert!(Instant::now() < deadline, "no end of the drain within 40 s:\n{}", old.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(old.child.try_wait().expect("poll").is_none(), "it waits for SIGTERM:\n{}", old.log());
    old.sigterm();
    let status = tokio::task::spawn_blocking(move || (old.exits_within(Duration::from_secs(5)), old.log()));
    let (status, log) = status.await.expect("the old router");
    assert!(status.success(), "the old router exited with {status}:\n{log}");
    log
}

struct Ports {
    http: u16,
    https: u16,
    stats: u16,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port()
}

fn at(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Whether the plain route answers 200 on `addr`.
async fn serves(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr).await else { return false };
    let request = format!("GET /ready HTTP/1.1\r\nHost: {PLAIN}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    answer.starts_with(b"HTTP/1.1 200 ")
}

/// A TLS connector for the edge route, offering `alpn`.
fn edge_tls(addr: SocketAddr, alpn: &'static [&'static str]) -> Connector {
    let config = client_config(Trust::Anything, alpn, None);
    Arc::new(move || {
        let config = config.clone();
        Box::pin(async move { Ok(Box::new(tls_connect(addr, Some(EDGE), config).await?) as Box<dyn Io>) })
    })
}

type H2Sender = h2::client::SendRequest<Bytes>;

/// An HTTP/2 connection to the edge route.
async fn h2_connect(connect: &Connector) -> Result<H2Sender, String> {
    let io = connect().await.map_err(|e| format!("connect: {e}"))?;
    let (sender, connection) = h2::client::handshake(io).await.map_err(|e| format!("h2 handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Why one HTTP/2 request did not give the right answer.
enum H2Failure {
    /// It never went on the wire: the connection had received GOAWAY (RFC 9113 6.8: safe to send again). The h2
    /// crate says so at once, from `send_request` itself; any later error is of a stream the router had.
    NotSent,
    Failed(String),
}

async fn h2_request(sender: &mut H2Sender) -> Result<(), H2Failure> {
    let mut ready = sender.clone().ready().await.map_err(|_| H2Failure::NotSent)?;
    let request = http::Request::get(format!("https://{EDGE}/h2")).body(()).expect("request");
    let (response, _) = ready.send_request(request, true).map_err(|_| H2Failure::NotSent)?;
    let response = response.await.map_err(|e| H2Failure::Failed(format!("h2 request: {e:?}")))?;
    let backend = response.headers().get("x-backend").map(|v| v.to_str().unwrap_or("").to_owned());
    let status = response.status();
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| H2Failure::Failed(format!("h2 body: {e}")))?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    match (status.as_u16(), backend.as_deref()) {
        (200, Some("web")) => Ok(()),
        other => Err(H2Failure::Failed(format!("h2 answer {other:?}"))),
    }
}

/// HTTP/2 requests over edge TLS, one per `PACE`, until `stop`, on one connection at a time. A connection the
/// router ends with GOAWAY is replaced, and a request it never sent on it goes on the next one, as browsers
/// and hyper's pooled client do; any other failure is counted.
async fn h2_load(addr: SocketAddr, tally: Arc<Tally>, stop: Arc<AtomicBool>) {
    let connect = edge_tls(addr, &["h2"]);
    let deadline = Instant::now() + LOAD_LIMIT;
    let mut pace = tokio::time::interval(PACE);
    let mut sender: Option<H2Sender> = None;
    for _ in 0..REQUESTS_PER_CLIENT {
        pace.tick().await;
        if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
            return;
        }
        let mut outcome = Err(H2Failure::NotSent);
        for _attempt in 0..2 {
            if sender.is_none() {
                match h2_connect(&connect).await {
                    Ok(opened) => sender = Some(opened),
                    Err(why) => {
                        outcome = Err(H2Failure::Failed(why));
                        break;
                    }
                }
            }
            let Some(open) = sender.as_mut() else { break };
            outcome = h2_request(open).await;
            match outcome {
                Err(H2Failure::NotSent) => {
                    // The router ended this connection with GOAWAY: the request goes on a new one.
                    tally.closed_by_server.fetch_add(1, Ordering::Relaxed);
                    sender = None;
                }
                _ => break,
            }
        }
        match outcome {
            Ok(()) => {
                tally.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(H2Failure::NotSent) => tally.fail("h2 request never sent, twice".into()),
            Err(H2Failure::Failed(why)) => {
                tally.fail(why);
                sender = None;
            }
        }
    }
}

/// A WebSocket through :80 to the backend's echo, one message per 50 ms for `lasting`; returns the messages
/// echoed intact.
async fn websocket(addr: SocketAddr, lasting: Duration) -> Result<u64, String> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
    let upgrade = format!(
        "GET /ws HTTP/1.1\r\nHost: {PLAIN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream.write_all(upgrade.as_bytes()).await.map_err(|e| format!("upgrade: {e}"))?;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let byte = stream.read_u8().await.map_err(|e| format!("101 head: {e}"))?;
        head.push(byte);
    }
    if !head.starts_with(b"HTTP/1.1 101") {
        return Err(format!("no upgrade: {}", String::from_utf8_lossy(&head)));
    }
    let until = Instant::now() + lasting;
    let mut echoed = 0;
    while Instant::now() < until {
        let message = format!("message {echoed:06}");
        stream.write_all(message.as_bytes()).await.map_err(|e| format!("send {echoed}: {e}"))?;
        let mut back = vec![0u8; message.len()];
        stream.read_exact(&mut back).await.map_err(|e| format!("echo {echoed}: {e}"))?;
        if back != message.as_bytes() {
            return Err(format!("echo {echoed} garbled"));
        }
        echoed += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(echoed)
}

/// `STREAM_BYTES` through the passthrough route to the TLS echo pod and back, paced; returns the bytes that came
/// back equal to those sent.
async fn passthrough_stream(addr: SocketAddr, pod_ca: String) -> Result<usize, String> {
    let config = client_config(Trust::Ca(&pod_ca), &[], None);
    let tls = tls_connect(addr, Some(PASS), config).await.map_err(|e| format!("TLS through passthrough: {e}"))?;
    let (mut reader, mut writer) = tokio::io::split(tls);
    let pattern = |at: usize| (at % 251) as u8;
    let sending = async move {
        let mut sent = 0;
        while sent < STREAM_BYTES {
            let chunk: Vec<u8> = (sent..sent + STREAM_CHUNK).map(pattern).collect();
            writer.write_all(&chunk).await.map_err(|e| format!("send at {sent}: {e}"))?;
            sent += STREAM_CHUNK;
            tokio::time::sleep(STREAM_CHUNK_PAUSE).await;
        }
        Ok::<_, String>(writer)
    };
    let receiving = async move {
        let mut got = 0;
        let mut buffer = vec![0u8; STREAM_CHUNK];
        while got < STREAM_BYTES {
            let n = reader.read(&mut buffer).await.map_err(|e| format!("receive at {got}: {e}"))?;
            if n == 0 {
                return Err(format!("closed after {got} bytes"));
            }
            if buffer[..n].iter().enumerate().any(|(i, b)| *b != pattern(got + i)) {
                return Err(format!("corrupt bytes after {got}"));
            }
            got += n;
        }
        Ok(got)
    };
    let (sent, got) = tokio::join!(sending, receiving);
    let mut writer = sent?;
    let _ = writer.shutdown().await;
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hand_overs_under_load_fail_no_request_and_cut_no_stream() {
    let web = TestBackend::start("web").await;
    let pod_ca = TestCa::new("pass-pod-ca");
    let pod_leaf = pod_ca.leaf(&[PASS]);
    let echo = TlsEcho::start(&pod_leaf.chain_pem(), &pod_leaf.key_pem).await;
    let dir = ManifestDir::new();
    let mut yaml = service("ns", "web", &[web.addr]);
    yaml += &service("ns", "echo", &[echo.addr]);
    yaml += &RouteSpec::new("ns", "plain", PLAIN, "web").yaml();
    // Its own certificate: the router offers HTTP/2 only then (as OpenShift's does, against coalescing).
    let edge_leaf = pod_ca.leaf(&[EDGE]);
    let edge_route_tls = RouteTls::edge().with_certificate(&edge_leaf.cert_pem, &edge_leaf.key_pem);
    yaml += &RouteSpec { tls: Some(edge_route_tls), ..RouteSpec::new("ns", "edge", EDGE, "web") }.yaml();
    yaml += &RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("ns", "pass", PASS, "echo") }.yaml();
    dir.write("routes.yaml", &yaml);
    let ports = Ports { http: free_port(), https: free_port(), stats: free_port() };
    let work = tempfile::tempdir().expect("work dir");
    let socket = work.path().join("handover.sock");

    let a = RouterProcess::start(&ports, dir.path(), &socket, work.path().join("a.log"));
    router_tests::eventually("router A serving", Duration::from_secs(30), || async {
        (serves(at(ports.http)).await && socket.exists()).then_some(())
    })
    .await;

    let tally = Arc::new(Tally::default());
    let shape = |path: &str| Shape {
        host: PLAIN.into(),
        path: path.into(),
        backends: vec!["web".into()],
        pace: PACE,
        requests_per_client: REQUESTS_PER_CLIENT,
        limit: LOAD_LIMIT,
    };
    let plain = Load::start(&load::tcp(at(ports.http)), &shape("/plain"), &tally, 3, 2);
    let edge_shape = Shape { host: EDGE.into(), ..shape("/edge") };
    let edge = Load::start(&edge_tls(at(ports.https), &["http/1.1"]), &edge_shape, &tally, 2, 1);
    let stop_h2 = Arc::new(AtomicBool::new(false));
    let h2 = tokio::spawn(h2_load(at(ports.https), tally.clone(), stop_h2.clone()));
    let ws = tokio::spawn(websocket(at(ports.http), Duration::from_secs(4)));
    let stream = tokio::spawn(passthrough_stream(at(ports.https), pod_ca.cert_pem.clone()));
    tally.moves(300).await;

    // A -> B while everything runs.
    let b = RouterProcess::start(&ports, dir.path(), &socket, work.path().join("b.log"));
    b.logged("the previous router released its listeners").await;
    let handed_over_at = tally.ok.load(Ordering::Relaxed);
    tally.moves(300).await;

    // The long streams end on A, which keeps them until they do; then it has drained.
    let echoed = ws.await.expect("websocket task").expect("the WebSocket across the hand-over");
    let streamed = stream.await.expect("stream task").expect("the passthrough stream across the hand-over");
    let a_log = retire(a).await;
    assert!(a_log.contains("listeners handed over to a new router"), "{a_log}");

    // B -> C.
    let c = RouterProcess::start(&ports, dir.path(), &socket, work.path().join("c.log"));
    c.logged("the previous router released its listeners").await;
    tally.moves(300).await;
    retire(b).await;

    plain.stop().await;
    edge.stop().await;
    stop_h2.store(true, Ordering::Relaxed);
    h2.await.expect("h2 load");
    let served = tally.ok.load(Ordering::Relaxed);
    eprintln!(
        "FIGURE: two hand-overs under load: {}; WebSocket {echoed} messages echoed; passthrough {streamed} bytes each way",
        tally.summary()
    );
    assert_eq!(tally.failed(), 0, "{}", tally.summary());
    assert!(served > handed_over_at + 300, "served after the hand-over too: {}", tally.summary());
    assert!(echoed >= 40, "the WebSocket echoed all along: {echoed}");
    assert_eq!(streamed, STREAM_BYTES);
    assert!(
        tally.closed_by_server.load(Ordering::Relaxed) > 0,
        "draining routers ended keep-alive connections cleanly"
    );
    // A router that stops on SIGTERM (no new one) withdraws its offer: the path goes, the ports close.
    let mut c = c;
    c.sigterm();
    let status = tokio::task::spawn_blocking(move || (c.exits_within(Duration::from_secs(10)), c.log()));
    let (status, c_log) = status.await.expect("router C");
    assert!(status.success(), "router C exited with {status}:\n{c_log}");
    assert!(!socket.exists(), "the hand-over socket removed");
    assert!(TcpStream::connect(at(ports.http)).await.is_err(), "nothing listens on :80 any more");
}
