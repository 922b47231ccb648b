//! The life of a steered passthrough flow (root only): large transfers both ways, a ClientHello in
//! three TCP segments, half-close each way (the flow counted in flight at its pod until it ends), a RST
//! from either side, idle entries aging out, and a full flow map falling back to the userspace relay.
//!
//! Topology: `xdp_common::steer_topology` (client, node with the router and xdp_front in skb mode,
//! two pods). These tests add the route `life.example.com`, passthrough to a plain TCP listener of
//! this test process inside pod-a's namespace (:9000): the client sends a real ClientHello (rustls'
//! first flight) and then raw bytes, so each test holds both ends of the flow as sockets and can
//! half-close or reset either. The flow's two `STEER_FLOWS` entries are read from the pinned map.
//! The tests run one at a time (a lock): the sweep's timings are measured against the wall clock.

mod xdp_common;

use std::{
    io::Write,
    net::Shutdown,
    thread,
    time::{Duration, Instant},
};

use xdp_common::flow_map_fill::{self, PinnedMap};
use xdp_common::in_netns::reset;
use xdp_common::steer_ends::{
    client_hello, exchange, expect_eof, expect_reset, random_file, three_segment_client_hello, Life, Opened, Sender,
};
use xdp_common::steer_topology::{eventually, metric, metric_where};

const PREFIX: &str = "rstl";
/// The sweep's lingers (`relay::steer::sweep`) and its period.
const FIN_LINGER: Duration = Duration::from_secs(5);
const RST_LINGER: Duration = Duration::from_secs(1);
const SWEEP_EVERY: Duration = Duration::from_secs(1);

#[test]
fn a_gib_down_and_256_mib_up_arrive_intact() {
    const DOWN: u64 = 1 << 30;
    const UP: u64 = 256 << 20;
    let Some(life) = Life::start(PREFIX, 1, &[]) else { return };
    let work = life.topo.work.path();
    let down_sha = random_file(&work.join("down.bin"), DOWN);
    let up_sha = random_file(&work.join("up.bin"), UP);
    let hello = client_hello(&["http/1.1"]);

    // 1 GiB from the pod, then its FIN.
    let started = Instant::now();
    let (sent, got, got_sha) = life.transfer(&hello, 1, Sender::Pod, &work.join("down.bin"));
    assert_eq!((sent, got), (DOWN, DOWN), "bytes sent and received");
    assert_eq!(got_sha, down_sha, "download sha256");
    let down_took = started.elapsed();

    // 256 MiB from the client, then its FIN.
    let started = Instant::now();
    let (sent, got, got_sha) = life.transfer(&hello, 2, Sender::Client, &work.join("up.bin"));
    assert_eq!((sent, got), (UP, UP), "bytes sent and received");
    assert_eq!(got_sha, up_sha, "upload sha256");
    let up_took = started.elapsed();
    eprintln!("1 GiB down in {down_took:?}, 256 MiB up in {up_took:?}");
    assert!(down_took < Duration::from_secs(240) && up_took < Duration::from_secs(120), "transfers took too long");
    life.assert_all_steered();
    life.stop();
}

#[test]
fn a_client_hello_in_three_segments_is_steered() {
    let Some(life) = Life::start(PREFIX, 2, &[]) else { return };
    let hello = three_segment_client_hello();
    let Opened { mut client, mut pod } = life.open(&hello, 3);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    assert_eq!(life.flow_entries().len(), 2, "one flow, two directions");
    drop((client, pod));
    life.assert_all_steered();
    life.stop();
}

#[test]
fn half_close_each_way_keeps_the_other_direction_open() {
    let Some(life) = Life::start(PREFIX, 3, &[]) else { return };
    let hello = client_hello(&["http/1.1"]);
    let rest: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 + i / 251) as u8).collect();

    // The client closes its sending side first and still receives the rest.
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    // The router's sockets let go of the flow, but it still counts for its pod, as a relayed one does.
    assert_eq!(life.pod_sessions(), 1, "a steered flow is in flight at its pod");
    exchange(&mut client, &mut pod, b"request");
    client.shutdown(Shutdown::Write).expect("client FIN");
    expect_eof(&mut pod, "the pod sees the client's FIN");
    thread::sleep(2 * SWEEP_EVERY);
    assert_eq!(life.flow_entries().len(), 2, "a half-closed flow stays steered");
    exchange(&mut pod, &mut client, &rest);
    pod.shutdown(Shutdown::Write).expect("pod FIN");
    expect_eof(&mut client, "the client sees the pod's FIN");
    let ended = Instant::now();
    drop((client, pod));
    life.assert_removed_between(ended, FIN_LINGER - SWEEP_EVERY, FIN_LINGER + 4 * SWEEP_EVERY, "client FIN first");
    assert_eq!(life.pod_sessions(), 0, "no longer in flight once the sweep removed it");

    // The pod closes first and the client can still send.
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(2);
    exchange(&mut pod, &mut client, b"banner");
    pod.shutdown(Shutdown::Write).expect("pod FIN");
    expect_eof(&mut client, "the client sees the pod's FIN");
    thread::sleep(2 * SWEEP_EVERY);
    assert_eq!(life.flow_entries().len(), 2, "a half-closed flow stays steered");
    exchange(&mut client, &mut pod, &rest);
    client.shutdown(Shutdown::Write).expect("client FIN");
    expect_eof(&mut pod, "the pod sees the client's FIN");
    let ended = Instant::now();
    drop((client, pod));
    life.assert_removed_between(ended, FIN_LINGER - SWEEP_EVERY, FIN_LINGER + 4 * SWEEP_EVERY, "pod FIN first");
    life.assert_all_steered();
    life.stop();
}

