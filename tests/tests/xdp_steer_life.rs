//! The life of a steered passthrough flow (root only): large transfers both ways, a ClientHello in
//! three TCP segments, half-close each way, a RST from either side, idle entries aging out, and a full
//! flow map falling back to the userspace relay.
//!
//! Topology: `xdp_common::steer_topology` (client, node with the router and xdp_front in skb mode,
//! two pods). These tests add the route `life.example.com`, passthrough to a plain TCP listener of
//! this test process inside pod-a's namespace (:9000): the client sends a real ClientHello (rustls'
//! first flight) and then raw bytes, so each test holds both ends of the flow as sockets and can
//! half-close or reset either. The flow's two `STEER_FLOWS` entries are read from the pinned map.
//! The tests run one at a time (a lock): the sweep's timings are measured against the wall clock.

mod xdp_common;

use std::{
    fs,
    io::{self, Read, Write},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    path::Path,
    process::{Command, Stdio},
    sync::{Mutex, MutexGuard, PoisonError},
    thread,
    time::{Duration, Instant},
};

use router_tests::manifests::{service, RouteSpec, RouteTls};
use router_tests::tls_client::{client_config, server_name, Trust};
use xdp_common::flow_map_fill::{self, PinnedMap};
use xdp_common::in_netns::{accept, connect, listen, reset};
use xdp_common::steer_topology::{eventually, metric, metric_where, sha256_file, Topology, NODE4, POD_A};
use xdp_common::{dump_formatted, is_root, require_tools, PinDir, Process};

const PREFIX: &str = "rstl";
const LIFE_HOST: &str = "life.example.com";
const LIFE_PORT: u16 = 9000;
/// Bounds every socket wait of these tests.
const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// The sweep's lingers (`relay::steer::sweep`) and its period.
const FIN_LINGER: Duration = Duration::from_secs(5);
const RST_LINGER: Duration = Duration::from_secs(1);
const SWEEP_EVERY: Duration = Duration::from_secs(1);

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One topology with its router and the pod-side listener of `life.example.com`.
struct Life {
    topo: Topology,
    pin_dir: PinDir,
    router: Process,
    pod: TcpListener,
    _serial: MutexGuard<'static, ()>,
}

/// Both ends of a flow opened through the router, and the ClientHello it began with.
struct Opened {
    client: TcpStream,
    pod: TcpStream,
}

impl Life {
    /// `None` (after saying so) without root.
    fn start(n: u32, envs: &[(&str, &str)]) -> Option<Life> {
        if !is_root() {
            eprintln!("skipping xdp_steer_life: needs root (network namespaces, XDP, bpffs, raw sockets)");
            return None;
        }
        let serial = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "sha256sum", "bash", "head"]);
        let mut topo = Topology::new(PREFIX, &[]);
        let pod_addr: SocketAddr = format!("{POD_A}:{LIFE_PORT}").parse().expect("pod address");
        let pod = listen(&topo.pods[0], pod_addr);
        let mut extra = service("demo", "life", &[pod_addr]);
        extra += &RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("demo", "life", LIFE_HOST, "life") }
            .yaml();
        topo.write_manifests(&extra, 1);
        let pin_dir = PinDir::new(PREFIX, n);
        let router = topo.start_router("skb", &pin_dir.0, envs);
        Some(Life { topo, pin_dir, router, pod, _serial: serial })
    }

    /// Connects from the client namespace, sends `hello` in `pieces` writes (TCP_NODELAY, a pause
    /// after each, so each leaves as its own segment), and takes the pod's end once the hello
    /// arrived there whole.
    fn open(&self, hello: &[u8], pieces: usize) -> Opened {
        let node: SocketAddr = format!("{NODE4}:443").parse().expect("node address");
        let mut client = connect(&self.topo.client, node, IO_TIMEOUT);
        for piece in hello.chunks(hello.len().div_ceil(pieces.max(1))) {
            client.write_all(piece).expect("write a piece of the ClientHello");
            thread::sleep(Duration::from_millis(50));
        }
        let mut pod = accept(&self.pod, IO_TIMEOUT);
        let mut got = vec![0u8; hello.len()];
        pod.read_exact(&mut got).expect("the ClientHello at the pod");
        assert!(got == hello, "the pod received the ClientHello the client sent, byte for byte");
        Opened { client, pod }
    }

    fn metrics(&self) -> String {
        self.topo.metrics()
    }

    /// Waits until the router counted `n` steered connections.
    fn wait_steered(&self, n: u64) {
        eventually(&format!("{n} steered connection(s)"), Duration::from_secs(10), || {
            metric(&self.metrics(), "router_xdp_steered_connections_total") >= n
        });
        let text = self.metrics();
        assert_eq!(metric(&text, "router_xdp_steered_connections_total"), n, "{text}\n{}", self.router.log());
    }

    /// The entries of the pinned `STEER_FLOWS`, as `bpftool` shows them.
    fn flow_entries(&self) -> Vec<serde_json::Value> {
        dump_formatted(&self.pin_dir.0.join("STEER_FLOWS"))
    }

    /// Asserts the datapath carried everything: nothing through the userspace relay, no fallback.
    fn assert_all_steered(&self) {
        let text = self.metrics();
        assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 0, "{text}\n{}", self.router.log());
        assert_eq!(metric(&text, "router_passthrough_bytes_total"), 0, "the userspace relay carried nothing: {text}");
    }

    /// Asserts the flow's entries outlive `kept` after its end and are gone (entries and gauge) by
    /// `gone`, both from `ended`.
    fn assert_removed_between(&self, ended: Instant, kept: Duration, gone: Duration, what: &str) {
        thread::sleep(kept.saturating_sub(ended.elapsed()));
        let entries = self.flow_entries();
        assert_eq!(entries.len(), 2, "{what}: both entries still there {kept:?} after the end: {entries:?}");
        let limit = gone.saturating_sub(ended.elapsed());
        eventually(&format!("{what}: the flow's entries removed"), limit, || {
            self.flow_entries().is_empty() && metric(&self.metrics(), "router_xdp_steered_flows") == 0
        });
    }

    fn stop(mut self) {
        let exit = self.router.terminate();
        assert!(exit.success(), "router exited with {exit}:\n{}", self.router.log());
    }
}

