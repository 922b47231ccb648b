//! A steered passthrough download survives loss and reordering (root only): 1% of the packets
//! that reach the pod and 1% of those that reach the client are dropped, and a quarter of the pod's
//! packets are sent ahead of their turn or behind it, so the client's duplicate ACKs and SACK blocks
//! (translated by the datapath towards the pod) and the pod's retransmissions (translated towards
//! the client) carry the transfer; the body arrives whole.
//!
//! Topology, all inside namespaces this test creates (`rtsn-<pid>-<n>`):
//!
//! ```text
//! client ns  veth-c  10.212.0.1/24   iptables raw PREROUTING: drop 1% (the pod's segments, translated)
//!    |
//! node ns    veth-n  10.212.0.2/24   <- router :443/:1936, xdp_front (--xdp-iface, skb mode)
//!            veth-p  10.212.1.1/24   <- xdp_front too (--xdp-pod-interfaces)
//!    |
//! pod ns     veth-q  10.212.1.2/24   openssl s_server -WWW :8443
//!                                    iptables raw PREROUTING: drop 1% (the client's segments, translated)
//!                                    htb on veth-q: a random quarter of the pod's packets in a slow class
//! ```
//!
//! This kernel has no netem, so loss and reordering are built from what it has: netfilter's
//! `statistic` match drops at the receiving ends (a drop on the sender's own way out is reported back
//! to its TCP, which sends again: no loss at all; steered packets skip the node's netfilter and
//! qdiscs), and HTB with a slow class for a random quarter of the pod's packets (marked by
//! `CLASSIFY`) lets the others overtake them.

mod xdp_common;

use std::{
    fs,
    path::Path,
    thread,
    time::{Duration, Instant},
};

use router_tests::manifests::{service, RouteSpec, RouteTls};
use router_tests::netns::{veth_pair, NetNs, VethEnd};
use router_tests::pki::TestCa;
use xdp_common::steer_topology::{download_content, metric, metrics, sha256_file};
use xdp_common::{is_root, remove_stale_pin_dirs, require_tools, router_binary, PinDir, Process};

const PREFIX: &str = "rtsn";
const CLIENT4: &str = "10.212.0.1";
const NODE4: &str = "10.212.0.2";
const POD: &str = "10.212.1.2";
const HOST: &str = "netem.example.com";
const DOWNLOAD: &str = "big.bin";
const DOWNLOAD_BYTES: usize = 16 << 20;
/// The share of packets dropped at each receiving end, and of the pod's packets sent through the slow
/// class.
const LOSS: &str = "0.01";
const REORDER: &str = "0.25";