#[test]
fn a_reset_from_either_side_reaches_the_other() {
    let Some(life) = Life::start(PREFIX, 4, &[]) else { return };
    let hello = client_hello(&["http/1.1"]);

    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"hello");
    reset(client);
    let ended = Instant::now();
    expect_reset(&mut pod, "the pod sees the client's RST");
    drop(pod);
    life.assert_removed_between(ended, Duration::ZERO, RST_LINGER + 3 * SWEEP_EVERY, "client RST");

    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(2);
    exchange(&mut pod, &mut client, b"hello");
    reset(pod);
    let ended = Instant::now();
    expect_reset(&mut client, "the client sees the pod's RST");
    drop(client);
    life.assert_removed_between(ended, Duration::ZERO, RST_LINGER + 3 * SWEEP_EVERY, "pod RST");
    life.assert_all_steered();
    life.stop();
}

#[test]
fn idle_steered_flows_age_out_at_the_tunnel_timeout() {
    const TUNNEL_TIMEOUT: Duration = Duration::from_secs(4);
    let Some(life) = Life::start(PREFIX, 5, &[("ROUTER_DEFAULT_TUNNEL_TIMEOUT", "4s")]) else { return };
    let hello = client_hello(&["http/1.1"]);
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    let quiet = Instant::now();
    // `last_seen_ns` moves at most once a second, so the entry may look a second older than it is.
    life.assert_removed_between(quiet, TUNNEL_TIMEOUT - 2 * SWEEP_EVERY, TUNNEL_TIMEOUT + 4 * SWEEP_EVERY, "idle flow");
    // The sweep ends leg B with a RST, as the userspace relay's tunnel timeout closes the pod's side.
    expect_reset(&mut pod, "the pod after the age-out");
    // R was retired when the flow was steered: with the entries gone, the node's kernel answers the
    // client's next segment with a RST, so the client learns the flow ended.
    client.write_all(b"late").expect("write after the age-out");
    expect_reset(&mut client, "the client after the age-out");
    drop((client, pod));
    life.assert_all_steered();
    life.stop();
}

#[test]
fn a_full_flow_map_falls_back_to_the_userspace_relay() {
    let Some(life) = Life::start(PREFIX, 6, &[]) else { return };
    let hello = client_hello(&["http/1.1"]);
    let map = PinnedMap::open(&life.pin_dir.0.join("STEER_FLOWS"));
    let filled = flow_map_fill::fill(&map);
    assert!(filled > 0, "the map took filler entries");

    let Opened { mut client, mut pod } = life.open(&hello, 1);
    exchange(&mut client, &mut pod, b"ping");
    exchange(&mut pod, &mut client, b"pong");
    let text = life.metrics();
    assert_eq!(metric_where(&text, "router_xdp_steer_fallbacks_total", "reason=\"map_full\""), 1, "{text}");
    assert_eq!(metric(&text, "router_xdp_steer_fallbacks_total"), 1, "{text}");
    assert_eq!(metric(&text, "router_xdp_steered_connections_total"), 0, "{text}");
    client.shutdown(Shutdown::Write).expect("client FIN");
    expect_eof(&mut pod, "the pod sees the client's FIN");
    pod.shutdown(Shutdown::Write).expect("pod FIN");
    expect_eof(&mut client, "the client sees the pod's FIN");
    drop((client, pod));
    eventually("the relayed bytes counted", Duration::from_secs(10), || {
        metric(&life.metrics(), "router_passthrough_bytes_total") >= (hello.len() + 8) as u64
    });

    // Room again: the next connection is steered.
    flow_map_fill::remove(&map, 0, 16);
    let Opened { mut client, mut pod } = life.open(&hello, 1);
    life.wait_steered(1);
    exchange(&mut client, &mut pod, b"ping");
    drop((client, pod));
    flow_map_fill::remove(&map, 16, filled);
    life.stop();
}
