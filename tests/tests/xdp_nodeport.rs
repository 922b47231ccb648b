//! The kube-proxy nodePort path through the XDP front, end to end (root only).
//!
//! Topology, all inside namespaces this test creates (`rtnp-<pid>-<n>`):
//!
//! ```text
//! client ns  veth-c 10.210.0.1/24 fd10:210::1/64
//!    |
//! node ns    veth-n 10.210.0.2/24 fd10:210::2/64   <- router: xdp_front (skb or driver) + nat_reverse (tc egress)
//!            veth-p 10.210.1.1/24                     listens on [::]:80 (dual stack), healthCheckNodePort 32000
//!    |
//! pod ns     veth-q 10.210.1.2/24                  <- test-backend "app" on 10.210.1.2:8080
//! ```
//!
//! The router's own Service (`openshift-ingress/router-default`, LoadBalancer, Local) has nodePort
//! 30080 for http and 30443 for https; its endpoints are the node's addresses with `nodeName:
//! node-a` (a hostNetwork DaemonSet pod), so nodePort traffic is DNATed to the router's own :80.
//! Checksum offload is off on both client-side veth ends, as on a real NIC's wire, so the kernel
//! verifies every checksum the programs rewrite.

mod xdp_common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use router_tests::netns::{veth_pair, NetNs, VethEnd};
use xdp_common::router_service::{router_service, HEALTH_CHECK_NODE_PORT, HTTP_NODE_PORT};
use xdp_common::{
    dump_counters, dump_formatted, is_root, remove_stale_pin_dirs, require_tools, router_binary, test_backend_binary,
    xdp_status, Counters, PinDir, Process,
};

const PREFIX: &str = "rtnp";
const CLIENT4: &str = "10.210.0.1";
const CLIENT6: &str = "fd10:210::1";
const NODE4: &str = "10.210.0.2";
const NODE6: &str = "fd10:210::2";
const POD4: &str = "10.210.1.2";
const NODE_IF: &str = "veth-n";
const APP_HOST: &str = "app.example.com";

/// The namespaces, the backend pod and the manifests dir of one test.
struct Topology {
    client: NetNs,
    node: NetNs,
    _pod: NetNs,
    _backend: Process,
    work: tempfile::TempDir,
}

impl Topology {
    fn new() -> Topology {
        NetNs::remove_stale(PREFIX);
        remove_stale_pin_dirs(PREFIX);
        let client = NetNs::new(PREFIX);
        let node = NetNs::new(PREFIX);
        let pod = NetNs::new(PREFIX);
        veth_pair(
            VethEnd { ns: &client, name: "veth-c", cidr: &format!("{CLIENT4}/24") },
            VethEnd { ns: &node, name: NODE_IF, cidr: &format!("{NODE4}/24") },
        );
        client.ip(&["addr", "add", &format!("{CLIENT6}/64"), "dev", "veth-c", "nodad"]);
        node.ip(&["addr", "add", &format!("{NODE6}/64"), "dev", NODE_IF, "nodad"]);
        for (ns, dev) in [(&client, "veth-c"), (&node, NODE_IF)] {
            let out = ns.command("ethtool").args(["-K", dev, "tx", "off"]).output().expect("run ethtool");
            assert!(out.status.success(), "ethtool -K {dev} tx off: {}", String::from_utf8_lossy(&out.stderr));
        }
        veth_pair(
            VethEnd { ns: &node, name: "veth-p", cidr: "10.210.1.1/24" },
            VethEnd { ns: &pod, name: "veth-q", cidr: &format!("{POD4}/24") },
        );
        let work = tempfile::tempdir().expect("temp dir");
        fs::create_dir(work.path().join("manifests")).expect("manifests dir");
        let backend_bin = test_backend_binary();
        let mut backend =
            Process::spawn(&pod, &backend_bin, &[format!("app={POD4}:8080")], &[], &work.path().join("backend.log"));
        backend.wait_for("the backend listening", || backend_log_says_listening(&work.path().join("backend.log")));
        Topology { client, node, _pod: pod, _backend: backend, work }
    }

    fn manifests(&self) -> PathBuf {
        self.work.path().join("manifests")
    }

    /// Writes the router Service, its endpoints on `router_node`, and the app's route.
    fn write_manifests(&self, router_node: &str) {
        let yaml = manifests(router_node);
        let path = self.manifests().join("all.yaml");
        let tmp = self.work.path().join("all.yaml.tmp");
        fs::write(&tmp, yaml).expect("write manifests");
        fs::rename(&tmp, path).expect("move manifests into place");
    }

