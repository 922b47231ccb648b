//! `--xdp-pod-interfaces` end to end (root only): the `router` binary attaches `xdp_front` to the node
//! interface only and `steer_ingress` (tcx ingress, same maps) to the node interface and to a
//! pod-facing one, pins the steering maps with their BTF, lists every attachment in `router xdp
//! status`, lets the pod's other traffic through untouched, and on SIGTERM detaches from both and
//! unpins.
//!
//! Topology: client ns `veth-c` 10.207.0.1/24 <-> node ns `veth-n` 10.207.0.2/24, and pod ns
//! `veth-p` 10.207.1.1/24 <-> node ns `veth-np` 10.207.1.2/24. All traffic stays between these
//! namespaces.

mod xdp_common;

use std::fs;

use router_tests::netns::{veth_pair, NetNs, VethEnd};
use xdp_common::{
    bpftool_dump, dump_counters, is_root, remove_stale_pin_dirs, require_tools, router_binary, xdp_status, PinDir,
    Process,
};

/// Prefix of this test's namespaces and pin dirs (`<prefix>-<pid>-<n>`).
const PREFIX: &str = "rtxpod";
const NODE_IF: &str = "veth-n";
const POD_IF: &str = "veth-np";
const NODE_ADDR: &str = "10.207.0.2";
const POD_SIDE_NODE_ADDR: &str = "10.207.1.2";
const PINGS: u64 = 4;

fn ping(from: &NetNs, to: &str) {
    let out = from
        .command("ping")
        .args(["-c", &PINGS.to_string(), "-i", "0.2", "-W", "2", "-q", to])
        .output()
        .expect("run ping");
    assert!(out.status.success(), "ping {to} failed: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn steer_ingress_runs_on_the_pod_facing_interface_without_xdp_and_detaches_from_both() {
    if !is_root() {
        eprintln!("skipping xdp_pod_interfaces: needs root (network namespaces, XDP, bpffs)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "ping"]);
    NetNs::remove_stale(PREFIX);
    remove_stale_pin_dirs(PREFIX);
    let router_bin = router_binary();

    let client = NetNs::new(PREFIX);
    let node = NetNs::new(PREFIX);
    let pod = NetNs::new(PREFIX);
    veth_pair(
        VethEnd { ns: &client, name: "veth-c", cidr: "10.207.0.1/24" },
        VethEnd { ns: &node, name: NODE_IF, cidr: &format!("{NODE_ADDR}/24") },
    );
    veth_pair(
        VethEnd { ns: &pod, name: "veth-p", cidr: "10.207.1.1/24" },
        VethEnd { ns: &node, name: POD_IF, cidr: &format!("{POD_SIDE_NODE_ADDR}/24") },
    );

    let pin_dir = PinDir::new(PREFIX, 0);
    let work = tempfile::tempdir().expect("temp dir");
    let manifests = work.path().join("manifests");
    fs::create_dir(&manifests).expect("manifests dir");
    let log = work.path().join("router.log");
    let pin = pin_dir.0.display().to_string();
    let manifests = manifests.display().to_string();
    let args: Vec<String> = [
        "--manifests",
        &manifests,
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
        // The node interface again is skipped: it has the program already.
        "--xdp-pod-interfaces",
        &format!("{POD_IF},{NODE_IF}"),
        "--bpf-pin-dir",
        &pin,
    ]
    .map(String::from)
    .to_vec();
    let mut router = Process::spawn(&node, &router_bin, &args, &[("RUST_LOG", "info")], &log);
    let stats_pin = pin_dir.0.join("XDP_STATS");
    router.wait_for("the pinned stats map", || stats_pin.exists());

    let link = node.ip(&["link", "show", NODE_IF]);
    assert!(link.contains("xdpgeneric") && link.contains("prog/xdp"), "xdp_front in skb mode on {NODE_IF}:\n{link}");
    let link = node.ip(&["link", "show", POD_IF]);
    assert!(!link.contains("prog/xdp"), "no XDP program on the pod-facing {POD_IF}:\n{link}");
    let status = xdp_status(&node, &pin_dir.0);
    let attachments = status["attachments"].as_array().expect("attachments");
    let rows = |program: &str| -> Vec<(String, String)> {
        let mut rows: Vec<(String, String)> = attachments
            .iter()
            .filter(|a| a["program"] == program)
            .map(|a| (a["iface"].as_str().unwrap_or("").to_owned(), a["mode"].as_str().unwrap_or("").to_owned()))
            .collect();
        rows.sort();
        rows
    };
    let pair = |iface: &str, mode: &str| (iface.to_owned(), mode.to_owned());
    assert_eq!(rows("xdp_front"), [pair(NODE_IF, "xdpgeneric")], "{status}");
    assert_eq!(rows("steer_ingress"), [pair(NODE_IF, "tcx ingress"), pair(POD_IF, "tcx ingress")], "{status}");
    assert!(pin_dir.0.join(format!("link_tci_{POD_IF}")).exists(), "the pod-facing link pinned");
    let maps: Vec<&str> = status["maps"].as_array().expect("maps").iter().filter_map(|m| m["name"].as_str()).collect();
    for name in ["STEER_PORTS", "STEER_SYNS", "STEER_ANSWERS", "STEER_FLOWS"] {
        assert!(maps.contains(&name), "{name} in the status maps: {status}");
    }
    for name in ["STEER_PORTS", "STEER_SYNS", "STEER_ANSWERS", "STEER_FLOWS", "STEER_EVENTS"] {
        assert!(pin_dir.0.join(name).exists(), "{name} pinned");
    }
    assert!(bpftool_dump(&pin_dir.0.join("STEER_FLOWS")).is_empty(), "no steered flow yet");

    let before = dump_counters(&stats_pin);
    ping(&client, NODE_ADDR);
    let after_client = dump_counters(&stats_pin);
    assert!(after_client.get("ipv4") - before.get("ipv4") >= PINGS, "client pings counted: {after_client:?}");
    // The pod's traffic that is no steered flow's goes on as before (TC_ACT_OK).
    ping(&pod, POD_SIDE_NODE_ADDR);

    let exit = router.terminate();
    assert!(exit.success(), "router exited with {exit} on SIGTERM:\n{}", router.log());
    for iface in [NODE_IF, POD_IF] {
        let link = node.ip(&["link", "show", iface]);
        assert!(!link.contains("prog/xdp"), "XDP program still attached to {iface} after SIGTERM:\n{link}");
        let tc = node.command("bpftool").args(["net", "show", "dev", iface]).output().expect("bpftool net show");
        let tc = String::from_utf8_lossy(&tc.stdout);
        assert!(!tc.contains("steer_ingress"), "steer_ingress still attached to {iface} after SIGTERM:\n{tc}");
    }
    assert!(!pin_dir.0.exists(), "pin dir {} still exists after SIGTERM", pin_dir.0.display());
}
