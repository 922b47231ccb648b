//! IPv6 passthrough flows steered in the kernel (root only): the rows of the IPv4 matrix
//! (`xdp_common::steer_rows`: a 32 MiB download, a 16 MiB upload and a three-segment ClientHello,
//! byte-exact, nothing on the userspace relay, no fallback, the path through the datapath asserted
//! from the counters and the flows' entries IPv6 in `STEER_FLOWS`) in skb and driver mode, with the
//! pods' TX checksum offload at the kernel's default (on) and off, and with the client's on too (its
//! segments then carry a bare pseudo-header sum, which `xdp_front` must recognise over 128-bit
//! addresses and hand to `steer_ingress`), and at MTU 9000; and a steered IPv6 download that goes on while the router
//! is SIGKILLed, is adopted by the next router on the same pins, and arrives intact.
//!
//! Topology: `xdp_common::steer_topology` (its ULA addresses, fd00:211::/32), the route and sockets of
//! `xdp_common::steer_ends` with the pod listening on fd00:211:1::2 and the client connecting to the
//! node's fd00:211::2; the router listens on both families (`ROUTER_IP_V4_V6_MODE=v4v6`).

mod xdp_common;

use std::{
    io::{Read, Write},
    net::Shutdown,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread,
    time::Duration,
};

use xdp_common::steer_ends::{client_hello, Life, Opened};
use xdp_common::steer_rows::{row, Path};
use xdp_common::steer_topology::{eventually, metric, xorshift_bytes, Family, Interfaces};

const PREFIX: &str = "rst6";

fn pods_without_checksum_offload() -> Interfaces {
    Interfaces { pod_tx_checksum: false, ..Interfaces::default() }
}

fn client_with_checksum_offload() -> Interfaces {
    Interfaces { client_tx_checksum: true, ..Interfaces::default() }
}

#[test]
fn ipv6_pods_with_the_kernels_default_offloads_in_skb_mode() {
    row(PREFIX, 1, "skb", Interfaces::default(), Path::Xdp, Family::V6);
}

#[test]
fn ipv6_pods_with_the_kernels_default_offloads_in_driver_mode() {
    row(PREFIX, 2, "driver", Interfaces::default(), Path::Xdp, Family::V6);
}

#[test]
fn ipv6_pods_without_checksum_offload_in_skb_mode() {
    row(PREFIX, 3, "skb", pods_without_checksum_offload(), Path::Xdp, Family::V6);
}

#[test]
fn ipv6_pods_without_checksum_offload_in_driver_mode() {
    row(PREFIX, 4, "driver", pods_without_checksum_offload(), Path::Xdp, Family::V6);
}

#[test]
fn ipv6_client_with_checksum_offload_in_skb_mode() {
    row(PREFIX, 5, "skb", client_with_checksum_offload(), Path::HandedOff, Family::V6);
}

#[test]
fn ipv6_client_with_checksum_offload_in_driver_mode() {
    row(PREFIX, 6, "driver", client_with_checksum_offload(), Path::HandedOff, Family::V6);
}

/// MTU 9000: the client's segments pass 1,514 bytes and go to `steer_ingress` (generic mode; driver-mode XDP
/// is refused on a veth at this MTU).
#[test]
fn ipv6_jumbo_frames_in_skb_mode() {
    row(PREFIX, 9, "skb", Interfaces { mtu: 9000, ..Interfaces::default() }, Path::HandedOff, Family::V6);
}

/// The paced download's chunk and the pause after each (about 12 MiB/s): the pod sends until the new router has
/// adopted the flow, then stops; at most `MAX_CHUNKS` (60 s at that pace) bound it should adoption never come.
const CHUNK: usize = 256 << 10;
const MAX_CHUNKS: u64 = 3000;
const PAUSE: Duration = Duration::from_millis(20);
/// Bytes received before the router is killed.
const KILL_AFTER: u64 = 4 << 20;

/// The `index`th chunk of a stream a shifted or lost byte would change (xorshift from its index).
fn chunk(index: u64) -> Vec<u8> {
    xorshift_bytes(0x9e37_79b9_7f4a_7c15 ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d), CHUNK)
}

fn survives_sigkill(n: u32, mode: &str) {
    let Some(mut life) = Life::start_family(PREFIX, n, mode, &Interfaces::default(), Family::V6, &[]) else { return };
    let Opened { mut client, mut pod } = life.open(&client_hello(&["http/1.1"]), 1);
    life.wait_steered(1);
    life.assert_all_steered();

    let stop = Arc::new(AtomicBool::new(false));
    let stop_sending = stop.clone();
    let writer = thread::spawn(move || {
        let mut sent = 0;
        while sent < MAX_CHUNKS && !stop_sending.load(Ordering::Relaxed) {
            pod.write_all(&chunk(sent)).expect("the pod sends");
            sent += 1;
            thread::sleep(PAUSE);
        }
        pod.shutdown(Shutdown::Write).expect("the pod's FIN");
        (pod, sent)
    });
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    let reader = thread::spawn(move || {
        let mut got = vec![0u8; CHUNK];
        let mut index = 0;
        loop {
            let filled = read_up_to(&mut client, &mut got).unwrap_or_else(|err| panic!("chunk {index}: {err}"));
            if filled == 0 {
                return index;
            }
            assert_eq!(filled, CHUNK, "chunk {index} arrived whole before the pod's FIN");
            assert!(got == chunk(index), "chunk {index} arrived intact");
            counter.fetch_add(CHUNK as u64, Ordering::Relaxed);
            index += 1;
        }
    });

    let at = |n: u64| {
        let received = received.clone();
        move || received.load(Ordering::Relaxed) >= n
    };
    eventually("the download under way", Duration::from_secs(30), at(KILL_AFTER));
    // SIGKILL: nothing runs on exit; the pinned links keep the datapath running.
    life.router.child.kill().expect("SIGKILL the router");
    let _ = life.router.child.wait();
    let before = received.load(Ordering::Relaxed);
    eventually("the download moving with no router", Duration::from_secs(10), at(before + (2 << 20)));

    let second = life.topo.start_router(mode, &life.pin_dir.0, &[("ROUTER_IP_V4_V6_MODE", "v4v6")]);
    let log = second.log();
    assert!(log.contains("adopted the steered flows"), "the new router took the IPv6 flow over:\n{log}");
    life.router = second;
    assert_eq!(metric(&life.metrics(), "router_xdp_steered_flows"), 1, "the adopted flow is watched");
    let adopted = received.load(Ordering::Relaxed);
    eventually("the download moving after the adoption", Duration::from_secs(10), at(adopted + (2 << 20)));
    stop.store(true, Ordering::Relaxed);

    let (pod, sent) = writer.join().expect("the pod sent its chunks");
    assert!(sent < MAX_CHUNKS, "the pod was still sending when the new router adopted the flow");
    let arrived = reader.join().expect("the whole stream arrived at the client");
    assert_eq!(arrived, sent, "every chunk the pod sent arrived, in order, then its FIN");
    drop(pod);
    eprintln!("{mode} mode: {} B over IPv6 across a SIGKILL and an adoption", sent * CHUNK as u64);
    life.stop();
}

#[test]
fn a_steered_ipv6_download_survives_sigkill_in_skb_mode() {
    survives_sigkill(7, "skb");
}

#[test]
fn a_steered_ipv6_download_survives_sigkill_in_driver_mode() {
    survives_sigkill(8, "driver");
}

/// Reads until `buffer` is full or the stream ends; the bytes read.
fn read_up_to(stream: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match stream.read(&mut buffer[filled..])? {
            0 => break,
            read => filled += read,
        }
    }
    Ok(filled)
}
