//! The network-namespace topology of the passthrough steering tests (`xdp_steer*.rs`, root only): a client, a
//! node running the router with `xdp_front` on its client-facing interface (and `steer_ingress` on the
//! pod-facing ones, found from the FIB as flows are steered to their pods), and two pods serving TLS with
//! their own certificates.
//!
//! ```text
//! client ns  veth-c  10.211.0.1/24   fd00:211::1/64
//!    |
//! node ns    veth-n  10.211.0.2/24   fd00:211::2/64    <- router :443/:80/:1936, xdp_front (--xdp-iface, skb or driver mode)
//!            veth-pa 10.211.1.1/24   fd00:211:1::1/64  <- steer_ingress once a flow is steered to pod-a
//!            veth-pb 10.211.2.1/24   fd00:211:2::1/64  <- steer_ingress once a flow is steered to pod-b
//!    |                   |
//! pod-a ns   veth-a 10.211.1.2/24    fd00:211:1::2/64  openssl s_server -WWW :8443 (certificate issued by pod-a-ca), test-backend :8080
//! pod-b ns   veth-b 10.211.2.2/24    fd00:211:2::2/64  openssl s_server -WWW :8443 (certificate issued by pod-b-ca)
//! ```
//!
//! The IPv6 addresses are unique local ones (fd00::/8) inside the test's own namespaces, added without
//! duplicate address detection so they are usable at once; the pods' servers listen on IPv4 only, and
//! the IPv6 tests bring their own listeners (`steer_ends`).
//!
//! Routes (`write_manifests`): `steer.example.com` passthrough to both pods' :8443;
//! `edge.example.com` edge-terminated by the router (its default certificate) to pod-a's
//! test-backend; plus whatever YAML a test adds.

use std::{
    fs,
    net::SocketAddr,
    path::Path,
    process::Command,
    thread,
    time::{Duration, Instant},
};

use router_tests::manifests::{service, RouteSpec, RouteTls};
use router_tests::netns::{veth_pair, NetNs, VethEnd};
use router_tests::pki::TestCa;

use super::{remove_stale_pin_dirs, router_binary, test_backend_binary, Process};

/// The namespace prefix of tests that take the default one.
pub const PREFIX: &str = "rtst";
pub const CLIENT4: &str = "10.211.0.1";
pub const NODE4: &str = "10.211.0.2";
pub const POD_A: &str = "10.211.1.2";
pub const POD_B: &str = "10.211.2.2";
pub const NODE_IF: &str = "veth-n";
pub const CLIENT6: &str = "fd00:211::1";
pub const NODE6: &str = "fd00:211::2";
pub const POD_A6: &str = "fd00:211:1::2";
pub const POD_B6: &str = "fd00:211:2::2";

/// The address family a steering test's flows use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// The node's client-facing address of this family.
    pub fn node(self) -> &'static str {
        match self {
            Family::V4 => NODE4,
            Family::V6 => NODE6,
        }
    }

    /// Pod-a's address of this family.
    pub fn pod_a(self) -> &'static str {
        match self {
            Family::V4 => POD_A,
            Family::V6 => POD_A6,
        }
    }

    /// `addr:port` as a socket address of this family.
    pub fn socket(self, addr: &str, port: u16) -> SocketAddr {
        match self {
            Family::V4 => format!("{addr}:{port}"),
            Family::V6 => format!("[{addr}]:{port}"),
        }
        .parse()
        .expect("a socket address")
    }

    /// The value of `STEER_FLOWS` entries' `family` (`router_common::nat::FAMILY_IPV4`/`FAMILY_IPV6`).
    pub fn map_value(self) -> u64 {
        match self {
            Family::V4 => 4,
            Family::V6 => 6,
        }
    }
}
/// The node's ends of the pods' veths (pod-a's, pod-b's).
pub const POD_SIDE_IFS: [&str; 2] = ["veth-pa", "veth-pb"];
pub const STEER_HOST: &str = "steer.example.com";
pub const EDGE_HOST: &str = "edge.example.com";
/// The file the download tests fetch from both pods, and its size.
pub const DOWNLOAD: &str = "big.bin";
pub const DOWNLOAD_BYTES: usize = 32 << 20;
/// Routes `write_manifests` always writes (the metric `router_routes_loaded` counts them).
const BASE_ROUTES: usize = 2;

