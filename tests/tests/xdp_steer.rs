//! Passthrough steering through the XDP datapath, end to end (root only): a passthrough route's
//! connection runs between the client and a pod without the router relaying a byte.
//!
//! Topology and routes: `xdp_common::steer_topology` (client, node with the router and xdp_front in
//! skb mode, two TLS pods). Needs the steering datapath (`--xdp-pod-interfaces`, STEER_* maps).

mod xdp_common;

use std::time::Duration;

use xdp_common::steer_topology::{
    download_content, eventually, metric, metrics, sha256, Topology, DOWNLOAD, DOWNLOAD_BYTES, EDGE_HOST, PREFIX,
    STEER_HOST,
};
use xdp_common::{is_root, require_tools, PinDir};

fn steer_case(mode: &str, n: u32) {
    if !is_root() {
        eprintln!("skipping xdp_steer: needs root (network namespaces, XDP, bpffs, raw sockets)");
        return;
    }
    require_tools(&["ip", "nsenter", "bpftool", "curl", "ethtool", "openssl", "sha256sum", "bash"]);
    let content = download_content();
    let mut topo = Topology::new(PREFIX, &[(DOWNLOAD, &content)]);
    topo.write_manifests("", 0);
    let pin_dir = PinDir::new(PREFIX, n);
    let mut router = topo.start_router(mode, &pin_dir.0, &[]);
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
    assert_eq!(sha256(&body, topo.work.path()), sha256(&content, topo.work.path()), "download sha256");
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
