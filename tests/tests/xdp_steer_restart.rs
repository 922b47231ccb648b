//! Steered flows survive the router (root only): a large download through a steered passthrough
//! flow keeps going while the router is SIGKILLed (the pinned links keep `xdp_front` and
//! `nat_reverse` attached), `router xdp status` reads the flow from the pins alone, a new router on
//! the same pin dir adopts links and maps (the flow is watched again, a new connection is steered,
//! the datapath's counters go on), the download finishes intact, and SIGTERM detaches everything;
//! pins of another layout are not adopted but replaced.
//! Topology: `xdp_common::steer_topology`.

mod xdp_common;

use std::{fs, path::Path, time::Duration};

use xdp_common::steer_topology::{
    download_content, eventually, metric, metrics, sha256, Topology, DOWNLOAD, DOWNLOAD_BYTES, NODE_IF, PREFIX,
    STEER_HOST,
};
use xdp_common::{dump_counters, file_len, held_tail::HeldTail, is_root, require_tools, xdp_status, PinDir, Process};

/// The download's pace: slow enough that the router dies and a new one usually starts while it runs.
const RATE: &str = "2M";
/// Bytes received before the router is killed.
const KILL_AFTER: u64 = 4 << 20;
/// Bytes kept for after the new router has adopted the flow, however long its start takes.
const TAIL: u64 = 4 << 20;

fn steered_flow_count(status: &serde_json::Value) -> u64 {
    status["steered_flows"]["count"].as_u64().expect("steered_flows.count")
}