/// rustls' first flight for `LIFE_HOST` offering `alpn` (a long list makes it large).
fn client_hello(alpn: &[&str]) -> Vec<u8> {
    let config = client_config(Trust::Anything, alpn, None);
    let mut connection = rustls::ClientConnection::new(config, server_name(Some(LIFE_HOST))).expect("rustls client");
    let mut hello = Vec::new();
    while connection.wants_write() {
        connection.write_tls(&mut hello).expect("ClientHello");
    }
    hello
}

/// Sends `bytes` one way and checks they arrive, exactly.
fn exchange(from: &mut TcpStream, to: &mut TcpStream, bytes: &[u8]) {
    from.write_all(bytes).expect("send");
    let mut got = vec![0u8; bytes.len()];
    to.read_exact(&mut got).expect("receive");
    assert!(got == bytes, "{} bytes arrived intact", bytes.len());
}

/// Reads until EOF; fails on anything else.
fn expect_eof(stream: &mut TcpStream, what: &str) {
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap_or_else(|err| panic!("{what}: reading to EOF: {err}"));
    assert!(rest.is_empty(), "{what}: {} unexpected bytes before EOF", rest.len());
}

/// Reads until an error; asserts it is a reset.
fn expect_reset(stream: &mut TcpStream, what: &str) {
    let mut buffer = [0u8; 4096];
    let deadline = Instant::now() + IO_TIMEOUT;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => panic!("{what}: EOF instead of a reset"),
            Ok(_) => assert!(Instant::now() < deadline, "{what}: no reset within {IO_TIMEOUT:?}"),
            Err(err) => {
                assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{what}: {err}");
                return;
            }
        }
    }
}

/// `size` random bytes in `path`; returns their sha256.
fn random_file(path: &Path, size: u64) -> String {
    let status = Command::new("bash")
        .arg("-c")
        .arg(format!("head -c {size} /dev/urandom > '{}'", path.display()))
        .status()
        .expect("run head");
    assert!(status.success(), "writing {size} random bytes: {status}");
    assert_eq!(fs::metadata(path).expect("random file").len(), size);
    sha256_file(path)
}

/// Streams `from` to its EOF through `sha256sum`; returns the hash and the byte count.
fn sha256_of_stream(from: &mut TcpStream) -> (String, u64) {
    let mut child =
        Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn sha256sum");
    let mut stdin = child.stdin.take().expect("sha256sum stdin");
    let copied = io::copy(from, &mut stdin).expect("stream into sha256sum");
    drop(stdin);
    let out = child.wait_with_output().expect("sha256sum output");
    (String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_owned(), copied)
}

