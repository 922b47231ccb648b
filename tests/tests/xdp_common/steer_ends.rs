//! Both ends of a steered passthrough flow as sockets of the test process (root only): [`Life`] starts
//! the steering topology with the route `life.example.com`, passthrough to a plain TCP listener inside
//! pod-a's namespace (:9000), and the router; [`Life::open`] connects from the client namespace to the
//! router's :443 or the router Service's nodePort ([`Front`]) with a real ClientHello (rustls' first
//! flight) and takes the pod's end. Used by `xdp_steer_life.rs`, `xdp_steer_offloads.rs` and the rows of
//! `steer_rows`.

use std::{
    fs,
    io::{self, Read, Write},
    net::{Shutdown, TcpListener, TcpStream},
    path::Path,
    process::{Command, Stdio},
    sync::{
        mpsc::{self, RecvTimeoutError},
        Mutex, MutexGuard, PoisonError,
    },
    thread,
    time::{Duration, Instant},
};

use router_tests::manifests::{service, RouteSpec, RouteTls};
use router_tests::tls_client::{client_config, server_name, Trust};

use super::in_netns::{accept, connect, listen};
use super::router_service::{router_service, HTTPS_NODE_PORT};
use super::steer_topology::{
    eventually, metric, metric_where, sha256_file, Family, Interfaces, Topology, NODE4, NODE6,
};
use super::{dump_formatted, is_root, require_tools, PinDir, Process};

pub const LIFE_HOST: &str = "life.example.com";
pub const LIFE_PORT: u16 = 9000;
/// Bounds every socket wait of these tests.
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The node name the router runs as when it reads its own Service ([`Front::NodePort`]).
const ROUTER_NODE: &str = "node-a";

/// Where the client's flows enter the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    /// The router's own :443.
    RouterPort,
    /// The router Service's https nodePort ([`HTTPS_NODE_PORT`], see `router_service`), rewritten to the
    /// router's :443 by `xdp_front`'s nodePort stage.
    NodePort,
}

impl Front {
    pub fn port(self) -> u16 {
        match self {
            Front::RouterPort => 443,
            Front::NodePort => HTTPS_NODE_PORT,
        }
    }
}

/// One topology with its router and the pod-side listener of `life.example.com`.
pub struct Life {
    pub topo: Topology,
    /// The family of the flows: the route's pod address and the address the client connects to.
    pub family: Family,
    pub front: Front,
    pub pin_dir: PinDir,
    pub router: Process,
    pub pod: TcpListener,
    _serial: MutexGuard<'static, ()>,
}

/// Which end of a flow sends in [`Life::transfer`].
pub enum Sender {
    Pod,
    Client,
}

/// How long a transfer runs before [`Life::transfer`] prints what the datapath and the sockets saw.
const STALL_REPORT: Duration = Duration::from_secs(20);

/// Both ends of a flow opened through the router, and the ClientHello it began with.
pub struct Opened {
    pub client: TcpStream,
    pub pod: TcpStream,
}

impl Life {
    /// [`Life::start_in`] with the default interfaces, in skb mode, under `prefix`.
    pub fn start(prefix: &str, n: u32, envs: &[(&str, &str)]) -> Option<Life> {
        Life::start_in(prefix, n, "skb", &Interfaces::default(), envs)
    }

    /// `None` (after saying so) without root. The router runs XDP in `mode` on a topology whose
    /// interfaces are set as `interfaces` says.
    pub fn start_in(prefix: &str, n: u32, mode: &str, interfaces: &Interfaces, envs: &[(&str, &str)]) -> Option<Life> {
        Life::start_family(prefix, n, mode, interfaces, Family::V4, envs)
    }

    /// [`Life::start_in`] with flows of `family`: the route's pod listens on pod-a's address of that
    /// family and the client connects to the node's. For IPv6 the router listens on both families
    /// (`ROUTER_IP_V4_V6_MODE=v4v6`).
    pub fn start_family(
        prefix: &str,
        n: u32,
        mode: &str,
        interfaces: &Interfaces,
        family: Family,
        envs: &[(&str, &str)],
    ) -> Option<Life> {
        Life::start_through(prefix, n, mode, interfaces, family, Front::RouterPort, envs)
    }