fn link_pins(pin_dir: &Path) -> Vec<String> {
    fs::read_dir(pin_dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("link_"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_steered_download_survives_sigkill_and_a_new_router_adopts_the_pins() {
    if !is_root() {
        eprintln!("skipping xdp_steer_restart: needs root (network namespaces, XDP, bpffs, raw sockets)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "sha256sum", "bash"]);
    let mut topo = Topology::new(PREFIX, &[(DOWNLOAD, &download_content())]);
    topo.write_manifests("", 0);
    let pin_dir = PinDir::new(PREFIX, 10);
    let mut first = topo.start_router_logged("skb", &pin_dir.0, "first");
    let mut pinned_now = link_pins(&pin_dir.0);
    pinned_now.sort_unstable();
    let mut expected = vec!["link_tci_veth-n", "link_tcx_veth-n", "link_xdp_veth-n"];
    assert_eq!(pinned_now, expected, "XDP on the NIC only, steer_ingress on the NIC; no pod-facing interface yet");

    // The download, paced, in the background.
    let body = topo.work.path().join("download.out");
    let curl_log = topo.work.path().join("curl.log");
    let curl_args = topo.paced_download(RATE, &body);
    let mut curl = Process::spawn(&topo.client, Path::new("curl"), &curl_args, &[], &curl_log);
    eventually("the download under way", Duration::from_secs(30), || file_len(&body) >= KILL_AFTER);
    let text = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 1, "the download is steered: {text}");
    // The download's pod is reached by one of the pod-facing veths: steer_ingress went there first.
    let mut pinned_now = link_pins(&pin_dir.0);
    pinned_now.sort_unstable();
    let pod_link = pinned_now.iter().find(|pin| pin.starts_with("link_tci_veth-p")).cloned();
    let pod_link = pod_link.unwrap_or_else(|| panic!("steer_ingress on the download pod's interface: {pinned_now:?}"));
    expected.push(pod_link.as_str());
    expected.sort_unstable();
    assert_eq!(pinned_now, expected, "one pod-facing interface found from the FIB");
    let before_kill = dump_counters(&pin_dir.0.join("XDP_STATS"));

    // SIGKILL: nothing runs on exit, the pinned links keep the datapath.
    first.child.kill().expect("SIGKILL the router");
    let _ = first.child.wait();
    let link = topo.node.ip(&["link", "show", NODE_IF]);
    assert!(link.contains("xdpgeneric"), "xdp_front still attached after SIGKILL:\n{link}");
    let pinned = pin_dir.0.join("link_xdp_veth-n");
    let link =
        topo.node.command("bpftool").args(["-j", "link", "show", "pinned"]).arg(&pinned).output().expect("bpftool");
    let link: serde_json::Value = serde_json::from_slice(&link.stdout).expect("bpftool link JSON");
    assert_eq!(link["type"], "xdp", "the pinned link holds xdp_front: {link}");
    let orphaned = xdp_status(&topo.node, &pin_dir.0);
    assert_eq!(steered_flow_count(&orphaned), 1, "status reads the flow from the pins: {orphaned}");
    let received = file_len(&body);
    eventually("the download moving with no router", Duration::from_secs(10), || file_len(&body) > received);
    let tail = HeldTail::new(curl.child.id(), body.clone(), DOWNLOAD_BYTES as u64 - TAIL);

    // A new router adopts the pins.
    let second = topo.start_router_logged("skb", &pin_dir.0, "second");
    let log = second.log();
    assert!(log.contains("adopted=true"), "the front was adopted:\n{log}");
    assert!(log.contains("adopted the steered flows"), "the steering setup took the flow over:\n{log}");
    // The pod-facing link the first router found is adopted, not removed: the download's pod side runs there.
    assert!(link_pins(&pin_dir.0).contains(&pod_link), "{pod_link} adopted: {:?}", link_pins(&pin_dir.0));
    let text = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_flows"), 1, "the adopted flow is watched: {text}");
    let adopted = xdp_status(&topo.node, &pin_dir.0);
    assert_eq!(steered_flow_count(&adopted), 1, "{adopted}");
    assert!(curl.child.try_wait().expect("poll curl").is_none(), "curl ended before its tail: {}", curl.log());
    eprintln!("the download's tail held back: {}", tail.release());

    // A new passthrough connection is steered by the new router; the counters went on.
    let (code, status_code, whoami, verbose) = topo.curl(STEER_HOST, "/whoami", &[]);
    assert_eq!((code, status_code), (0, 200), "curl through the new router: {verbose}\n{}", second.log());
    assert!(whoami == b"pod-a" || whoami == b"pod-b", "body {:?}", String::from_utf8_lossy(&whoami));
    let text = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 1, "steered again: {text}\n{}", second.log());
    assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 0, "{text}");
    let after = dump_counters(&pin_dir.0.join("XDP_STATS"));
    // The pods' segments (partial checksums, GSO) are translated by steer_ingress, the client's by XDP.
    for counter in ["total", "tc_steered", "steer_to_pod"] {
        assert!(after.get(counter) > before_kill.get(counter), "{counter} went on: {before_kill:?} -> {after:?}");
    }

    // The download finishes intact.
    let exit = curl.wait_exit_within(Duration::from_secs(60));
    assert!(exit.success(), "curl exited with {exit}: {}", curl.log());
    let got = fs::read(&body).expect("read the download");
    assert_eq!(got.len(), DOWNLOAD_BYTES, "download length");
    assert_eq!(sha256(&got, topo.work.path()), sha256(&download_content(), topo.work.path()), "download sha256");

    // SIGTERM detaches: no link pin, no XDP program, no tcx program.
    let mut second = second;
    let exit = second.terminate();
    assert!(exit.success(), "router exited with {exit}:\n{}", second.log());
    assert!(link_pins(&pin_dir.0).is_empty(), "link pins left: {:?}", link_pins(&pin_dir.0));
    assert!(!pin_dir.0.exists(), "pin dir {} left after SIGTERM", pin_dir.0.display());
    for dev in [NODE_IF, "veth-pa", "veth-pb"] {
        let link = topo.node.ip(&["link", "show", dev]);
        assert!(!link.contains("xdp"), "XDP still on {dev} after SIGTERM:\n{link}");
    }
    let net = topo.node.command("bpftool").args(["net", "show", "dev", NODE_IF]).output().expect("run bpftool");
    let net = String::from_utf8_lossy(&net.stdout);
    assert!(!net.contains("xdp_front") && !net.contains("nat_reverse"), "programs left on {NODE_IF}:\n{net}");

    // Pins of another layout (here: another conntrack size) are not adopted: the router says so,
    // removes them and starts clean.
    let mut third = topo.start_router_logged("skb", &pin_dir.0, "third");
    third.child.kill().expect("SIGKILL the third router");
    let _ = third.child.wait();
    assert!(!link_pins(&pin_dir.0).is_empty(), "the killed router left its links");
    let mut fourth = topo.start_router_with("skb", &pin_dir.0, "fourth", &["--xdp-conntrack-size", "4096"], &[]);
    let log = fourth.log();
    assert!(log.contains("not adopting the pinned XDP front"), "the router says why it starts clean:\n{log}");
    assert!(log.contains("adopted=false"), "a clean start:\n{log}");
    let (code, status_code, _, verbose) = topo.curl(STEER_HOST, "/whoami", &[]);
    assert_eq!((code, status_code), (0, 200), "curl through the clean router: {verbose}\n{}", fourth.log());
    let exit = fourth.terminate();
    assert!(exit.success(), "router exited with {exit}:\n{}", fourth.log());
    assert!(!pin_dir.0.exists(), "pin dir {} left after SIGTERM", pin_dir.0.display());
}