#[test]
fn a_gib_down_and_256_mib_up_arrive_intact() {
    const DOWN: u64 = 1 << 30;
    const UP: u64 = 256 << 20;
    let Some(life) = Life::start(1, &[]) else { return };
    let work = life.topo.work.path();
    let down_sha = random_file(&work.join("down.bin"), DOWN);
    let up_sha = random_file(&work.join("up.bin"), UP);
    let hello = client_hello(&["http/1.1"]);

    // 1 GiB from the pod, then its FIN.
    let started = Instant::now();
    let Opened { mut client, pod } = life.open(&hello, 1);
    life.wait_steered(1);
    let down_path = work.join("down.bin");
    let sender = thread::spawn(move || {
        let mut pod = pod;
        let mut file = fs::File::open(&down_path).expect("open down.bin");
        let sent = io::copy(&mut file, &mut pod).expect("pod sends 1 GiB");
        pod.shutdown(Shutdown::Write).expect("pod FIN");
        (sent, pod)
    });
    let (got_sha, got) = sha256_of_stream(&mut client);
    let (sent, _pod) = sender.join().expect("pod sender");
    assert_eq!((sent, got), (DOWN, DOWN), "bytes sent and received");
    assert_eq!(got_sha, down_sha, "download sha256");
    let down_took = started.elapsed();

    // 256 MiB from the client, then its FIN.
    let started = Instant::now();
    let Opened { client, mut pod } = life.open(&hello, 1);
    life.wait_steered(2);
    let up_path = work.join("up.bin");
    let sender = thread::spawn(move || {
        let mut client = client;
        let mut file = fs::File::open(&up_path).expect("open up.bin");
        let sent = io::copy(&mut file, &mut client).expect("client sends 256 MiB");
        client.shutdown(Shutdown::Write).expect("client FIN");
        (sent, client)
    });
    let (got_sha, got) = sha256_of_stream(&mut pod);
    let (sent, _client) = sender.join().expect("client sender");
    assert_eq!((sent, got), (UP, UP), "bytes sent and received");
    assert_eq!(got_sha, up_sha, "upload sha256");
    let up_took = started.elapsed();
    eprintln!("1 GiB down in {down_took:?}, 256 MiB up in {up_took:?}");
    assert!(down_took < Duration::from_secs(240) && up_took < Duration::from_secs(120), "transfers took too long");
    life.assert_all_steered();
    life.stop();
}

#[test]
fn a_client_hello_in_three_segments_is_steered() {
    let Some(life) = Life::start(2, &[]) else { return };
    // 24 protocol names of 120 bytes: a ClientHello over two segments' worth (MSS 1460 less the
    // timestamps), so the router replays it to the pod in three segments too.
    let names: Vec<String> = (0..24).map(|i| format!("{i:03}{}", "x".repeat(117))).collect();
    let alpn: Vec<&str> = names.iter().map(String::as_str).collect();
    let hello = client_hello(&alpn);
    assert!(hello.len() > 2 * 1448 && hello.len() < 3 * 1448, "ClientHello of {} bytes", hello.len());
    let Opened { mut client, mut pod } = life.open(&hello, 3);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    assert_eq!(life.flow_entries().len(), 2, "one flow, two directions");
    drop((client, pod));
    life.assert_all_steered();
    life.stop();
}