    /// As [`Life::start_family`], with the client's flows entering through `front`.
    pub fn start_through(
        prefix: &str,
        n: u32,
        mode: &str,
        interfaces: &Interfaces,
        family: Family,
        front: Front,
        envs: &[(&str, &str)],
    ) -> Option<Life> {
        if !is_root() {
            eprintln!("skipping xdp_steer_life: needs root (network namespaces, XDP, bpffs, raw sockets)");
            return None;
        }
        let serial = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "sha256sum", "bash", "head"]);
        let mut topo = Topology::with_interfaces(prefix, &[], interfaces);
        let pod_addr = family.socket(family.pod_a(), LIFE_PORT);
        let pod = listen(&topo.pods[0], pod_addr);
        let mut extra = service("demo", "life", &[pod_addr]);
        extra += &RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("demo", "life", LIFE_HOST, "life") }
            .yaml();
        let mut args: &[&str] = &[];
        if front == Front::NodePort {
            extra += &router_service(NODE4, NODE6, ROUTER_NODE);
            args = &["--router-service", "openshift-ingress/router-default", "--node-name", ROUTER_NODE];
        }
        topo.write_manifests(&extra, 1);
        let pin_dir = PinDir::new(prefix, n);
        let mut all_envs = envs.to_vec();
        if family == Family::V6 {
            all_envs.push(("ROUTER_IP_V4_V6_MODE", "v4v6"));
        }
        let router = topo.start_router_with(mode, &pin_dir.0, mode, args, &all_envs);
        if front == Front::NodePort {
            let ports = pin_dir.0.join("NODE_PORTS");
            eventually("the nodePort map filled from the router Service", Duration::from_secs(10), || {
                ports.exists() && dump_formatted(&ports).len() == 4
            });
        }
        Some(Life { topo, family, front, pin_dir, router, pod, _serial: serial })
    }

    /// Connects from the client namespace, sends `hello` in `pieces` writes (TCP_NODELAY, a pause
    /// after each, so each leaves as its own segment), and takes the pod's end once the hello
    /// arrived there whole.
    pub fn open(&self, hello: &[u8], pieces: usize) -> Opened {
        let node = self.family.socket(self.family.node(), self.front.port());
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

    /// Opens a flow with `hello`, waits until `steered` connections are counted, streams the file at
    /// `path` from `sender` to the other end and then the sender's FIN; returns (bytes sent, bytes
    /// received, sha256 of what arrived). A stream still running after [`STALL_REPORT`] gets the
    /// datapath's counters and both ends' sockets printed once, for the diagnosis of a stall.
    pub fn transfer(&self, hello: &[u8], steered: u64, sender: Sender, path: &Path) -> (u64, u64, String) {
        let Opened { client, pod } = self.open(hello, 1);
        self.wait_steered(steered);
        let (from, mut to) = match sender {
            Sender::Pod => (pod, client),
            Sender::Client => (client, pod),
        };
        let path = path.to_path_buf();
        let writer = thread::spawn(move || {
            let mut from = from;
            let sent = io::copy(&mut fs::File::open(&path).expect("open the file to send"), &mut from).expect("send");
            from.shutdown(Shutdown::Write).expect("the sender's FIN");
            (sent, from)
        });
        // The watcher wakes when the stream ends (the sender is dropped) or when STALL_REPORT passes, whichever
        // comes first: the scope waits for it, so it must not simply sleep.
        let (finished, stream_ended) = mpsc::channel::<()>();
        let (sha, got) = thread::scope(|scope| {
            scope.spawn(move || {
                if stream_ended.recv_timeout(STALL_REPORT) == Err(RecvTimeoutError::Timeout) {
                    self.report_stall();
                }
            });
            let result = sha256_of_stream(&mut to);
            drop(finished);
            result
        });
        let (sent, _from) = writer.join().expect("the sender");
        (sent, got, sha)
    }

    /// Prints the datapath counters and the sockets and link counters of the client, node and pod.
    fn report_stall(&self) {
        let text = self.metrics();
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("router_xdp_packets_total")).collect();
        eprintln!("transfer still running after {STALL_REPORT:?}: {lines:#?}");
        for (ns, args) in [
            (&self.topo.client, &["ss", "-tni"][..]),
            (&self.topo.client, &["ip", "-s", "link"][..]),
            (&self.topo.node, &["ip", "-s", "link"][..]),
            (&self.topo.pods[0], &["ss", "-tni"][..]),
            (&self.topo.pods[0], &["nstat", "-a"][..]),
        ] {
            if let Ok(out) = ns.command(args[0]).args(&args[1..]).output() {
                eprintln!("{args:?}:\n{}", String::from_utf8_lossy(&out.stdout));
            }
        }
    }

    pub fn metrics(&self) -> String {
        self.topo.metrics()
    }

    /// The connections the router counts as open to the route's pod (`haproxy_server_current_sessions`,
    /// the in-flight count least-connections balances on).
    pub fn pod_sessions(&self) -> u64 {
        metric_where(&self.metrics(), "haproxy_server_current_sessions", "route=\"life\"")
    }

    /// Waits until the router counted `n` steered connections.
    pub fn wait_steered(&self, n: u64) {
        eventually(&format!("{n} steered connection(s)"), Duration::from_secs(10), || {
            metric(&self.metrics(), "router_xdp_steered_connections_total") >= n
        });
        let text = self.metrics();
        assert_eq!(metric(&text, "router_xdp_steered_connections_total"), n, "{text}\n{}", self.router.log());
    }

    /// The entries of the pinned `STEER_FLOWS`, as `bpftool` shows them.
    pub fn flow_entries(&self) -> Vec<serde_json::Value> {
        dump_formatted(&self.pin_dir.0.join("STEER_FLOWS"))
    }

    /// Asserts the datapath carried everything: nothing through the userspace relay, no fallback.
    pub fn assert_all_steered(&self) {
        let text = self.metrics();
        assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 0, "{text}\n{}", self.router.log());
        assert_eq!(metric(&text, "router_passthrough_bytes_total"), 0, "the userspace relay carried nothing: {text}");
    }

    /// Asserts the flow's entries outlive `kept` after its end and are gone (entries and gauge) by
    /// `gone`, both from `ended`.
    pub fn assert_removed_between(&self, ended: Instant, kept: Duration, gone: Duration, what: &str) {
        thread::sleep(kept.saturating_sub(ended.elapsed()));
        let entries = self.flow_entries();
        assert_eq!(entries.len(), 2, "{what}: both entries still there {kept:?} after the end: {entries:?}");
        let limit = gone.saturating_sub(ended.elapsed());
        eventually(&format!("{what}: the flow's entries removed"), limit, || {
            self.flow_entries().is_empty() && metric(&self.metrics(), "router_xdp_steered_flows") == 0
        });
    }

    pub fn stop(mut self) {
        let exit = self.router.terminate();
        assert!(exit.success(), "router exited with {exit}:\n{}", self.router.log());
    }
}