/// The namespaces, the pods' servers and the work dir of one test.
pub struct Topology {
    pub client: NetNs,
    pub node: NetNs,
    pub pods: Vec<NetNs>,
    _servers: Vec<Process>,
    pub work: tempfile::TempDir,
    routes: usize,
}

/// How the test interfaces are set, beside the kernel's defaults. The default is a node as it is:
/// the client's end sends complete checksums (as packets from a real NIC's wire have them), the
/// node's and the pods' veths keep their TX checksum offload and TSO/GSO, so a pod's packets reach
/// the node with partial checksums and as GSO super-packets, as every pod's do; the receiving ends
/// (client, pods) have GRO on, which driver mode needs (see [`Topology::with_interfaces`]).
#[derive(Clone, Debug)]
pub struct Interfaces {
    /// TX checksum offload on the client's veth.
    pub client_tx_checksum: bool,
    /// TX checksum offload on the pods' and the node's veths.
    pub pod_tx_checksum: bool,
    /// TSO and GSO on the pods' veths.
    pub pod_segmentation: bool,
    /// GRO on the receiving ends (the client's and the pods' veths).
    pub gro: bool,
    /// MTU of every veth.
    pub mtu: u32,
}

impl Default for Interfaces {
    fn default() -> Self {
        Interfaces { client_tx_checksum: false, pod_tx_checksum: true, pod_segmentation: true, gro: true, mtu: 1500 }
    }
}

impl Interfaces {
    /// A short label for test output.
    pub fn label(&self) -> String {
        let on = |b: bool| if b { "on" } else { "off" };
        format!(
            "client tx-csum {}, pod tx-csum {}, pod tso/gso {}, gro {}, mtu {}",
            on(self.client_tx_checksum),
            on(self.pod_tx_checksum),
            on(self.pod_segmentation),
            on(self.gro),
            self.mtu
        )
    }
}

impl Topology {
    /// [`Topology::with_interfaces`] with the default [`Interfaces`].
    pub fn new(prefix: &str, files: &[(&str, &[u8])]) -> Topology {
        Topology::with_interfaces(prefix, files, &Interfaces::default())
    }

