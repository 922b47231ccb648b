//! Passthrough steering through the XDP datapath, end to end (root only): a passthrough route's
//! connection runs between the client and a pod without the router relaying a byte.
//!
//! Topology, all inside namespaces this test creates (`rtst-<pid>-<n>`):
//!
//! ```text
//! client ns  veth-c  10.211.0.1/24
//!    |
//! node ns    veth-n  10.211.0.2/24   <- router :443/:80/:1936, xdp_front (--xdp-iface, skb or driver mode)
//!            veth-pa 10.211.1.1/24   <- xdp_front too (--xdp-pod-interfaces)
//!            veth-pb 10.211.2.1/24   <- xdp_front too
//!    |                   |
//! pod-a ns   veth-a 10.211.1.2/24    openssl s_server -WWW :8443 (certificate issued by pod-a-ca), test-backend :8080
//! pod-b ns   veth-b 10.211.2.2/24    openssl s_server -WWW :8443 (certificate issued by pod-b-ca)
//! ```
//!
//! Routes: `steer.example.com` passthrough to both pods' :8443; `edge.example.com` edge-terminated by
//! the router (its default certificate) to pod-a's test-backend. Needs the steering datapath
//! (`--xdp-pod-interfaces`, STEER_* maps): without it in the router binary the test says so and stops.

mod xdp_common;

use std::{
    fs,
    path::Path,
    process::Command,
    thread,
    time::{Duration, Instant},
};

use router_tests::manifests::{service, RouteSpec, RouteTls};
use router_tests::netns::{veth_pair, NetNs, VethEnd};
use router_tests::pki::TestCa;
use xdp_common::{is_root, remove_stale_pin_dirs, require_tools, router_binary, workspace_binary, PinDir, Process};

const PREFIX: &str = "rtst";
const CLIENT4: &str = "10.211.0.1";
const NODE4: &str = "10.211.0.2";
const POD_A: &str = "10.211.1.2";
const POD_B: &str = "10.211.2.2";
const NODE_IF: &str = "veth-n";
const POD_IFS: &str = "veth-pa,veth-pb";
const STEER_HOST: &str = "steer.example.com";
const EDGE_HOST: &str = "edge.example.com";
const DOWNLOAD: &str = "big.bin";
const DOWNLOAD_BYTES: usize = 32 << 20;

/// The namespaces, the pods' servers and the work dir of one test.
struct Topology {
    client: NetNs,
    node: NetNs,
    _pods: Vec<NetNs>,
    _servers: Vec<Process>,
    work: tempfile::TempDir,
}