/// A ClientHello over two segments' worth (24 protocol names of 120 bytes; MSS 1460 less the
/// timestamps), which the router replays to the pod in three segments too.
pub fn three_segment_client_hello() -> Vec<u8> {
    let names: Vec<String> = (0..24).map(|i| format!("{i:03}{}", "x".repeat(117))).collect();
    let alpn: Vec<&str> = names.iter().map(String::as_str).collect();
    let hello = client_hello(&alpn);
    assert!(hello.len() > 2 * 1448 && hello.len() < 3 * 1448, "ClientHello of {} bytes", hello.len());
    hello
}

/// rustls' first flight for `LIFE_HOST` offering `alpn` (a long list makes it large).
pub fn client_hello(alpn: &[&str]) -> Vec<u8> {
    let config = client_config(Trust::Anything, alpn, None);
    let mut connection = rustls::ClientConnection::new(config, server_name(Some(LIFE_HOST))).expect("rustls client");
    let mut hello = Vec::new();
    while connection.wants_write() {
        connection.write_tls(&mut hello).expect("ClientHello");
    }
    hello
}

/// Sends `bytes` one way and checks they arrive, exactly.
pub fn exchange(from: &mut TcpStream, to: &mut TcpStream, bytes: &[u8]) {
    from.write_all(bytes).expect("send");
    let mut got = vec![0u8; bytes.len()];
    to.read_exact(&mut got).expect("receive");
    assert!(got == bytes, "{} bytes arrived intact", bytes.len());
}

/// Reads until EOF; fails on anything else.
pub fn expect_eof(stream: &mut TcpStream, what: &str) {
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).unwrap_or_else(|err| panic!("{what}: reading to EOF: {err}"));
    assert!(rest.is_empty(), "{what}: {} unexpected bytes before EOF", rest.len());
}

/// Reads until an error; asserts it is a reset.
pub fn expect_reset(stream: &mut TcpStream, what: &str) {
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
pub fn random_file(path: &Path, size: u64) -> String {
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
pub fn sha256_of_stream(from: &mut TcpStream) -> (String, u64) {
    let mut child =
        Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn sha256sum");
    let mut stdin = child.stdin.take().expect("sha256sum stdin");
    // Copied by hand so that a stall reports how far the stream got.
    let mut copied = 0u64;
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                stdin.write_all(&buffer[..n]).expect("write into sha256sum");
                copied += n as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => panic!("streaming into sha256sum after {copied} bytes: {err}"),
        }
    }
    drop(stdin);
    let out = child.wait_with_output().expect("sha256sum output");
    (String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_owned(), copied)
}