    fn start_router(&self, mode: &str, pin_dir: &Path) -> Process {
        let args: Vec<String> = [
            "--manifests",
            &self.manifests().display().to_string(),
            "--listen-addr",
            "::",
            "--http-port",
            "80",
            "--https-port",
            "443",
            "--stats-port",
            "1936",
            "--router-service",
            "openshift-ingress/router-default",
            "--node-name",
            "node-a",
            "--xdp-iface",
            NODE_IF,
            "--xdp-mode",
            mode,
            "--bpf-pin-dir",
            &pin_dir.display().to_string(),
            "--xdp-conntrack-idle-timeout",
            "4s",
            "--xdp-conntrack-closing-timeout",
            "2s",
            "--graceful-shutdown-delay",
            "3s",
        ]
        .map(String::from)
        .to_vec();
        let log = self.work.path().join(format!("router-{mode}.log"));
        // IPv4 and IPv6 nodePort traffic: the listeners take both families, as the ingress operator sets for
        // dual-stack clusters (OpenShift's default, v4, binds IPv4 only).
        let envs = [("RUST_LOG", "info,router::proxy=debug"), ("ROUTER_IP_V4_V6_MODE", "v4v6")];
        let mut router = Process::spawn(&self.node, &router_binary(), &args, &envs, &log);
        let ports = pin_dir.join("NODE_PORTS");
        router.wait_for("the nodePort map filled from the router Service", || {
            ports.exists() && dump_formatted(&ports).len() == 4
        });
        router
    }

    /// curl from the client namespace; returns (exit code, HTTP status, body).
    fn curl(&self, url: &str, host: &str, max_time: &str) -> (i32, u16, String) {
        curl_in(&self.client, url, host, max_time)
    }
}

fn curl_in(ns: &NetNs, url: &str, host: &str, max_time: &str) -> (i32, u16, String) {
    let out = ns
        .command("curl")
        .args(["-sS", "-g", "-m", max_time, "--connect-timeout", max_time, "-w", "\n%{http_code}", "-H"])
        .arg(format!("Host: {host}"))
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (out.status.code().unwrap_or(-1), code.trim().parse().unwrap_or(0), body.to_owned())
}

fn backend_log_says_listening(log: &Path) -> bool {
    fs::read_to_string(log).is_ok_and(|text| text.contains("listening"))
}

/// The router Service on `router_node`, and the app's endpoints and route.
fn manifests(router_node: &str) -> String {
    router_service(NODE4, NODE6, router_node)
        + &format!(
            r#"---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: app-1
  namespace: demo
  labels: {{kubernetes.io/service-name: app}}
addressType: IPv4
ports: [{{name: http, port: 8080, protocol: TCP}}]
endpoints: [{{addresses: ["{POD4}"]}}]
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {{name: app, namespace: demo}}
spec: {{host: {APP_HOST}, to: {{kind: Service, name: app}}}}
"#
        )
}

/// Polls `check` every 100 ms for up to `limit`.
fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {limit:?} waiting for {what}");
        thread::sleep(Duration::from_millis(100));
    }
}

fn assert_invariants(counters: &Counters) {
    let c = |name| counters.get(name);
    assert_eq!(c("total"), c("ipv4") + c("ipv6") + c("other") + c("unparsed"), "{counters:?}");
    let drops = c("drop_no_endpoint") + c("drop_no_slot") + c("drop_ct_full");
    assert_eq!(c("total"), c("pass") + c("nat") + drops, "one verdict per packet: {counters:?}");
    assert_eq!(c("ct_hit") + c("ct_miss"), c("nat") + drops, "one conntrack lookup per nodePort packet: {counters:?}");
}