impl Topology {
    fn new() -> Topology {
        NetNs::remove_stale(PREFIX);
        remove_stale_pin_dirs(PREFIX);
        let client = NetNs::new(PREFIX);
        let node = NetNs::new(PREFIX);
        let pod_a = NetNs::new(PREFIX);
        let pod_b = NetNs::new(PREFIX);
        veth_pair(
            VethEnd { ns: &client, name: "veth-c", cidr: &format!("{CLIENT4}/24") },
            VethEnd { ns: &node, name: NODE_IF, cidr: &format!("{NODE4}/24") },
        );
        veth_pair(
            VethEnd { ns: &node, name: "veth-pa", cidr: "10.211.1.1/24" },
            VethEnd { ns: &pod_a, name: "veth-a", cidr: &format!("{POD_A}/24") },
        );
        veth_pair(
            VethEnd { ns: &node, name: "veth-pb", cidr: "10.211.2.1/24" },
            VethEnd { ns: &pod_b, name: "veth-b", cidr: &format!("{POD_B}/24") },
        );
        pod_a.ip(&["route", "add", "default", "via", "10.211.1.1"]);
        pod_b.ip(&["route", "add", "default", "via", "10.211.2.1"]);
        // A veth end sending with TX checksum offload hands its peer packets whose TCP checksum holds
        // only the pseudo-header's partial sum (CHECKSUM_PARTIAL, completed by "hardware" that a veth
        // never has). XDP rewrites the bytes with incremental checksum updates, which assume a complete
        // checksum, and redirects them to another interface, where the kernel then verifies a wrong
        // one. With offload off, every packet carries a complete checksum, as on a real NIC's wire.
        for (ns, dev) in [(&client, "veth-c"), (&node, NODE_IF), (&node, "veth-pa"), (&node, "veth-pb")] {
            ethtool_tx_off(ns, dev);
        }
        for (ns, dev) in [(&pod_a, "veth-a"), (&pod_b, "veth-b")] {
            ethtool_tx_off(ns, dev);
        }
        // Driver mode: a steered packet leaves by XDP_REDIRECT into the other veth, whose
        // ndo_xdp_xmit puts the frame on its peer's NAPI ring; a veth has that ring only while an
        // XDP program is attached to it or GRO is on (veth creates both ends with GRO off), and
        // otherwise drops the frame (-ENXIO, `xdp:xdp_redirect_err`). The receiving ends here are
        // the client's and the pods' veths: GRO on there, in both modes alike.
        for (ns, dev) in [(&client, "veth-c"), (&pod_a, "veth-a"), (&pod_b, "veth-b")] {
            ethtool_gro_on(ns, dev);
        }

        let work = tempfile::tempdir().expect("temp dir");
        fs::create_dir(work.path().join("manifests")).expect("manifests dir");
        let content = download_content();
        let mut servers = Vec::new();
        let mut cas = String::new();
        for (name, ns, addr) in [("pod-a", &pod_a, POD_A), ("pod-b", &pod_b, POD_B)] {
            let dir = work.path().join(name);
            fs::create_dir(&dir).expect("pod dir");
            // One CA per pod: curl -v names the issuer, so the certificate shown names the pod.
            let ca = TestCa::new(&format!("{name}-ca"));
            cas += &ca.cert_pem;
            let leaf = ca.leaf(&[STEER_HOST]);
            fs::write(dir.join("cert.pem"), leaf.chain_pem()).expect("write cert");
            fs::write(dir.join("key.pem"), &leaf.key_pem).expect("write key");
            fs::write(dir.join("whoami"), name).expect("write whoami");
            fs::write(dir.join(DOWNLOAD), &content).expect("write download");
            servers.push(s_server(ns, &dir, addr));
        }
        fs::write(work.path().join("ca.pem"), cas).expect("write CAs");
        let backend_bin = workspace_binary("router-tests", "test-backend");
        let backend_log = work.path().join("backend.log");
        let mut backend = Process::spawn(&pod_a, &backend_bin, &[format!("web={POD_A}:8080")], &[], &backend_log);
        backend.wait_for("the backend listening", || {
            fs::read_to_string(&backend_log).is_ok_and(|t| t.contains("listening"))
        });
        servers.push(backend);
        for (ns, addr) in [(&pod_a, POD_A), (&pod_b, POD_B)] {
            let probe = || {
                ns.command("bash")
                    .arg("-c")
                    .arg(format!("exec 3<>/dev/tcp/{addr}/8443"))
                    .status()
                    .is_ok_and(|s| s.success())
            };
            eventually(&format!("s_server on {addr}:8443"), Duration::from_secs(10), probe);
        }
        Topology { client, node, _pods: vec![pod_a, pod_b], _servers: servers, work }
    }

