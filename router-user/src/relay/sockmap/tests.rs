//! Loopback tests of the sockmap relay (root only: loading the program needs CAP_BPF and CAP_NET_ADMIN).
//! Each test loads its own copy of the object, so its maps see only its own connections.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::{Refused, SockmapRelay};
use crate::relay::splice::splice_relay;
use crate::relay::sys;
use crate::relay::RelayStats;

const WAIT: Duration = Duration::from_secs(30);
const LONG_IDLE: Duration = Duration::from_secs(60);
const BULK: usize = 64 << 20;
const CHUNK: usize = 64 << 10;

type Relay = JoinHandle<Result<io::Result<RelayStats>, Refused>>;

/// The loaded sockmap relay, or `None` (with the reason printed) when not root.
fn sockmap(test: &str) -> Option<std::sync::Arc<SockmapRelay>> {
    if !sys::is_root() {
        eprintln!("{test}: skipped: loading the sk_skb program needs root");
        return None;
    }
    Some(std::sync::Arc::new(SockmapRelay::load().expect("root can load the sockmap relay")))
}

async fn pair(listener: &TcpListener, addr: SocketAddr) -> (TcpStream, TcpStream) {
    let (connected, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    (connected.expect("connect"), accepted.expect("accept").0)
}

/// Client end, pod end, and the router's two sockets (client side, pod side).
async fn connections() -> (TcpStream, TcpStream, TcpStream, TcpStream) {
    let front = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let back = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let (client, router_client) = pair(&front, front.local_addr().expect("addr")).await;
    let (router_pod, pod) = pair(&back, back.local_addr().expect("addr")).await;
    (client, pod, router_client, router_pod)
}

fn spawn_relay(sockmap: &std::sync::Arc<SockmapRelay>, client: TcpStream, pod: TcpStream, idle: Duration) -> Relay {
    let sockmap = sockmap.clone();
    tokio::spawn(async move { sockmap.relay_in_kernel(client, pod, idle).await })
}

/// Starts the relay and waits until the program has both sockets (a FIN sent earlier would refuse the hand-over).
async fn handed_over(
    sockmap: &std::sync::Arc<SockmapRelay>,
    client: TcpStream,
    pod: TcpStream,
    idle: Duration,
) -> Relay {
    let relay = spawn_relay(sockmap, client, pod, idle);
    let deadline = std::time::Instant::now() + WAIT;
    while sockmap.entries() != (2, 2, 2) {
        assert!(!relay.is_finished(), "relay ended before the hand-over");
        assert!(std::time::Instant::now() < deadline, "hand-over in time");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    relay
}

async fn finish(relay: Relay) -> io::Result<RelayStats> {
    match tokio::time::timeout(WAIT, relay).await.expect("relay ends in time").expect("relay task") {
        Ok(result) => result,
        Err(refused) => panic!("sockmap relay refused: {}", refused.reason),
    }
}

async fn read_all(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut out)).await.expect("in time").expect("read");
    out
}

fn assert_empty(sockmap: &SockmapRelay) {
    assert_eq!(sockmap.entries(), (0, 0, 0), "sockmap relay maps empty afterwards");
}

/// A deterministic byte stream (xorshift64 words) and an order-sensitive checksum over it.
fn fill(state: &mut u64, buf: &mut [u8]) {
    for word in buf.chunks_exact_mut(8) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        word.copy_from_slice(&state.to_le_bytes());
    }
}