fn run_in(ns: &NetNs, program: &str, args: &[&str]) {
    let out = ns.command(program).args(args).output().unwrap_or_else(|err| panic!("run {program}: {err}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Packets the `statistic` rule of `ns`'s raw PREROUTING chain dropped (`iptables -L -v -x`).
fn dropped(ns: &NetNs) -> u64 {
    let out = ns
        .command("iptables")
        .args(["-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n"])
        .output()
        .expect("run iptables");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter(|line| line.contains("DROP"))
        .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Packets the pod sent through the slow class (`tc -s class show`: class 1:20's `Sent`).
fn reordered(pod: &NetNs) -> u64 {
    let out = pod.command("tc").args(["-s", "class", "show", "dev", "veth-q"]).output().expect("run tc");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let class = text.split("class htb 1:20").nth(1).unwrap_or_default();
    class.split(" pkt").next().and_then(|head| head.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn ethtool(ns: &NetNs, dev: &str, feature: &str, on: &str) {
    let out = ns.command("ethtool").args(["-K", dev, feature, on]).output().expect("run ethtool");
    assert!(out.status.success(), "ethtool -K {dev} {feature} {on}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn steered_download_survives_loss_and_reordering_on_the_pod_leg() {
    if !is_root() {
        eprintln!("skipping xdp_steer_netem: needs root (network namespaces, XDP, bpffs, raw sockets)");
        return;
    }
    require_tools(&["ip", "nsenter", "curl", "ethtool", "openssl", "sha256sum", "bash", "tc", "iptables"]);
    NetNs::remove_stale(PREFIX);
    remove_stale_pin_dirs(PREFIX);
    let client = NetNs::new(PREFIX);
    let node = NetNs::new(PREFIX);
    let pod = NetNs::new(PREFIX);
    veth_pair(
        VethEnd { ns: &client, name: "veth-c", cidr: &format!("{CLIENT4}/24") },
        VethEnd { ns: &node, name: "veth-n", cidr: &format!("{NODE4}/24") },
    );
    veth_pair(
        VethEnd { ns: &node, name: "veth-p", cidr: "10.212.1.1/24" },
        VethEnd { ns: &pod, name: "veth-q", cidr: &format!("{POD}/24") },
    );
    pod.ip(&["route", "add", "default", "via", "10.212.1.1"]);
    // Complete checksums on every packet (XDP rewrites them incrementally). GRO stays off (skb mode
    // needs no NAPI on the receiving ends), so the client's netfilter sees, and drops, segments
    // rather than GRO's merged trains of them.
    for (ns, dev) in [(&client, "veth-c"), (&node, "veth-n"), (&node, "veth-p"), (&pod, "veth-q")] {
        ethtool(ns, dev, "tx", "off");
    }
    // The client sees the pod's segments come from the router's port (443); the pod sees the
    // client's go to its own (8443).
    for (ns, port, number) in [(&client, "--sport", "443"), (&pod, "--dport", "8443")] {
        let rule = ["-t", "raw", "-A", "PREROUTING", "-p", "tcp", port, number, "-m", "statistic"];
        run_in(ns, "iptables", &[&rule[..], &["--mode", "random", "--probability", LOSS, "-j", "DROP"]].concat());
    }
    run_in(&pod, "tc", &["qdisc", "add", "dev", "veth-q", "root", "handle", "1:", "htb", "default", "10"]);
    run_in(&pod, "tc", &["class", "add", "dev", "veth-q", "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"]);
    run_in(&pod, "tc", &["class", "add", "dev", "veth-q", "parent", "1:", "classid", "1:20", "htb", "rate", "50mbit"]);
    let classify =
        ["-t", "mangle", "-A", "POSTROUTING", "-o", "veth-q", "-p", "tcp", "--sport", "8443", "-m", "statistic"];
    run_in(
        &pod,
        "iptables",
        &[&classify[..], &["--mode", "random", "--probability", REORDER, "-j", "CLASSIFY", "--set-class", "1:20"]]
            .concat(),
    );

    let work = tempfile::tempdir().expect("temp dir");
    let ca = TestCa::new("netem-pod-ca");
    let leaf = ca.leaf(&[HOST]);
    fs::write(work.path().join("cert.pem"), leaf.chain_pem()).expect("write cert");
    fs::write(work.path().join("key.pem"), &leaf.key_pem).expect("write key");
    fs::write(work.path().join("ca.pem"), &ca.cert_pem).expect("write CA");
    // The first 16 MiB of the steering tests' download: at 1% loss a larger file only lengthens the test.
    let content = download_content()[..DOWNLOAD_BYTES].to_vec();
    fs::write(work.path().join(DOWNLOAD), &content).expect("write download");
    let script = format!(
        "cd '{}' && exec openssl s_server -quiet -WWW -accept {POD}:8443 -cert cert.pem -key key.pem",
        work.path().display()
    );
    let _server =
        Process::spawn(&pod, Path::new("/bin/bash"), &["-c".to_owned(), script], &[], &work.path().join("s.log"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pod.command("bash").arg("-c").arg(format!("exec 3<>/dev/tcp/{POD}/8443")).status().is_ok_and(|s| s.success())
    {
        assert!(Instant::now() < deadline, "s_server on {POD}:8443 did not come up");
        thread::sleep(Duration::from_millis(100));
    }

    let manifests = work.path().join("manifests");
    fs::create_dir(&manifests).expect("manifests dir");
    let pods = vec![format!("{POD}:8443").parse().expect("addr")];
    let route = RouteSpec { tls: Some(RouteTls::passthrough()), ..RouteSpec::new("demo", "netem", HOST, "tls-pod") };
    fs::write(manifests.join("all.yaml"), service("demo", "tls-pod", &pods) + &route.yaml()).expect("manifests");
    let pin_dir = PinDir::new(PREFIX, 0);
    let args: Vec<String> = [
        "--manifests",
        &manifests.display().to_string(),
        "--listen-addr",
        "0.0.0.0",
        "--http-port",
        "80",
        "--https-port",
        "443",
        "--stats-port",
        "1936",
        "--xdp-iface",
        "veth-n",
        "--xdp-pod-interfaces",
        "veth-p",
        "--xdp-mode",
        "skb",
        "--xdp-steer-passthrough",
        "--bpf-pin-dir",
        &pin_dir.0.display().to_string(),
    ]
    .map(String::from)
    .to_vec();
    let log = work.path().join("router.log");
    let mut router = Process::spawn(&node, &router_binary(), &args, &[("RUST_LOG", "info")], &log);
    router.wait_for("the router ready", || metrics(&node).is_some_and(|text| text.contains("router_routes_loaded 1")));

    let body = work.path().join("body.out");
    let out = client
        .command("curl")
        .args(["-sS", "-m", "120", "--http1.1", "-o"])
        .arg(&body)
        .args(["-w", "%{http_code}", "--resolve", &format!("{HOST}:443:{NODE4}"), "--cacert"])
        .arg(work.path().join("ca.pem"))
        .arg(format!("https://{HOST}/{DOWNLOAD}"))
        .output()
        .expect("run curl");
    let status = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && status == "200",
        "curl: {status} {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        router.log()
    );
    assert_eq!(fs::metadata(&body).expect("body").len(), DOWNLOAD_BYTES as u64, "download length");
    assert_eq!(sha256_file(&body), sha256_file(&work.path().join(DOWNLOAD)), "download sha256");

    let text = metrics(&node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 1, "steered: {text}");
    assert_eq!(metric(&text, "router_passthrough_bytes_total"), 0, "the userspace relay carried nothing: {text}");
    // Loss and reordering really happened on the steered flow (about 12,000 segments of the pod's).
    let (lost_to_client, lost_to_pod, slow) = (dropped(&client), dropped(&pod), reordered(&pod));
    assert!(lost_to_client > 10 && slow > 1000, "dropped at the client {lost_to_client}, slow class {slow}");
    eprintln!("dropped at the client {lost_to_client}, at the pod {lost_to_pod}; {slow} of the pod's packets in the slow class");

    let exit = router.terminate();
    assert!(exit.success(), "router exited with {exit}:\n{}", router.log());
}