    fn write_manifests(&self) {
        let pods: Vec<std::net::SocketAddr> =
            [POD_A, POD_B].iter().map(|ip| format!("{ip}:8443").parse().expect("addr")).collect();
        let web: Vec<std::net::SocketAddr> = vec![format!("{POD_A}:8080").parse().expect("addr")];
        let mut yaml = service("demo", "tls-pods", &pods);
        yaml += &service("demo", "web", &web);
        let steer =
            RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("demo", "steer", STEER_HOST, "tls-pods") };
        let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("demo", "edge", EDGE_HOST, "web") };
        yaml += &steer.yaml();
        yaml += &edge.yaml();
        let dir = self.work.path().join("manifests");
        fs::write(dir.join(".all.yaml.tmp"), yaml).expect("write manifests");
        fs::rename(dir.join(".all.yaml.tmp"), dir.join("all.yaml")).expect("move manifests into place");
    }

    fn start_router(&self, mode: &str, pin_dir: &Path) -> Process {
        let args: Vec<String> = [
            "--manifests",
            &self.work.path().join("manifests").display().to_string(),
            "--listen-addr",
            "0.0.0.0",
            "--http-port",
            "80",
            "--https-port",
            "443",
            "--stats-port",
            "1936",
            "--xdp-iface",
            NODE_IF,
            "--xdp-pod-interfaces",
            POD_IFS,
            "--xdp-mode",
            mode,
            "--xdp-steer-passthrough",
            "--bpf-pin-dir",
            &pin_dir.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        let log = self.work.path().join(format!("router-{mode}.log"));
        let envs = [("RUST_LOG", "info,router::relay::steer=debug")];
        let mut router = Process::spawn(&self.node, &router_binary(), &args, &envs, &log);
        let node = &self.node;
        router
            .wait_for("the router ready", || metrics(node).is_some_and(|text| text.contains("router_routes_loaded 2")));
        router
    }

    /// curl through `host` resolved to the node; returns (exit code, HTTP status, body, verbose log).
    fn curl(&self, host: &str, path: &str, extra: &[&str]) -> (i32, u16, Vec<u8>, String) {
        let out = self
            .client
            .command("curl")
            .args(["-sS", "-v", "-m", "30", "--http1.1", "-w", "\n%{http_code}", "--resolve"])
            .arg(format!("{host}:443:{NODE4}"))
            .arg("--cacert")
            .arg(self.work.path().join("ca.pem"))
            .args(extra)
            .arg(format!("https://{host}{path}"))
            .output()
            .expect("run curl");
        let mut body = out.stdout;
        let split = body.iter().rposition(|b| *b == b'\n').unwrap_or(0);
        let status = String::from_utf8_lossy(&body[split..]).trim().parse().unwrap_or(0);
        body.truncate(split);
        (out.status.code().unwrap_or(-1), status, body, String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn ethtool_tx_off(ns: &NetNs, dev: &str) {
    let out = ns.command("ethtool").args(["-K", dev, "tx", "off"]).output().expect("run ethtool");
    assert!(out.status.success(), "ethtool -K {dev} tx off: {}", String::from_utf8_lossy(&out.stderr));
}

fn ethtool_gro_on(ns: &NetNs, dev: &str) {
    let out = ns.command("ethtool").args(["-K", dev, "gro", "on"]).output().expect("run ethtool");
    assert!(out.status.success(), "ethtool -K {dev} gro on: {}", String::from_utf8_lossy(&out.stderr));
}

/// `openssl s_server -WWW` serving the files of `dir` over TLS on `addr`:8443.
fn s_server(ns: &NetNs, dir: &Path, addr: &str) -> Process {
    let log = dir.join("s_server.log");
    // -WWW serves files relative to the working directory.
    let script = format!(
        "cd '{}' && exec openssl s_server -quiet -WWW -accept {addr}:8443 -cert cert.pem -key key.pem",
        dir.display()
    );
    Process::spawn(ns, Path::new("/bin/bash"), &["-c".to_owned(), script], &[], &log)
}

/// 32 MiB that a byte shifted anywhere would change.
fn download_content() -> Vec<u8> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..DOWNLOAD_BYTES)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn sha256(bytes: &[u8], work: &Path) -> String {
    let path = work.join("sha.in");
    fs::write(&path, bytes).expect("write for sha256sum");
    let out = Command::new("sha256sum").arg(&path).output().expect("run sha256sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_owned()
}

/// The router's /metrics, read in the node namespace.
fn metrics(node: &NetNs) -> Option<String> {
    let out = node.command("curl").args(["-sS", "-m", "2", "http://127.0.0.1:1936/metrics"]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The sum of every sample of `name` (with any labels) in a Prometheus text page.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|line| line.starts_with(name) && matches!(line.as_bytes().get(name.len()), Some(b' ' | b'{')))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Polls `check` every 100 ms for up to `limit`.
fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for {what}");
        thread::sleep(Duration::from_millis(100));
    }
}

fn steer_case(mode: &str, n: u32) {
    if !is_root() {
        eprintln!("skipping xdp_steer: needs root (network namespaces, XDP, bpffs, raw sockets)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "sha256sum", "bash"]);
    let topo = Topology::new();
    topo.write_manifests();
    let pin_dir = PinDir::new(PREFIX, n);
    let mut router = topo.start_router(mode, &pin_dir.0);
    let before = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&before, "router_xdp_steered_connections_total"), 0);

    // The passthrough route: the pod's own certificate and its answer, carried by the datapath.
    let (code, status, body, verbose) = topo.curl(STEER_HOST, "/whoami", &[]);
    assert_eq!((code, status), (0, 200), "curl exit {code}, status {status}: {verbose}\n{}", router.log());
    let pod = String::from_utf8_lossy(&body).into_owned();
    assert!(pod == "pod-a" || pod == "pod-b", "body {pod:?}");
    assert!(verbose.contains(&format!("CN={pod}-ca")), "the pod's own certificate (issuer {pod}-ca):\n{verbose}");
    let after = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&after, "router_xdp_steered_connections_total"), 1, "{after}\n{}", router.log());
    assert_eq!(metric(&after, "router_xdp_steer_fallbacks_total"), 0, "{after}");
    assert_eq!(metric(&after, "router_passthrough_bytes_total"), 0, "the userspace relay carried nothing: {after}");
    assert_eq!(metric(&after, "router_passthrough_connections_total"), 1, "steered connections count: {after}");

    // An edge route and an unknown name on the same port stay with the router.
    let (code, status, _, verbose) = topo.curl(EDGE_HOST, "/", &["-k"]);
    assert_eq!((code, status), (0, 200), "edge: {verbose}");
    assert!(
        !verbose.contains("CN=pod-a-ca") && !verbose.contains("CN=pod-b-ca"),
        "the router's certificate:\n{verbose}"
    );
    let (code, status, _, verbose) = topo.curl("unknown.example.com", "/", &["-k"]);
    assert_eq!((code, status), (0, 503), "unknown SNI: {verbose}");
    let after = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&after, "router_xdp_steered_connections_total"), 1, "neither was steered: {after}");

    // 32 MiB through a steered flow, intact.
    let (code, status, body, verbose) = topo.curl(STEER_HOST, &format!("/{DOWNLOAD}"), &[]);
    assert_eq!((code, status), (0, 200), "download: {verbose}\n{}", router.log());
    assert_eq!(body.len(), DOWNLOAD_BYTES, "download length");
    assert_eq!(sha256(&body, topo.work.path()), sha256(&download_content(), topo.work.path()), "download sha256");
    let after = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&after, "router_xdp_steered_connections_total"), 2, "{after}");
    assert_eq!(metric(&after, "router_passthrough_bytes_total"), 0, "{after}");

    // Closed flows leave the datapath (FIN both ways, then the linger).
    eventually("steered flows removed after FIN", Duration::from_secs(20), || {
        metrics(&topo.node).is_some_and(|text| metric(&text, "router_xdp_steered_flows") == 0)
    });

    let exit = router.terminate();
    assert!(exit.success(), "router exited with {exit}:\n{}", router.log());
}

#[test]
fn passthrough_is_steered_to_the_pod_in_skb_mode() {
    steer_case("skb", 0);
}

#[test]
fn passthrough_is_steered_to_the_pod_in_driver_mode() {
    steer_case("driver", 1);
}
