//! The pod-facing side found without a switch (root only): with `--xdp-iface` alone, the router starts with
//! `steer_ingress` on the NIC only; the first passthrough connection to a pod attaches it to the veth the
//! node's FIB reaches that pod by (pinned `link_tci_<veth>`) before leg B opens, and the connection is
//! steered. A pod restarted with a new veth of the same name (a new interface index) gets a new link; a
//! veth that goes away loses its pin within the sweep's second; SIGTERM leaves nothing.
//! Topology: `xdp_common::steer_topology`.

mod xdp_common;

use std::{path::Path, time::Duration};

use router_tests::netns::{veth_pair, VethEnd};
use xdp_common::steer_topology::{
    eventually, metric, metrics, Topology, NODE_IF, POD_A, POD_B, POD_SIDE_IFS, PREFIX, STEER_HOST,
};
use xdp_common::{is_root, require_tools, xdp_status, PinDir};

/// `bpftool -j link show pinned <pin>`: the link's JSON, or `None` when there is no such pin.
fn pinned_link(topo: &Topology, pin: &Path) -> Option<serde_json::Value> {
    let out = topo.node.command("bpftool").args(["-j", "link", "show", "pinned"]).arg(pin).output().ok()?;
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("bpftool link JSON"))
}

/// The interfaces `router xdp status` finds `steer_ingress` on (it asks every interface's tcx ingress hook).
fn steer_ingress_on(topo: &Topology, pin_dir: &Path) -> Vec<String> {
    let status = xdp_status(&topo.node, pin_dir);
    let mut ifaces: Vec<String> = status["attachments"]
        .as_array()
        .expect("attachments")
        .iter()
        .filter(|a| a["program"] == "steer_ingress" && a["mode"] == "tcx ingress")
        .map(|a| a["iface"].as_str().unwrap_or_default().to_owned())
        .collect();
    ifaces.sort();
    ifaces
}

/// The interface index of `dev` in the node namespace.
fn if_index(topo: &Topology, dev: &str) -> u64 {
    let text = topo.node.ip(&["-j", "link", "show", dev]);
    let links: serde_json::Value = serde_json::from_str(&text).expect("ip -j link JSON");
    links[0]["ifindex"].as_u64().expect("ifindex")
}

fn sorted<const N: usize>(mut names: [&str; N]) -> [&str; N] {
    names.sort_unstable();
    names
}

/// Steers one connection and returns the pod that answered (`pod-a` or `pod-b`).
fn steer_once(topo: &Topology, steered_before: u64) -> String {
    let (code, status, body, verbose) = topo.curl(STEER_HOST, "/whoami", &[]);
    assert_eq!((code, status), (0, 200), "curl through the router: {verbose}");
    // The router counts the connection once the pod acknowledged the replayed ClientHello (it polls for that
    // every 10 ms), and a small exchange can be over by then: wait for the count.
    let count = || metric(&metrics(&topo.node).expect("metrics"), "router_xdp_steered_connections_total");
    eventually("the connection counted as steered", Duration::from_secs(2), || count() > steered_before);
    let text = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), steered_before + 1, "steered: {text}");
    assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 0, "no fallback: {text}");
    String::from_utf8(body).expect("pod name")
}

#[test]
fn steer_ingress_follows_the_pods_interfaces_as_the_fib_names_them() {
    if !is_root() {
        eprintln!("skipping xdp_steer_discovery: needs root (network namespaces, XDP, bpffs, raw sockets)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "bash"]);
    let mut topo = Topology::new(PREFIX, &[]);
    topo.write_manifests("", 0);
    let pin_dir = PinDir::new(PREFIX, 20);
    let mut router = topo.start_router_logged("skb", &pin_dir.0, "discovery");
    let pod_pin = |dev: &str| pin_dir.0.join(format!("link_tci_{dev}"));
    for dev in POD_SIDE_IFS {
        assert!(!pod_pin(dev).exists(), "no steer_ingress on {dev} before a flow goes to its pod");
    }
    assert_eq!(steer_ingress_on(&topo, &pin_dir.0), [NODE_IF], "the NIC only");

    // The first connection: its pod's veth gets steer_ingress, the other pod's does not.
    let pod = steer_once(&topo, 0);
    let (dev, pod_addr, other) = match pod.as_str() {
        "pod-a" => (POD_SIDE_IFS[0], POD_A, POD_SIDE_IFS[1]),
        "pod-b" => (POD_SIDE_IFS[1], POD_B, POD_SIDE_IFS[0]),
        other => panic!("unexpected pod {other:?}"),
    };
    let link = pinned_link(&topo, &pod_pin(dev)).unwrap_or_else(|| panic!("{dev}'s link pinned\n{}", router.log()));
    assert_eq!(steer_ingress_on(&topo, &pin_dir.0), sorted([NODE_IF, dev]), "the NIC and {dev}: {link}");
    assert!(!pod_pin(other).exists(), "{other}'s pod had no flow");

    // The pod restarted: its veth replaced by a new one of the same name and address (a new index).
    let pod_ns = if pod == "pod-a" { &topo.pods[0] } else { &topo.pods[1] };
    let old_index = if_index(&topo, dev);
    topo.node.ip(&["link", "del", dev]);
    let subnet = pod_addr.rsplit_once('.').expect("dotted address").0;
    veth_pair(
        VethEnd { ns: &topo.node, name: dev, cidr: &format!("{subnet}.1/24") },
        VethEnd { ns: pod_ns, name: &format!("veth-{}", &pod[4..]), cidr: &format!("{pod_addr}/24") },
    );
    pod_ns.ip(&["route", "add", "default", "via", &format!("{subnet}.1")]);
    let new_index = if_index(&topo, dev);
    assert_ne!(old_index, new_index);
    eventually("the gone veth's pin removed", Duration::from_secs(5), || !pod_pin(dev).exists());
    assert_eq!(steer_once(&topo, 1), pod, "the same pod, by the source balance");
    let renewed = pinned_link(&topo, &pod_pin(dev)).unwrap_or_else(|| panic!("new link pinned\n{}", router.log()));
    assert_ne!(renewed["id"], link["id"], "a new link: {renewed}");
    assert_eq!(steer_ingress_on(&topo, &pin_dir.0), sorted([NODE_IF, dev]), "on the new {dev}");

    // The pod gone for good: its link and pin go within the sweep's second.
    topo.node.ip(&["link", "del", dev]);
    eventually("the gone veth's pin removed", Duration::from_secs(5), || !pod_pin(dev).exists());
    assert_eq!(steer_ingress_on(&topo, &pin_dir.0), [NODE_IF]);
    assert!(router.log().contains("pod-facing interface gone"), "the router says so:\n{}", router.log());

    let exit = router.terminate();
    assert!(exit.success(), "router exited with {exit}:\n{}", router.log());
    assert!(!pin_dir.0.exists(), "pin dir {} left after SIGTERM", pin_dir.0.display());
}
