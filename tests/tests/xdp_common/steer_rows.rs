//! One row of the steering matrix (root only), for either address family: a 32 MiB download (past
//! slow start, so a pod sends GSO super-packets where it may), a 16 MiB upload and a ClientHello in
//! three segments through a steered passthrough flow, byte-exact, with the userspace relay carrying
//! nothing and no fallback counted; the row's expected path through the datapath is asserted from
//! `router_xdp_packets_total`, and the flows' `STEER_FLOWS` entries from `bpftool` (their family).
//! Used by `xdp_steer_offloads.rs` (IPv4) and `xdp_steer_ipv6.rs`.

use std::time::Instant;

use super::steer_ends::{client_hello, exchange, random_file, three_segment_client_hello, Front, Life, Opened, Sender};
use super::steer_topology::{metric_where, Family, Interfaces};

const DOWN: u64 = 32 << 20;
const UP: u64 = 16 << 20;

/// Where a row expects the client's packets to be translated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Path {
    /// Some were handed by XDP to `steer_ingress` (partial checksums or frames past 1,514 bytes).
    HandedOff,
    /// XDP translated (nearly) all of them: a complete checksum equals the bare pseudo-header sum by
    /// chance once in 65,536 segments, and such a segment goes to `steer_ingress` too.
    Xdp,
}

fn packets(text: &str, counter: &str) -> u64 {
    metric_where(text, "router_xdp_packets_total", &format!("counter=\"{counter}\""))
}

/// Runs the row in namespaces under `prefix` (test number `n`), XDP in `mode`, the client connecting to
/// the router's :443.
pub fn row(prefix: &str, n: u32, mode: &str, interfaces: Interfaces, path: Path, family: Family) {
    row_through(prefix, n, mode, interfaces, path, family, Front::RouterPort);
}

/// [`row`] with the client's flows entering through `front`.
pub fn row_through(prefix: &str, n: u32, mode: &str, interfaces: Interfaces, path: Path, family: Family, front: Front) {
    let label = format!("{family:?} through {front:?}, {mode} mode, {}", interfaces.label());
    let Some(life) = Life::start_through(prefix, n, mode, &interfaces, family, front, &[]) else { return };
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
    let entries = life.flow_entries();
    assert!(!entries.is_empty(), "{label}: the open flow's entries");
    for entry in &entries {
        assert_eq!(entry["value"]["family"], family.map_value(), "{label}: entries of the flow's family: {entry}");
    }
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
        "nat",
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
    if front == Front::NodePort {
        // Each flow's packets before its steering went through the nodePort stage (DNAT to the router's
        // :443); from then on the steering stage, which runs first, took them.
        let nat = count("nat");
        assert!((3..100).contains(&nat), "{label}: each flow's first packets NATed, its bulk steered: nat {nat}");
    }
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