    /// Creates the namespaces under `prefix`, sets their interfaces as `interfaces` says, and starts
    /// the pods' servers; `files` are written into both pods' served directories (name, content).
    pub fn with_interfaces(prefix: &str, files: &[(&str, &[u8])], interfaces: &Interfaces) -> Topology {
        NetNs::remove_stale(prefix);
        remove_stale_pin_dirs(prefix);
        let client = NetNs::new(prefix);
        let node = NetNs::new(prefix);
        let pod_a = NetNs::new(prefix);
        let pod_b = NetNs::new(prefix);
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
        for (ns, dev, cidr) in [
            (&client, "veth-c", format!("{CLIENT6}/64")),
            (&node, NODE_IF, format!("{NODE6}/64")),
            (&node, "veth-pa", "fd00:211:1::1/64".to_owned()),
            (&pod_a, "veth-a", format!("{POD_A6}/64")),
            (&node, "veth-pb", "fd00:211:2::1/64".to_owned()),
            (&pod_b, "veth-b", format!("{POD_B6}/64")),
        ] {
            // nodad: usable at once, not tentative for a second of duplicate address detection.
            ns.ip(&["-6", "addr", "add", &cidr, "dev", dev, "nodad"]);
        }
        pod_a.ip(&["-6", "route", "add", "default", "via", "fd00:211:1::1"]);
        pod_b.ip(&["-6", "route", "add", "default", "via", "fd00:211:2::1"]);
        let node_ends = [(&node, NODE_IF), (&node, "veth-pa"), (&node, "veth-pb")];
        let pod_ends = [(&pod_a, "veth-a"), (&pod_b, "veth-b")];
        let all_ends = [(&client, "veth-c")].into_iter().chain(node_ends).chain(pod_ends);
        for (ns, dev) in all_ends {
            if interfaces.mtu != 1500 {
                ns.ip(&["link", "set", dev, "mtu", &interfaces.mtu.to_string()]);
            }
        }
        ethtool(&client, "veth-c", &[("tx", interfaces.client_tx_checksum)]);
        for (ns, dev) in node_ends.into_iter().chain(pod_ends) {
            ethtool(ns, dev, &[("tx", interfaces.pod_tx_checksum)]);
        }
        for (ns, dev) in pod_ends {
            ethtool(ns, dev, &[("tso", interfaces.pod_segmentation), ("gso", interfaces.pod_segmentation)]);
        }
        // Driver mode: a steered packet XDP translates leaves by XDP_REDIRECT into another veth, whose
        // ndo_xdp_xmit puts the frame on its peer's NAPI ring; a veth has that ring only while an XDP
        // program is attached to it or GRO is on (veth creates both ends with GRO off), and otherwise
        // drops the frame (-ENXIO, `xdp:xdp_redirect_err`). The receiving ends are the client's and the
        // pods' veths.
        for (ns, dev) in [(&client, "veth-c")].into_iter().chain(pod_ends) {
            ethtool(ns, dev, &[("gro", interfaces.gro)]);
        }

        let work = tempfile::tempdir().expect("temp dir");
        fs::create_dir(work.path().join("manifests")).expect("manifests dir");
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
            for (file, content) in files {
                fs::write(dir.join(file), content).expect("write served file");
            }
            servers.push(s_server(ns, &dir, addr));
        }
        fs::write(work.path().join("ca.pem"), cas).expect("write CAs");
        let backend_bin = test_backend_binary();
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
        Topology { client, node, pods: vec![pod_a, pod_b], _servers: servers, work, routes: BASE_ROUTES }
    }

    /// Writes the base routes and `extra` (YAML documents holding `extra_routes` routes).
    pub fn write_manifests(&mut self, extra: &str, extra_routes: usize) {
        let pods: Vec<SocketAddr> =
            [POD_A, POD_B].iter().map(|ip| format!("{ip}:8443").parse().expect("addr")).collect();
        let web: Vec<SocketAddr> = vec![format!("{POD_A}:8080").parse().expect("addr")];
        let mut yaml = service("demo", "tls-pods", &pods);
        yaml += &service("demo", "web", &web);
        let steer =
            RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("demo", "steer", STEER_HOST, "tls-pods") };
        let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("demo", "edge", EDGE_HOST, "web") };
        yaml += &steer.yaml();
        yaml += &edge.yaml();
        yaml += extra;
        self.routes = BASE_ROUTES + extra_routes;
        let dir = self.work.path().join("manifests");
        fs::write(dir.join(".all.yaml.tmp"), yaml).expect("write manifests");
        fs::rename(dir.join(".all.yaml.tmp"), dir.join("all.yaml")).expect("move manifests into place");
    }

    /// Starts the router in the node namespace with steering on, XDP in `mode`, its maps pinned
    /// under `pin_dir`, and `envs` added; returns once every route is loaded.
    pub fn start_router(&self, mode: &str, pin_dir: &Path, envs: &[(&str, &str)]) -> Process {
        self.start_router_with(mode, pin_dir, mode, &[], envs)
    }

    /// The router in `mode` on `pin_dir`, logging to `router-<label>.log`, waited for until ready.
    pub fn start_router_logged(&self, mode: &str, pin_dir: &Path, label: &str) -> Process {
        self.start_router_with(mode, pin_dir, label, &[], &[])
    }

    /// As [`Topology::start_router`], logging to `router-<label>.log`, with `extra` arguments after the usual
    /// ones.
    pub fn start_router_with(
        &self,
        mode: &str,
        pin_dir: &Path,
        label: &str,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Process {
        let mut args: Vec<String> = [
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
            "--xdp-mode",
            mode,
            // Steering is on by default, and the pod-facing interfaces are found from the FIB: no switch.
            "--bpf-pin-dir",
            &pin_dir.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let log = self.work.path().join(format!("router-{label}.log"));
        let mut all_envs = vec![("RUST_LOG", "info,router::relay::steer=debug")];
        all_envs.extend_from_slice(envs);
        let mut router = Process::spawn(&self.node, &router_binary(), &args, &all_envs, &log);
        let node = &self.node;
        let loaded = format!("router_routes_loaded {}", self.routes);
        router.wait_for("the router ready", || metrics(node).is_some_and(|text| text.contains(&loaded)));
        router
    }

    /// curl's arguments for the download through the steered route, at most `rate` per second, into `out`.
    pub fn paced_download(&self, rate: &str, out: &Path) -> Vec<String> {
        let mut args: Vec<String> = ["-sS", "-m", "120", "--http1.1", "--limit-rate", rate].map(String::from).to_vec();
        args.extend(["--resolve".into(), format!("{STEER_HOST}:443:{NODE4}")]);
        args.extend(["--cacert".into(), self.work.path().join("ca.pem").display().to_string()]);
        args.extend(["-o".into(), out.display().to_string(), format!("https://{STEER_HOST}/{DOWNLOAD}")]);
        args
    }

    /// curl through `host` resolved to the node; returns (exit code, HTTP status, body, verbose log).
    pub fn curl(&self, host: &str, path: &str, extra: &[&str]) -> (i32, u16, Vec<u8>, String) {
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

    /// The router's /metrics (panics when it does not answer).
    pub fn metrics(&self) -> String {
        metrics(&self.node).expect("the router's /metrics")
    }
}

/// `ethtool -K dev feature on|off ...`.
pub fn ethtool(ns: &NetNs, dev: &str, features: &[(&str, bool)]) {
    let mut args = vec!["-K".to_owned(), dev.to_owned()];
    for (feature, on) in features {
        args.push((*feature).to_owned());
        args.push(if *on { "on" } else { "off" }.to_owned());
    }
    let out = ns.command("ethtool").args(&args).output().expect("run ethtool");
    assert!(out.status.success(), "ethtool {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// `openssl s_server -WWW` serving the files of `dir` over TLS on `addr`:8443.
pub fn s_server(ns: &NetNs, dir: &Path, addr: &str) -> Process {
    let log = dir.join("s_server.log");
    // -WWW serves files relative to the working directory.
    let script = format!(
        "cd '{}' && exec openssl s_server -quiet -WWW -accept {addr}:8443 -cert cert.pem -key key.pem",
        dir.display()
    );
    Process::spawn(ns, Path::new("/bin/bash"), &["-c".to_owned(), script], &[], &log)
}

/// [`DOWNLOAD_BYTES`] that a byte shifted anywhere would change.
pub fn download_content() -> Vec<u8> {
    xorshift_bytes(0x9e37_79b9_7f4a_7c15, DOWNLOAD_BYTES)
}

/// `len` bytes of the xorshift stream from `seed`: content in which a shifted, lost or repeated byte shows.
pub fn xorshift_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The sha256 of `bytes`, by `sha256sum`.
pub fn sha256(bytes: &[u8], work: &Path) -> String {
    let path = work.join("sha.in");
    fs::write(&path, bytes).expect("write for sha256sum");
    sha256_file(&path)
}

/// The sha256 of the file at `path`, by `sha256sum`.
pub fn sha256_file(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().expect("run sha256sum");
    assert!(out.status.success(), "sha256sum {}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or_default().to_owned()
}

/// The router's /metrics, read in the node namespace.
pub fn metrics(node: &NetNs) -> Option<String> {
    let out = node.command("curl").args(["-sS", "-m", "2", "http://127.0.0.1:1936/metrics"]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The sum of every sample of `name` (with any labels) in a Prometheus text page.
pub fn metric(text: &str, name: &str) -> u64 {
    metric_where(text, name, "")
}

/// The sum of the samples of `name` whose line contains `label` (e.g. `reason="map_full"`).
pub fn metric_where(text: &str, name: &str, label: &str) -> u64 {
    text.lines()
        .filter(|line| line.starts_with(name) && matches!(line.as_bytes().get(name.len()), Some(b' ' | b'{')))
        .filter(|line| line.contains(label))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// Polls `check` every 100 ms for up to `limit`.
pub fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for {what}");
        thread::sleep(Duration::from_millis(100));
    }
}
