//! Steered passthrough flows over a matrix of interface settings (root only): TX checksum offload
//! on and off at the client and at the pods, TSO/GSO and GRO on and off, MTU 1500 and 9000, skb
//! and driver mode. Each row carries a 32 MiB download (past slow start, so the pod sends GSO
//! super-packets where it may; the stall this matrix was built for came after 0.3 to 1.2 MiB), a 16 MiB
//! upload and a ClientHello in three segments, byte-exact,
//! with the userspace relay carrying nothing; the row's expected path through the datapath is
//! asserted from `router_xdp_packets_total` (XDP alone when every checksum is complete and every
//! frame fits; the TC hand-off where a sender left checksums partial or sent super-packets).
//! Steering is on by default (no switch); the last case turns it off.
//!
//! Topology: `xdp_common::steer_topology`, the route and sockets of `xdp_common::steer_ends`.

mod xdp_common;

use std::{
    thread,
    time::{Duration, Instant},
};

use xdp_common::steer_ends::{client_hello, exchange, random_file, three_segment_client_hello, Life, Opened, Sender};
use xdp_common::steer_topology::{metric, metric_where, Interfaces};

const PREFIX: &str = "rsto";
const DOWN: u64 = 32 << 20;
const UP: u64 = 16 << 20;

/// Where a row expects the client's packets to be translated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    /// Some were handed by XDP to `steer_ingress` (partial checksums or frames past 1,514 bytes).
    HandedOff,
    /// XDP translated (nearly) all of them: a complete checksum equals the bare pseudo-header sum by
    /// chance once in 65,536 segments, and such a segment goes to `steer_ingress` too.
    Xdp,
}

fn packets(text: &str, counter: &str) -> u64 {
    metric_where(text, "router_xdp_packets_total", &format!("counter=\"{counter}\""))
}

fn row(n: u32, mode: &str, interfaces: Interfaces, path: Path) {
    let label = format!("{mode} mode, {}", interfaces.label());
    let Some(life) = Life::start_in(PREFIX, n, mode, &interfaces, &[]) else { return };
    let work = life.topo.work.path();
    let down_sha = random_file(&work.join("down.bin"), DOWN);
    let up_sha = random_file(&work.join("up.bin"), UP);
    let hello = client_hello(&["http/1.1"]);
    let started = Instant::now();

    let (sent, got, got_sha) = life.transfer(&hello, 1, Sender::Pod, &work.join("down.bin"));
    assert_eq!((sent, got), (DOWN, DOWN), "{label}: download bytes sent and received\n{}", life.router.log());
    assert_eq!(got_sha, down_sha, "{label}: download sha256");
    let (sent, got, got_sha) = life.transfer(&hello, 2, Sender::Client, &work.join("up.bin"));
    assert_eq!((sent, got), (UP, UP), "{label}: upload bytes sent and received\n{}", life.router.log());
    assert_eq!(got_sha, up_sha, "{label}: upload sha256");

    let Opened { mut client, mut pod } = life.open(&three_segment_client_hello(), 3);
    life.wait_steered(3);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    drop((client, pod));
    eprintln!("{label}: {DOWN} B down, {UP} B up and a 3-segment ClientHello in {:?}", started.elapsed());

    life.assert_all_steered();
    let text = life.metrics();
    let counters: Vec<(&str, u64)> = [
        "steer_to_pod",
        "steer_to_client",
        "steer_handoff_partial",
        "steer_handoff_large",
        "tc_steered",
        "tc_steer_drop",
        "steer_answer",
    ]
    .into_iter()
    .map(|name| (name, packets(&text, name)))
    .collect();
    eprintln!("{label}: {counters:?}");
    let count = |name: &str| counters.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v);
    let handed_off = count("steer_handoff_partial") + count("steer_handoff_large");
    // The pods' SYN-ACKs to leg B (three, or more if a pod resent one): recorded and dropped by
    // steer_ingress, and nothing else dropped.
    assert!(count("steer_answer") >= 3, "{label}: the three answers recorded: {counters:?}");
    assert_eq!(count("tc_steer_drop"), count("steer_answer"), "{label}: only answers dropped: {counters:?}");
    assert_eq!(count("steer_to_client"), 0, "{label}: no XDP program on the pod-facing side: {counters:?}");
    assert!(count("tc_steered") > 0, "{label}: the pods' packets went through steer_ingress: {counters:?}");
    match path {
        Path::HandedOff => assert!(handed_off > 0, "{label}: client packets handed to steer_ingress: {counters:?}"),
        Path::Xdp => {
            let by_xdp = count("steer_to_pod");
            assert_eq!(count("steer_handoff_large"), 0, "{label}: no frame too long for XDP: {counters:?}");
            assert!(handed_off * 1000 < by_xdp, "{label}: XDP translated all but chance matches: {counters:?}");
        }
    }
    life.stop();
}

#[test]
fn pods_with_the_kernels_default_offloads_in_skb_mode() {
    row(1, "skb", Interfaces::default(), Path::Xdp);
}

#[test]
fn pods_with_the_kernels_default_offloads_in_driver_mode() {
    row(2, "driver", Interfaces::default(), Path::Xdp);
}

fn client_offload() -> Interfaces {
    Interfaces { client_tx_checksum: true, ..Interfaces::default() }
}

#[test]
fn a_client_with_checksum_offload_too_in_skb_mode() {
    row(3, "skb", client_offload(), Path::HandedOff);
}

#[test]
fn a_client_with_checksum_offload_too_in_driver_mode() {
    row(4, "driver", client_offload(), Path::HandedOff);
}

fn complete_checksums() -> Interfaces {
    Interfaces { pod_tx_checksum: false, pod_segmentation: false, ..Interfaces::default() }
}

#[test]
fn complete_checksums_without_segmentation_stay_in_xdp_in_skb_mode() {
    row(5, "skb", complete_checksums(), Path::Xdp);
}

#[test]
fn complete_checksums_without_segmentation_stay_in_xdp_in_driver_mode() {
    row(6, "driver", complete_checksums(), Path::Xdp);
}

fn jumbo() -> Interfaces {
    Interfaces { mtu: 9000, ..Interfaces::default() }
}

#[test]
fn jumbo_frames_in_skb_mode() {
    row(7, "skb", jumbo(), Path::HandedOff);
}

/// Driver-mode XDP refuses a veth with MTU 9000 (a program without multi-buffer support); `auto`
/// falls back to generic mode by itself and steers there.
#[test]
fn jumbo_frames_in_auto_mode() {
    row(8, "auto", jumbo(), Path::HandedOff);
}

#[test]
fn no_gro_and_no_segmentation_in_skb_mode() {
    let interfaces = Interfaces { gro: false, pod_segmentation: false, ..Interfaces::default() };
    row(9, "skb", interfaces, Path::Xdp);
}

#[test]
fn steering_switched_off_leaves_passthrough_on_the_relay() {
    let Some(life) = Life::start(PREFIX, 10, &[("ROUTER_XDP_STEER_PASSTHROUGH", "false")]) else { return };
    let Opened { mut client, mut pod } = life.open(&client_hello(&["http/1.1"]), 1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    drop((client, pod));
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric(&life.metrics(), "router_passthrough_bytes_total") == 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(100));
    }
    let text = life.metrics();
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 0, "{text}");
    assert!(metric(&text, "router_passthrough_bytes_total") > 0, "the userspace relay carried the flow: {text}");
    life.stop();
}