fn nodeport_case(mode: &str, n: u32) {
    if !is_root() {
        eprintln!("skipping xdp_nodeport: needs root (network namespaces, XDP, bpffs)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool"]);
    let topo = Topology::new();
    topo.write_manifests("node-a");
    let pin_dir = PinDir::new(PREFIX, n);
    let mut router = topo.start_router(mode, &pin_dir.0);

    // The program runs in the mode asked for.
    let link = topo.node.ip(&["link", "show", NODE_IF]);
    let generic = link.contains("xdpgeneric");
    assert!(link.contains("prog/xdp"), "xdp_front not attached to {NODE_IF}:\n{link}");
    assert_eq!(generic, mode == "skb", "expected {mode} mode on {NODE_IF}:\n{link}");
    let xdp = xdp_status(&topo.node, &pin_dir.0);
    let attachments = xdp["attachments"].as_array().expect("attachments");
    let find = |program: &str| attachments.iter().find(|a| a["program"] == program).cloned().unwrap_or_default();
    // Named as `ip link show` names it.
    assert_eq!(find("xdp_front")["mode"], if generic { "xdpgeneric" } else { "xdp" }, "status: {xdp}");
    assert_eq!(find("xdp_front")["iface"], NODE_IF, "status: {xdp}");
    assert_eq!(find("nat_reverse")["mode"], "tcx egress", "status: {xdp}");

    // IPv4 and IPv6 nodePort requests reach the router, which routes them to the pod with the
    // client's own address in X-Forwarded-For.
    for (url, client) in [
        (format!("http://{NODE4}:{HTTP_NODE_PORT}/hello"), CLIENT4),
        (format!("http://[{NODE6}]:{HTTP_NODE_PORT}/hello"), CLIENT6),
    ] {
        let (code, status, body) = topo.curl(&url, APP_HOST, "5");
        assert_eq!((code, status), (0, 200), "{url}: curl exit {code}, status {status}: {body}\n{}", router.log());
        let report: serde_json::Value = serde_json::from_str(&body).expect("backend JSON");
        assert_eq!(report["backend"], "app", "{body}");
        let xff = report["headers"]["x-forwarded-for"][0].as_str().unwrap_or_default().to_owned();
        assert!(xff.ends_with(client), "{url}: X-Forwarded-For {xff:?} is not the client's {client}");
    }
    // The router's log names the client's real address (the connection span of a request it
    // answered itself).
    let (_, status, _) = topo.curl(&format!("http://{NODE4}:{HTTP_NODE_PORT}/"), "nothing.example.com", "5");
    assert_eq!(status, 503);
    eventually("the router logging the client address", Duration::from_secs(5), || {
        router.log().lines().any(|line| line.contains("no route") && line.contains(CLIENT4))
    });

    // Conntrack entries appear while a flow is open (a slow request), then expire after it ends.
    let conntrack = pin_dir.0.join("CONNTRACK");
    let slow_url = format!("http://{NODE4}:{HTTP_NODE_PORT}/slow/2500");
    let client_ns = topo.client.path();
    let slow = thread::spawn(move || {
        let out = Command::new("nsenter")
            .arg(format!("--net={}", client_ns.display()))
            .args(["--", "curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-H"])
            .arg(format!("Host: {APP_HOST}"))
            .arg(&slow_url)
            .output()
            .expect("run curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    });
    eventually("a conntrack entry for the open flow", Duration::from_secs(5), || {
        dump_formatted(&conntrack).iter().any(|e| e["key"]["dst_port"] == HTTP_NODE_PORT && e["value"]["port"] == 80)
    });
    let entries = dump_formatted(&conntrack);
    eprintln!(
        "xdp_nodeport ({mode}): {} conntrack entries while a request is open, e.g. {}",
        entries.len(),
        entries[0]
    );
    assert_eq!(slow.join().expect("slow curl"), "200");
    eventually("conntrack entries to expire", Duration::from_secs(15), || dump_formatted(&conntrack).is_empty());
    assert!(dump_formatted(&pin_dir.0.join("CONNTRACK_REV")).is_empty(), "reverse entries expire too");

    // Counters, read back through the pinned map.
    let counters = dump_counters(&pin_dir.0.join("XDP_STATS"));
    eprintln!("xdp_nodeport ({mode}): counters {counters:?}");
    assert!(counters.get("nat") >= 10, "{counters:?}");
    assert!(counters.get("ct_miss") >= 4, "a miss per new flow: {counters:?}");
    assert!(counters.get("ct_hit") >= 4, "later packets hit: {counters:?}");
    assert!(counters.get("rev_nat") >= 4, "replies restored: {counters:?}");
    assert!(counters.get("ipv6") >= 3, "{counters:?}");
    assert_eq!(counters.get("drop_no_endpoint"), 0, "{counters:?}");
    assert_invariants(&counters);
    // The same map on the admin port's /metrics, read at the scrape (so at least what was dumped before).
    let scrape = topo.node.command("curl").args(["-sS", "-m", "3", "http://127.0.0.1:1936/metrics"]).output();
    let scrape = String::from_utf8_lossy(&scrape.expect("curl /metrics").stdout).into_owned();
    let nat_metric = scrape.lines().find_map(|line| line.strip_prefix("router_xdp_packets_total{counter=\"nat\"} "));
    let nat_metric = nat_metric.and_then(|value| value.trim().parse::<u64>().ok());
    assert!(nat_metric.is_some_and(|nat| nat >= counters.get("nat")), "router_xdp_packets_total: {scrape}");
    let fill = xdp["maps"].as_array().expect("maps");
    let ports = fill.iter().find(|m| m["name"] == "NODE_PORTS").expect("NODE_PORTS fill");
    assert_eq!(ports["entries"], 4, "http and https, IPv4 and IPv6");

    // The health check port answers like kube-proxy, then flips to 503 as soon as SIGTERM starts
    // the drain (the graceful delay keeps the router serving meanwhile).
    let health_url = format!("http://{NODE4}:{HEALTH_CHECK_NODE_PORT}/");
    let (code, status, body) = topo.curl(&health_url, "lb", "3");
    assert_eq!((code, status), (0, 200), "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("health JSON");
    assert_eq!(body["service"], serde_json::json!({"namespace": "openshift-ingress", "name": "router-default"}));
    assert_eq!(body["localEndpoints"], 1);
    router.sigterm();
    let started = Instant::now();
    eventually("the health check to answer 503 while draining", Duration::from_secs(2), || {
        topo.curl(&health_url, "lb", "1").1 == 503
    });
    eprintln!("xdp_nodeport ({mode}): health check 503 {:?} after SIGTERM", started.elapsed());
    let (_, served, _) = topo.curl(&format!("http://{NODE4}:{HTTP_NODE_PORT}/"), APP_HOST, "2");
    assert_eq!(served, 200, "still serving nodePort traffic during the graceful delay");
    let exit = router.wait_exit();
    assert!(exit.success(), "router exited with {exit}:\n{}", router.log());
    let link = topo.node.ip(&["link", "show", NODE_IF]);
    assert!(!link.contains("prog/xdp"), "XDP program still attached after exit:\n{link}");
    let tc = topo.node.command("bpftool").args(["net", "show", "dev", NODE_IF]).output().expect("bpftool net");
    assert!(!String::from_utf8_lossy(&tc.stdout).contains("nat_reverse"), "tc program still attached");
    assert!(!pin_dir.0.exists(), "pins left behind in {}", pin_dir.0.display());
}

#[test]
fn nodeport_reaches_the_router_with_the_client_address_in_skb_mode() {
    nodeport_case("skb", 0);
}

#[test]
fn nodeport_reaches_the_router_with_the_client_address_in_driver_mode() {
    nodeport_case("driver", 1);
}

/// With the router's only endpoint on another node, nodePort SYNs are dropped (the client gets no
/// answer at all) and the health check says 503; once the endpoint moves here, both recover
/// without a restart.
#[test]
fn nodeport_without_a_local_endpoint_is_dropped_until_one_appears() {
    if !is_root() {
        eprintln!("skipping xdp_nodeport: needs root (network namespaces, XDP, bpffs)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool"]);
    let topo = Topology::new();
    topo.write_manifests("node-b");
    let pin_dir = PinDir::new(PREFIX, 2);
    let mut router = topo.start_router("skb", &pin_dir.0);
    let health_url = format!("http://{NODE4}:{HEALTH_CHECK_NODE_PORT}/healthz");
    let (_, status, body) = topo.curl(&health_url, "lb", "3");
    assert_eq!(status, 503, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("health JSON");
    assert_eq!(body["localEndpoints"], 0);

    let started = Instant::now();
    let (code, status, body) = topo.curl(&format!("http://{NODE4}:{HTTP_NODE_PORT}/"), APP_HOST, "2");
    assert_eq!((code, status), (28, 0), "expected a timeout (no SYN-ACK), got exit {code}, status {status}: {body}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let counters = dump_counters(&pin_dir.0.join("XDP_STATS"));
    assert!(counters.get("drop_no_endpoint") >= 1, "{counters:?}");
    assert_eq!(counters.get("nat"), 0, "{counters:?}");
    assert_invariants(&counters);
    assert!(dump_formatted(&pin_dir.0.join("CONNTRACK")).is_empty(), "dropped SYNs leave no flow");

    // Other traffic to the node is untouched: the router's own port answers directly.
    let (_, direct, _) = topo.curl(&format!("http://{NODE4}:80/"), APP_HOST, "5");
    assert_eq!(direct, 200);

    topo.write_manifests("node-a");
    eventually("the health check to report the local endpoint", Duration::from_secs(15), || {
        topo.curl(&health_url, "lb", "1").1 == 200
    });
    eventually("the nodePort to answer", Duration::from_secs(10), || {
        topo.curl(&format!("http://{NODE4}:{HTTP_NODE_PORT}/"), APP_HOST, "2").1 == 200
    });
    let exit = router.terminate();
    assert!(exit.success(), "router exited with {exit}:\n{}", router.log());
}
