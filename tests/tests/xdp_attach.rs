//! The XDP front end to end (root only): the `router` binary attaches `xdp_front` in generic (skb)
//! mode to a veth inside a test namespace, counts real traffic from a client namespace into its
//! pinned, BTF-typed stats map (read back with `bpftool`), and on SIGTERM detaches and unpins.
//!
//! Topology: client ns `veth-c` 10.203.0.1/24 <-> node ns `veth-n` 10.203.0.2/24. All traffic stays
//! between these two namespaces.

mod xdp_common;

use std::fs;

use router_tests::netns::{veth_pair, NetNs, VethEnd};
use xdp_common::{dump_counters, is_root, remove_stale_pin_dirs, require_tools, router_binary, PinDir, Process};

/// Prefix of this test's namespaces and pin dirs (`<prefix>-<pid>-<n>`).
const PREFIX: &str = "rtxdp";
const CLIENT_ADDR: &str = "10.203.0.1";
const NODE_ADDR: &str = "10.203.0.2";
const NODE_IF: &str = "veth-n";
const STATS_PIN: &str = "XDP_STATS";
const PINGS: u64 = 5;
const TCP_CONNECTS: u64 = 3;

#[test]
fn xdp_front_counts_namespace_traffic_and_detaches_on_sigterm() {
    if !is_root() {
        eprintln!("skipping xdp_attach: needs root (network namespaces, XDP, bpffs)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "ping", "curl"]);
    NetNs::remove_stale(PREFIX);
    remove_stale_pin_dirs(PREFIX);
    let router_bin = router_binary();

    let client = NetNs::new(PREFIX);
    let node = NetNs::new(PREFIX);
    veth_pair(
        VethEnd { ns: &client, name: "veth-c", cidr: &format!("{CLIENT_ADDR}/24") },
        VethEnd { ns: &node, name: NODE_IF, cidr: &format!("{NODE_ADDR}/24") },
    );

    let pin_dir = PinDir::new(PREFIX, 0);
    let work = tempfile::tempdir().expect("temp dir");
    let manifests = work.path().join("manifests");
    fs::create_dir(&manifests).expect("manifests dir");
    let log = work.path().join("router.log");

    let args: Vec<String> = [
        "--manifests",
        &manifests.display().to_string(),
        "--listen-addr",
        "127.0.0.1",
        "--http-port",
        "0",
        "--https-port",
        "0",
        "--stats-port",
        "0",
        "--xdp-iface",
        NODE_IF,
        "--xdp-mode",
        "skb",
        "--bpf-pin-dir",
        &pin_dir.0.display().to_string(),
    ]
    .map(String::from)
    .to_vec();
    let mut router = Process::spawn(&node, &router_bin, &args, &[("RUST_LOG", "info")], &log);
    let stats_pin = pin_dir.0.join(STATS_PIN);
    router.wait_for("the pinned stats map", || stats_pin.exists());

    let link = node.ip(&["link", "show", NODE_IF]);
    assert!(
        link.contains("xdpgeneric") && link.contains("prog/xdp"),
        "expected xdp_front in generic (skb) mode on {NODE_IF}:\n{link}"
    );

    let ping = client
        .command("ping")
        .args(["-c", &PINGS.to_string(), "-i", "0.2", "-W", "2", "-q", NODE_ADDR])
        .output()
        .expect("run ping");
    assert!(
        ping.status.success(),
        "ping {NODE_ADDR} from the client namespace failed: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    for _ in 0..TCP_CONNECTS {
        // Nothing listens on the node address (the router listens on 127.0.0.1), so each attempt
        // is one SYN answered by a RST; only the SYN matters here.
        let _ = client
            .command("curl")
            .args(["-s", "-o", "/dev/null", "-m", "3"])
            .arg(format!("http://{NODE_ADDR}:80/"))
            .status()
            .expect("run curl");
    }

    let counters = dump_counters(&stats_pin);
    eprintln!("xdp_attach: mode skb, counters after {PINGS} pings and {TCP_CONNECTS} TCP connects: {counters:?}");
    let sent = PINGS + TCP_CONNECTS;
    let c = |name| counters.get(name);
    assert!(c("total") >= sent, "total < {sent}: {counters:?}");
    assert!(c("ipv4") >= sent, "ipv4 < {sent}: {counters:?}");
    assert!(c("tcp") >= TCP_CONNECTS, "tcp < {TCP_CONNECTS}: {counters:?}");
    assert_eq!(
        c("total"),
        c("ipv4") + c("ipv6") + c("other") + c("unparsed"),
        "each packet lands in exactly one of ipv4/ipv6/other/unparsed: {counters:?}"
    );
    assert_eq!(c("total"), c("pass"), "without a router Service every packet is passed: {counters:?}");

    let status = router.terminate();
    assert!(status.success(), "router exited with {status} on SIGTERM:\n{}", router.log());
    let link = node.ip(&["link", "show", NODE_IF]);
    assert!(
        !link.contains("prog/xdp") && !link.contains("xdpgeneric"),
        "XDP program still attached after SIGTERM:\n{link}"
    );
    assert!(
        !pin_dir.0.exists(),
        "pin dir {} still exists after SIGTERM: {:?}",
        pin_dir.0.display(),
        fs::read_dir(&pin_dir.0).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
    );
}
