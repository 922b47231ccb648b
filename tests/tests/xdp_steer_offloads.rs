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
//! Topology: `xdp_common::steer_topology`, the route and sockets of `xdp_common::steer_ends`, the row
//! itself `xdp_common::steer_rows` (shared with `xdp_steer_ipv6.rs`).

mod xdp_common;

use std::{
    thread,
    time::{Duration, Instant},
};

use xdp_common::steer_ends::{client_hello, exchange, Life, Opened};
use xdp_common::steer_rows::Path;
use xdp_common::steer_topology::{metric, Family, Interfaces};

const PREFIX: &str = "rsto";

fn row(n: u32, mode: &str, interfaces: Interfaces, path: Path) {
    xdp_common::steer_rows::row(PREFIX, n, mode, interfaces, path, Family::V4);
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
