//! A router upgrade with the XDP front attached (root only): router A steers a paced passthrough download;
//! router B starts with the same ROUTER_HANDOVER_SOCKET and pin dir, takes A's listeners and adopts A's XDP
//! front while A still runs (its links and maps, the steered flow included); A drains, leaves the front in
//! place and exits on SIGTERM; the download goes on in the kernel and finishes intact, B watches the flow
//! and steers new connections, and B's SIGTERM (no new router) detaches everything.
//! Topology: `xdp_common::steer_topology`.

mod xdp_common;

use std::{fs, path::Path, time::Duration};

use xdp_common::steer_topology::{
    download_content, eventually, metric, metrics, sha256, Topology, DOWNLOAD, DOWNLOAD_BYTES, PREFIX, STEER_HOST,
};
use xdp_common::{dump_counters, file_len, held_tail::HeldTail, is_root, require_tools, PinDir, Process};

/// The download's pace: slow enough that the hand-over usually happens while it runs.
const RATE: &str = "2M";
/// Bytes received before the hand-over.
const HAND_OVER_AFTER: u64 = 4 << 20;
/// Bytes kept for after A has left, however long the hand-over takes.
const TAIL: u64 = 4 << 20;

fn link_pins(pin_dir: &Path) -> Vec<String> {
    let mut pins: Vec<String> = fs::read_dir(pin_dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("link_"))
                .collect()
        })
        .unwrap_or_default();
    pins.sort();
    pins
}

fn wait_logged(router: &Process, what: &str) {
    eventually(&format!("{} to log {what:?}", router.what), Duration::from_secs(40), || router.log().contains(what));
}

#[test]
fn a_steered_download_survives_a_hand_over_to_a_new_router() {
    if !is_root() {
        eprintln!("skipping xdp_handover: needs root (network namespaces, XDP, bpffs, raw sockets)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "sha256sum", "bash"]);
    let mut topo = Topology::new(PREFIX, &[(DOWNLOAD, &download_content())]);
    topo.write_manifests("", 0);
    let pin_dir = PinDir::new(PREFIX, 30);
    let socket = topo.work.path().join("handover.sock");
    let handover = ["--handover-socket", socket.to_str().expect("path")];
    let mut a = topo.start_router_with("skb", &pin_dir.0, "a", &handover, &[]);

    let body = topo.work.path().join("download.out");
    let curl_args = topo.paced_download(RATE, &body);
    let mut curl = Process::spawn(&topo.client, Path::new("curl"), &curl_args, &[], &topo.work.path().join("curl.log"));
    eventually("the download under way", Duration::from_secs(30), || file_len(&body) >= HAND_OVER_AFTER);
    let tail = HeldTail::new(curl.child.id(), body.clone(), DOWNLOAD_BYTES as u64 - TAIL);
    let text = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 1, "the download is steered: {text}");
    let pins_before = link_pins(&pin_dir.0);
    let before = dump_counters(&pin_dir.0.join("XDP_STATS"));

    // B takes over while A runs.
    let b = topo.start_router_with("skb", &pin_dir.0, "b", &handover, &[]);
    wait_logged(&b, "the previous router released its listeners");
    let log = b.log();
    assert!(log.contains("adopted=true"), "B adopted the front A still ran:\n{log}");
    assert!(log.contains("adopted the steered flows"), "B watches the steered flow:\n{log}");
    wait_logged(&a, "handed over and drained");
    let exit = a.terminate();
    assert!(exit.success(), "router A exited with {exit}:\n{}", a.log());
    assert!(a.log().contains("XDP front left in place"), "{}", a.log());
    assert_eq!(link_pins(&pin_dir.0), pins_before, "A's exit removed no link");
    // Read before the release: a client let go after a pause may take its tail at once (curl's rate limit
    // catches up on the time it was stopped).
    assert!(curl.child.try_wait().expect("poll curl").is_none(), "curl ended before its tail: {}", curl.log());
    let received = file_len(&body);
    eprintln!("the download's tail held back: {}", tail.release());
    eventually("the download moving after A left", Duration::from_secs(10), || file_len(&body) > received);

    // B serves, steers new connections, and the datapath's counters went on.
    let (code, status, whoami, verbose) = topo.curl(STEER_HOST, "/whoami", &[]);
    assert_eq!((code, status), (0, 200), "curl through B: {verbose}\n{}", b.log());
    assert!(whoami == b"pod-a" || whoami == b"pod-b", "body {:?}", String::from_utf8_lossy(&whoami));
    let text = metrics(&topo.node).expect("metrics");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 1, "B steered it: {text}");
    assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 0, "{text}");
    let after = dump_counters(&pin_dir.0.join("XDP_STATS"));
    assert!(after.get("tc_steered") > before.get("tc_steered"), "{before:?} -> {after:?}");

    let exit = curl.wait_exit_within(Duration::from_secs(60));
    assert!(exit.success(), "curl exited with {exit}: {}", curl.log());
    let got = fs::read(&body).expect("read the download");
    assert_eq!(got.len(), DOWNLOAD_BYTES, "download length");
    assert_eq!(sha256(&got, topo.work.path()), sha256(&download_content(), topo.work.path()), "download sha256");

    // B stops with no successor: it detaches and unpins.
    let mut b = b;
    let exit = b.terminate();
    assert!(exit.success(), "router B exited with {exit}:\n{}", b.log());
    assert!(link_pins(&pin_dir.0).is_empty(), "link pins left: {:?}", link_pins(&pin_dir.0));
    assert!(!socket.exists(), "B withdrew its offer");
}
