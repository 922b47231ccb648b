//! XDP attach mode names (root only): `--xdp-mode` takes iproute2's and bpftool's word for the skb
//! mode (`generic`) as well as `driver`, and `router xdp status` names the mode the program runs in
//! with the word `ip link show` prints for it (`xdpgeneric`, `xdp` for driver mode).
//!
//! Topology per mode: peer ns `veth-p` 10.204.0.1/24 <-> node ns `veth-n` 10.204.0.2/24; no traffic.

mod xdp_common;

use std::fs;
use std::path::Path;

use router_tests::netns::{veth_pair, NetNs, VethEnd};
use xdp_common::{is_root, remove_stale_pin_dirs, require_tools, router_binary, PinDir, Process};

/// Prefix of this test's namespaces and pin dirs (`<prefix>-<pid>-<n>`).
const PREFIX: &str = "rtxdpm";
const NODE_IF: &str = "veth-n";

#[test]
fn xdp_status_names_the_mode_as_ip_link_does() {
    if !is_root() {
        eprintln!("skipping xdp_mode_names: needs root (network namespaces, XDP, bpffs)");
        return;
    }
    require_tools(&["ip", "nsenter"]);
    NetNs::remove_stale(PREFIX);
    remove_stale_pin_dirs(PREFIX);
    let router_bin = router_binary();

    for (n, (flag, ip_link_word)) in [("generic", "xdpgeneric"), ("driver", "xdp")].into_iter().enumerate() {
        let peer = NetNs::new(PREFIX);
        let node = NetNs::new(PREFIX);
        veth_pair(
            VethEnd { ns: &peer, name: "veth-p", cidr: "10.204.0.1/24" },
            VethEnd { ns: &node, name: NODE_IF, cidr: "10.204.0.2/24" },
        );
        let pin_dir = PinDir::new(PREFIX, n as u32);
        let work = tempfile::tempdir().expect("temp dir");
        let manifests = work.path().join("manifests");
        fs::create_dir(&manifests).expect("manifests dir");
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
            flag,
            "--bpf-pin-dir",
            &pin_dir.0.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        let log = work.path().join(format!("router-{flag}.log"));
        let mut router = Process::spawn(&node, &router_bin, &args, &[("RUST_LOG", "info")], &log);
        let stats_pin = pin_dir.0.join("XDP_STATS");
        router.wait_for("the pinned stats map", || stats_pin.exists());

        let link = node.ip(&["link", "show", NODE_IF]);
        assert_eq!(xdp_word(&link), Some(ip_link_word), "--xdp-mode {flag}: `ip link show` says\n{link}");

        let status = xdp_status(&node, &router_bin, &pin_dir.0, &["--json"]);
        let status: serde_json::Value = serde_json::from_str(&status).expect("status JSON");
        let attachments = status["attachments"].as_array().expect("attachments");
        let front = attachments.iter().find(|a| a["program"] == "xdp_front").expect("xdp_front listed");
        assert_eq!(front["mode"], ip_link_word, "--xdp-mode {flag}: {status}");
        assert_eq!(front["iface"], NODE_IF, "--xdp-mode {flag}: {status}");
        let text = xdp_status(&node, &router_bin, &pin_dir.0, &[]);
        assert!(text.contains(&format!(": {ip_link_word} on {NODE_IF}\n")), "--xdp-mode {flag}: {text}");

        let exit = router.terminate();
        assert!(exit.success(), "router exited with {exit} on SIGTERM:\n{}", router.log());
    }
}

/// The XDP word of `ip link show` (`xdp`, `xdpgeneric`, `xdpoffload`, `xdpmulti`): the flag iproute2
/// prints between the MTU and the qdisc when a program is attached.
fn xdp_word(link: &str) -> Option<&str> {
    link.lines().next()?.split_whitespace().find(|word| word.starts_with("xdp"))
}

/// `router xdp status <extra> --bpf-pin-dir <pin_dir>` in `ns`; its stdout.
fn xdp_status(ns: &NetNs, router_bin: &Path, pin_dir: &Path, extra: &[&str]) -> String {
    let out = ns
        .command(router_bin)
        .args(["xdp", "status"])
        .args(extra)
        .arg("--bpf-pin-dir")
        .arg(pin_dir)
        .output()
        .expect("run router xdp status");
    assert!(out.status.success(), "router xdp status failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 status")
}