fn sum(acc: u64, buf: &[u8]) -> u64 {
    buf.iter().fold(acc, |a, b| (a ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

async fn send(mut w: tokio::net::tcp::OwnedWriteHalf, seed: u64, size: usize) -> u64 {
    let (mut state, mut acc, mut buf) = (seed, 0xcbf2_9ce4_8422_2325, vec![0u8; CHUNK]);
    for _ in 0..size / CHUNK {
        fill(&mut state, &mut buf);
        acc = sum(acc, &buf);
        w.write_all(&buf).await.expect("write");
    }
    w.shutdown().await.expect("shutdown");
    acc
}

async fn receive(mut r: tokio::net::tcp::OwnedReadHalf) -> (usize, u64) {
    let (mut total, mut acc, mut buf) = (0, 0xcbf2_9ce4_8422_2325, vec![0u8; CHUNK]);
    loop {
        let n = r.read(&mut buf).await.expect("read");
        if n == 0 {
            return (total, acc);
        }
        total += n;
        acc = sum(acc, &buf[..n]);
    }
}

async fn wait<T>(task: JoinHandle<T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), task).await.expect("in time").expect("task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bulk_both_ways_with_queued_bytes_first() {
    let Some(sockmap) = sockmap("bulk_both_ways_with_queued_bytes_first") else { return };
    let (client, pod, router_client, router_pod) = connections().await;
    let (client_r, mut client_w) = client.into_split();
    let (pod_r, mut pod_w) = pod.into_split();
    // Bytes already queued on both router sockets before the hand-over: they must arrive first.
    client_w.write_all(&[0xAA; 4096]).await.expect("write");
    pod_w.write_all(&[0xBB; 4096]).await.expect("write");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let relay = handed_over(&sockmap, router_client, router_pod, LONG_IDLE).await;
    let up = tokio::spawn(send(client_w, 1, BULK));
    let down = tokio::spawn(send(pod_w, 2, BULK));
    let up_got = tokio::spawn(receive(pod_r));
    let down_got = tokio::spawn(receive(client_r));
    let (up_sent, down_sent) = (wait(up).await, wait(down).await);
    let up_got = wait(up_got).await;
    let down_got = wait(down_got).await;
    let with_prefix = |byte: u8, seed: u64| {
        let (mut state, mut acc, mut buf) = (seed, sum(0xcbf2_9ce4_8422_2325, &[byte; 4096]), vec![0u8; CHUNK]);
        for _ in 0..BULK / CHUNK {
            fill(&mut state, &mut buf);
            acc = sum(acc, &buf);
        }
        acc
    };
    assert_ne!(up_sent, down_sent);
    assert_eq!(up_got, (BULK + 4096, with_prefix(0xAA, 1)), "client to pod: every byte, in order");
    assert_eq!(down_got, (BULK + 4096, with_prefix(0xBB, 2)), "pod to client: every byte, in order");
    let stats = finish(relay).await.expect("relay");
    assert_eq!(stats, RelayStats { to_pod: BULK as u64 + 4096, to_client: BULK as u64 + 4096 });
    assert_empty(&sockmap);
}

#[tokio::test]
async fn client_half_close_still_gets_the_reply() {
    let Some(sockmap) = sockmap("client_half_close_still_gets_the_reply") else { return };
    let (mut client, mut pod, router_client, router_pod) = connections().await;
    let relay = handed_over(&sockmap, router_client, router_pod, LONG_IDLE).await;
    client.write_all(b"request").await.expect("write");
    client.shutdown().await.expect("shutdown");
    assert_eq!(read_all(&mut pod).await, b"request");
    pod.write_all(b"the reply").await.expect("write");
    pod.shutdown().await.expect("shutdown");
    assert_eq!(read_all(&mut client).await, b"the reply");
    assert_eq!(finish(relay).await.expect("relay"), RelayStats { to_pod: 7, to_client: 9 });
    assert_empty(&sockmap);
}

#[tokio::test]
async fn pod_half_close_first() {
    let Some(sockmap) = sockmap("pod_half_close_first") else { return };
    let (mut client, mut pod, router_client, router_pod) = connections().await;
    let relay = handed_over(&sockmap, router_client, router_pod, LONG_IDLE).await;
    pod.write_all(b"bye").await.expect("write");
    pod.shutdown().await.expect("shutdown");
    assert_eq!(read_all(&mut client).await, b"bye");
    client.write_all(b"late words").await.expect("write");
    client.shutdown().await.expect("shutdown");
    assert_eq!(read_all(&mut pod).await, b"late words");
    assert_eq!(finish(relay).await.expect("relay"), RelayStats { to_pod: 10, to_client: 3 });
    assert_empty(&sockmap);
}

async fn expect_reset(stream: &mut TcpStream) {
    let mut sink = Vec::new();
    let result = tokio::time::timeout(WAIT, stream.read_to_end(&mut sink)).await.expect("in time");
    let err = result.expect_err("a reset, not a clean EOF");
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
}

#[tokio::test]
async fn client_reset_resets_the_pod() {
    let Some(sockmap) = sockmap("client_reset_resets_the_pod") else { return };
    let (client, mut pod, router_client, router_pod) = connections().await;
    let relay = handed_over(&sockmap, router_client, router_pod, LONG_IDLE).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.set_zero_linger().expect("linger");
    drop(client);
    let err = finish(relay).await.expect_err("reset");
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    expect_reset(&mut pod).await;
    assert_empty(&sockmap);
}

#[tokio::test]
async fn pod_reset_resets_the_client() {
    let Some(sockmap) = sockmap("pod_reset_resets_the_client") else { return };
    let (mut client, pod, router_client, router_pod) = connections().await;
    let relay = handed_over(&sockmap, router_client, router_pod, LONG_IDLE).await;
    client.write_all(b"x").await.expect("write");
    client.shutdown().await.expect("shutdown");
    tokio::time::sleep(Duration::from_millis(50)).await;
    pod.set_zero_linger().expect("linger");
    drop(pod);
    let err = finish(relay).await.expect_err("reset");
    assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    expect_reset(&mut client).await;
    assert_empty(&sockmap);
}

#[tokio::test]
async fn idle_timeout_closes_both() {
    let Some(sockmap) = sockmap("idle_timeout_closes_both") else { return };
    let idle = Duration::from_millis(300);
    let (mut client, mut pod, router_client, router_pod) = connections().await;
    let relay = handed_over(&sockmap, router_client, router_pod, idle).await;
    for _ in 0..6 {
        tokio::time::sleep(idle / 2).await;
        client.write_all(b"k").await.expect("write");
    }
    let last_write = std::time::Instant::now();
    assert!(!relay.is_finished(), "closed while active");
    let err = finish(relay).await.expect_err("idle timeout");
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    assert!(last_write.elapsed() >= idle, "closed too soon");
    assert_eq!(read_all(&mut pod).await, b"kkkkkk");
    assert_eq!(read_all(&mut client).await, b"");
    assert_empty(&sockmap);
}

#[tokio::test]
async fn half_closed_client_is_refused_and_the_splice_relay_takes_over() {
    let Some(sockmap) = sockmap("half_closed_client_is_refused") else { return };
    let (mut client, mut pod, router_client, router_pod) = connections().await;
    client.write_all(b"all I have").await.expect("write");
    client.shutdown().await.expect("shutdown");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let refused = match spawn_relay(&sockmap, router_client, router_pod, LONG_IDLE).await.expect("task") {
        Ok(_) => panic!("a half-closed connection cannot be handed to the program"),
        Err(refused) => refused,
    };
    assert_empty(&sockmap);
    let relay = tokio::spawn(splice_relay(refused.client, refused.pod, LONG_IDLE));
    assert_eq!(read_all(&mut pod).await, b"all I have");
    pod.write_all(b"answer").await.expect("write");
    drop(pod);
    assert_eq!(read_all(&mut client).await, b"answer");
    wait(relay).await.expect("splice(2) relay");
}

#[test]
fn setting_off_loads_nothing() {
    assert!(SockmapRelay::start(false).is_none());
}