#[test]
fn half_close_each_way_keeps_the_other_direction_open() {
    let Some(life) = Life::start(3, &[]) else { return };
    let hello = client_hello(&["http/1.1"]);
    let rest: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 + i / 251) as u8).collect();

    // The client closes its sending side first and still receives the rest.
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"request");
    client.shutdown(Shutdown::Write).expect("client FIN");
    expect_eof(&mut pod, "the pod sees the client's FIN");
    thread::sleep(2 * SWEEP_EVERY);
    assert_eq!(life.flow_entries().len(), 2, "a half-closed flow stays steered");
    exchange(&mut pod, &mut client, &rest);
    pod.shutdown(Shutdown::Write).expect("pod FIN");
    expect_eof(&mut client, "the client sees the pod's FIN");
    let ended = Instant::now();
    drop((client, pod));
    life.assert_removed_between(ended, FIN_LINGER - SWEEP_EVERY, FIN_LINGER + 4 * SWEEP_EVERY, "client FIN first");

    // The pod closes first and the client can still send.
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(2);
    exchange(&mut pod, &mut client, b"banner");
    pod.shutdown(Shutdown::Write).expect("pod FIN");
    expect_eof(&mut client, "the client sees the pod's FIN");
    thread::sleep(2 * SWEEP_EVERY);
    assert_eq!(life.flow_entries().len(), 2, "a half-closed flow stays steered");
    exchange(&mut client, &mut pod, &rest);
    client.shutdown(Shutdown::Write).expect("client FIN");
    expect_eof(&mut pod, "the pod sees the client's FIN");
    let ended = Instant::now();
    drop((client, pod));
    life.assert_removed_between(ended, FIN_LINGER - SWEEP_EVERY, FIN_LINGER + 4 * SWEEP_EVERY, "pod FIN first");
    life.assert_all_steered();
    life.stop();
}

#[test]
fn a_reset_from_either_side_reaches_the_other() {
    let Some(life) = Life::start(4, &[]) else { return };
    let hello = client_hello(&["http/1.1"]);

    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"hello");
    reset(client);
    let ended = Instant::now();
    expect_reset(&mut pod, "the pod sees the client's RST");
    drop(pod);
    life.assert_removed_between(ended, Duration::ZERO, RST_LINGER + 3 * SWEEP_EVERY, "client RST");

    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(2);
    exchange(&mut pod, &mut client, b"hello");
    reset(pod);
    let ended = Instant::now();
    expect_reset(&mut client, "the client sees the pod's RST");
    drop(client);
    life.assert_removed_between(ended, Duration::ZERO, RST_LINGER + 3 * SWEEP_EVERY, "pod RST");
    life.assert_all_steered();
    life.stop();
}

#[test]
fn idle_steered_flows_age_out_at_the_tunnel_timeout() {
    const TUNNEL_TIMEOUT: Duration = Duration::from_secs(4);
    let Some(life) = Life::start(5, &[("ROUTER_DEFAULT_TUNNEL_TIMEOUT", "4s")]) else { return };
    let hello = client_hello(&["http/1.1"]);
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    let quiet = Instant::now();
    // `last_seen_ns` moves at most once a second, so the entry may look a second older than it is.
    life.assert_removed_between(quiet, TUNNEL_TIMEOUT - 2 * SWEEP_EVERY, TUNNEL_TIMEOUT + 4 * SWEEP_EVERY, "idle flow");
    // The sweep ends leg B with a RST, as the userspace relay's tunnel timeout closes the pod's side.
    expect_reset(&mut pod, "the pod after the age-out");
    // R was retired when the flow was steered: with the entries gone, the node's kernel answers the
    // client's next segment with a RST, so the client learns the flow ended.
    client.write_all(b"late").expect("write after the age-out");
    expect_reset(&mut client, "the client after the age-out");
    drop((client, pod));
    life.assert_all_steered();
    life.stop();
}

#[test]
fn a_full_flow_map_falls_back_to_the_userspace_relay() {
    let Some(life) = Life::start(6, &[]) else { return };
    let hello = client_hello(&["http/1.1"]);
    let map = PinnedMap::open(&life.pin_dir.0.join("STEER_FLOWS"));
    let filled = flow_map_fill::fill(&map);
    assert!(filled > 0, "the map took filler entries");

    let Opened { mut client, mut pod } = life.open(&hello, 1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    let text = life.metrics();
    assert_eq!(metric_where(&text, "router_xdp_steer_fallbacks_total", "reason=\"map_full\""), 1, "{text}");
    assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 1, "{text}");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 0, "{text}");
    client.shutdown(Shutdown::Write).expect("client FIN");
    expect_eof(&mut pod, "the pod sees the client's FIN");
    pod.shutdown(Shutdown::Write).expect("pod FIN");
    expect_eof(&mut client, "the client sees the pod's FIN");
    drop((client, pod));
    eventually("the relayed bytes counted", Duration::from_secs(10), || {
        metric(&life.metrics(), "router_passthrough_bytes_total") >= (hello.len() + 8) as u64
    });

    // Room again: the next connection is steered.
    flow_map_fill::remove(&map, 0, 16);
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"ping");
    drop((client, pod));
    flow_map_fill::remove(&map, 16, filled);
    life.stop();
}
