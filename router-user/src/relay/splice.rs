//! The splice(2) relay, the passthrough relay run by userspace: bytes both ways between client and pod with
//! splice(2) through one pipe per direction (socket -> pipe -> socket, the bytes never copied into
//! userspace), with half-close, reset propagation and an idle timeout (HAProxy's `timeout tunnel`). Without
//! pipes it copies through a userspace buffer instead.
//!
//! Splicing into a socket whose peer is gone raises SIGPIPE; the Rust runtime ignores SIGPIPE, so the call
//! fails with EPIPE instead.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::TcpStream;
use tracing::debug;

use super::idle::{ClosedSide, FinTimeouts, IdleTracker};
use super::sys::{self, splice};
use super::RelayStats;

/// Bytes asked of one splice(2) call; the pipe's capacity (64 KiB by default) bounds what moves.
const SPLICE_LEN: usize = 1 << 20;
/// Bytes of the userspace buffer per direction when pipes are not available.
const COPY_BUFFER: usize = 64 * 1024;

/// Relays bytes between `client` and `pod` until both directions have ended.
///
/// A direction ends when its sender closes (FIN): what it sent is delivered, then the receiver gets a FIN
/// (`shutdown(SHUT_WR)`), and the other direction goes on. A reset or error on either socket ends the relay
/// and resets both connections (SO_LINGER 0), returning the error. When no byte has moved either way for
/// `idle_timeout`, both connections are closed and the result is an error of kind
/// [`io::ErrorKind::TimedOut`].
///
/// Uses splice(2) through a pipe per direction; if the pipes cannot be made (descriptor limits), copies
/// through a userspace buffer with the same behaviour.
pub async fn splice_relay(client: TcpStream, pod: TcpStream, idle_timeout: Duration) -> io::Result<RelayStats> {
    splice_relay_closing(client, pod, idle_timeout, None).await
}

/// [`splice_relay`], and once one side has sent its FIN, the other must move a byte within its `fin` timeout
/// (HAProxy's `timeout server-fin` after the client's FIN, `timeout client-fin` after the pod's).
pub async fn splice_relay_closing(
    client: TcpStream,
    pod: TcpStream,
    idle_timeout: Duration,
    fin: Option<FinTimeouts>,
) -> io::Result<RelayStats> {
    let channels = match (Pipe::new(), Pipe::new()) {
        (Ok(up), Ok(down)) => (Channel::Pipe(up), Channel::Pipe(down)),
        (Err(error), _) | (_, Err(error)) => {
            debug!(%error, "no pipes for splice; relaying through a userspace buffer");
            (Channel::buffer(), Channel::buffer())
        }
    };
    run(client, pod, RelayLimits { idle: idle_timeout, fin }, channels).await
}

/// The idle limits of one relay.
#[derive(Clone, Copy, Debug)]
struct RelayLimits {
    /// While both sides are open (the tunnel timeout).
    idle: Duration,
    /// Once one side has closed.
    fin: Option<FinTimeouts>,
}

/// The relay proper, over the given channels (client to pod, pod to client).
async fn run(
    client: TcpStream,
    pod: TcpStream,
    limits: RelayLimits,
    (mut up, mut down): (Channel, Channel),
) -> io::Result<RelayStats> {
    let idle = IdleTracker::new();
    let result = {
        let both = async {
            tokio::try_join!(
                pump(&client, &pod, &mut up, &idle, ClosedSide::Client),
                pump(&pod, &client, &mut down, &idle, ClosedSide::Pod)
            )
        };
        tokio::pin!(both);
        loop {
            let limit = idle.limit(limits.idle, limits.fin);
            tokio::select! {
                result = &mut both => {
                    break result.map(|(to_pod, to_client)| RelayStats { to_pod, to_client });
                }
                () = tokio::time::sleep_until(idle.deadline(limit)) => {
                    if idle.expired(limit) {
                        break Err(io::Error::new(io::ErrorKind::TimedOut, "no bytes either way within the tunnel or FIN timeout"));
                    }
                }
                // The limit changes: wait again with the new one.
                () = idle.half_closed(), if limits.fin.is_some() && !idle.is_half_closed() => {}
            }
        }
    };
    match &result {
        Err(error) if error.kind() != io::ErrorKind::TimedOut => {
            // Pass the failure on as a reset rather than a FIN, so neither end takes a cut stream for a
            // complete one. Failing to set the option only downgrades the reset to a FIN.
            let _ = client.set_zero_linger();
            let _ = pod.set_zero_linger();
        }
        _ => {}
    }
    // Dropping `client` and `pod` closes both connections.
    result
}

/// Moves bytes from `from` to `to` through `channel` until `from` sends FIN, then half-closes `to`.
/// Returns the bytes written to `to`.
async fn pump(
    from: &TcpStream,
    to: &TcpStream,
    channel: &mut Channel,
    idle: &IdleTracker,
    sender: ClosedSide,
) -> io::Result<u64> {
    let mut moved = 0u64;
    loop {
        if channel.is_empty() {
            from.readable().await?;
            match channel.fill(from) {
                Ok(0) => {
                    idle.side_closed(sender);
                    break;
                }
                Ok(_) => idle.touch(),
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e),
            }
        } else {
            to.writable().await?;
            match channel.drain(to) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "socket took no bytes")),
                Ok(n) => {
                    moved += n as u64;
                    idle.touch();
                }
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }
    sys::shutdown_write(to.as_fd())?;
    Ok(moved)
}

/// Whether an error only means "not now".
fn retry(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted)
}

/// Where one direction's bytes wait between reading and writing.
enum Channel {
    /// A kernel pipe holding `held` bytes.
    Pipe(Pipe),
    /// A userspace buffer holding `buf[start..end]`.
    Buffer { buf: Box<[u8]>, start: usize, end: usize },
}

impl Channel {
    fn buffer() -> Self {
        Channel::Buffer { buf: vec![0u8; COPY_BUFFER].into_boxed_slice(), start: 0, end: 0 }
    }

    fn is_empty(&self) -> bool {
        match self {
            Channel::Pipe(pipe) => pipe.held == 0,
            Channel::Buffer { start, end, .. } => start == end,
        }
    }

    /// Reads from `from` into the (empty) channel. `Ok(0)` is end of stream; `WouldBlock` clears `from`'s
    /// read readiness.
    fn fill(&mut self, from: &TcpStream) -> io::Result<usize> {
        match self {
            Channel::Pipe(pipe) => {
                // The pipe is empty, so EAGAIN can only come from the socket, and clearing its readiness is right.
                let n = from.try_io(Interest::READABLE, || splice(from.as_fd(), pipe.write.as_fd(), SPLICE_LEN))?;
                pipe.held += n;
                Ok(n)
            }
            Channel::Buffer { buf, start, end } => {
                let n = from.try_read(buf)?;
                (*start, *end) = (0, n);
                Ok(n)
            }
        }
    }

    /// Writes what the channel holds to `to`, as much as it takes. `WouldBlock` clears `to`'s write readiness.
    fn drain(&mut self, to: &TcpStream) -> io::Result<usize> {
        match self {
            Channel::Pipe(pipe) => {
                let n = to.try_io(Interest::WRITABLE, || splice(pipe.read.as_fd(), to.as_fd(), pipe.held))?;
                pipe.held = pipe.held.saturating_sub(n);
                Ok(n)
            }
            Channel::Buffer { buf, start, end } => {
                let n = to.try_write(buf.get(*start..*end).unwrap_or_default())?;
                *start = (*start + n).min(*end);
                Ok(n)
            }
        }
    }
}

/// A non-blocking pipe and the bytes in it.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    held: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = sys::pipe()?;
        Ok(Pipe { read, write, held: 0 })
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    use super::*;

    const WAIT: Duration = Duration::from_secs(20);
    const LONG_IDLE: Duration = Duration::from_secs(60);

    /// How a test relays: through pipes with splice, or through the userspace fallback.
    #[derive(Debug, Clone, Copy)]
    enum Mode {
        Splice,
        Copy,
    }

    const MODES: [Mode; 2] = [Mode::Splice, Mode::Copy];

    fn channels(mode: Mode) -> (Channel, Channel) {
        match mode {
            Mode::Splice => (Channel::Pipe(Pipe::new().expect("pipe")), Channel::Pipe(Pipe::new().expect("pipe"))),
            Mode::Copy => (Channel::buffer(), Channel::buffer()),
        }
    }

    /// A relay between a fresh loopback client and a fresh loopback pod: (client end, pod end, relay).
    struct Setup {
        client: TcpStream,
        pod: TcpStream,
        relay: JoinHandle<io::Result<RelayStats>>,
    }

    async fn connected_pair(listener: &TcpListener, addr: SocketAddr) -> (TcpStream, TcpStream) {
        let (connected, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (connected.expect("connect"), accepted.expect("accept").0)
    }

    /// `mode` `None` goes through the public [`splice_relay`].
    async fn setup(mode: Option<Mode>, idle: Duration) -> Setup {
        let front = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let backend = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let (client, router_client) = connected_pair(&front, front.local_addr().expect("addr")).await;
        let (router_pod, pod) = connected_pair(&backend, backend.local_addr().expect("addr")).await;
        let relay = match mode {
            Some(mode) => tokio::spawn(run(router_client, router_pod, RelayLimits { idle, fin: None }, channels(mode))),
            None => tokio::spawn(splice_relay(router_client, router_pod, idle)),
        };
        Setup { client, pod, relay }
    }

    async fn finish(relay: JoinHandle<io::Result<RelayStats>>) -> io::Result<RelayStats> {
        tokio::time::timeout(WAIT, relay).await.expect("relay ends in time").expect("relay task")
    }

    async fn read_all(stream: &mut TcpStream) -> Vec<u8> {
        let mut out = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut out)).await.expect("in time").expect("read");
        out
    }

    /// Words of a deterministic stream: xorshift64 from `seed`.
    struct Pattern(u64);

    impl Pattern {
        fn fill(&mut self, buf: &mut [u8]) {
            for word in buf.chunks_exact_mut(8) {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                word.copy_from_slice(&self.0.to_le_bytes());
            }
        }
    }

    /// An order-sensitive checksum over 8-byte words (buffers are multiples of 8).
    fn checksum(mut sum: u64, buf: &[u8]) -> u64 {
        for word in buf.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            sum = (sum.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        sum
    }

    const BULK: usize = 64 << 20;
    const CHUNK: usize = 64 << 10;

    /// Sends `size` (a multiple of CHUNK) pattern bytes from `seed`; returns their checksum.
    async fn send_bulk(mut w: tokio::net::tcp::OwnedWriteHalf, seed: u64, size: usize) -> u64 {
        let mut pattern = Pattern(seed);
        let mut buf = vec![0u8; CHUNK];
        let mut sum = 0;
        for _ in 0..size / CHUNK {
            pattern.fill(&mut buf);
            sum = checksum(sum, &buf);
            w.write_all(&buf).await.expect("write");
        }
        w.shutdown().await.expect("shutdown");
        sum
    }

    /// Reads to EOF, pausing `pause` after each chunk; returns the byte count and checksum.
    async fn receive_bulk(mut r: tokio::net::tcp::OwnedReadHalf, pause: Duration) -> (usize, u64) {
        let mut buf = vec![0u8; CHUNK];
        let (mut total, mut sum) = (0, 0);
        loop {
            // Whole chunks keep the words aligned; a short final chunk would be a failure anyway.
            match r.read_exact(&mut buf).await {
                Ok(_) => {
                    total += CHUNK;
                    sum = checksum(sum, &buf);
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return (total, sum),
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    async fn wait<T>(task: JoinHandle<T>) -> T {
        tokio::time::timeout(Duration::from_secs(120), task).await.expect("in time").expect("task")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn bulk_both_ways_at_once() {
        for mode in MODES {
            let Setup { client, pod, relay } = setup(Some(mode), LONG_IDLE).await;
            let (client_r, client_w) = client.into_split();
            let (pod_r, pod_w) = pod.into_split();
            let up_sent = tokio::spawn(send_bulk(client_w, 1, BULK));
            let down_sent = tokio::spawn(send_bulk(pod_w, 2, BULK));
            let up_got = tokio::spawn(receive_bulk(pod_r, Duration::ZERO));
            let down_got = tokio::spawn(receive_bulk(client_r, Duration::ZERO));
            let (up_sent, down_sent) = (wait(up_sent).await, wait(down_sent).await);
            let (up_got, down_got) = (wait(up_got).await, wait(down_got).await);
            assert_eq!(up_got, (BULK, up_sent), "{mode:?}: client to pod");
            assert_eq!(down_got, (BULK, down_sent), "{mode:?}: pod to client");
            assert_ne!(up_sent, down_sent, "the two streams differ");
            let stats = finish(relay).await.expect("relay");
            assert_eq!(stats, RelayStats { to_pod: BULK as u64, to_client: BULK as u64 }, "{mode:?}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_pod_gets_every_byte() {
        // A small send buffer towards the pod and a pod that reads slowly: writes to the pod come up short or
        // would block while the pipe (or buffer) still holds bytes.
        const SIZE: usize = 8 << 20;
        for mode in MODES {
            let front = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let backend = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let (client, router_client) = connected_pair(&front, front.local_addr().expect("addr")).await;
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.set_send_buffer_size(4096).expect("sndbuf");
            let (connected, accepted) =
                tokio::join!(socket.connect(backend.local_addr().expect("addr")), backend.accept());
            let (router_pod, pod) = (connected.expect("connect"), accepted.expect("accept").0);
            let relay = tokio::spawn(run(
                router_client,
                router_pod,
                RelayLimits { idle: LONG_IDLE, fin: None },
                channels(mode),
            ));
            let (_client_r, client_w) = client.into_split();
            let (pod_r, _pod_w) = pod.into_split();
            let sent = tokio::spawn(send_bulk(client_w, 3, SIZE));
            let got = wait(tokio::spawn(receive_bulk(pod_r, Duration::from_millis(1)))).await;
            assert_eq!(got, (SIZE, wait(sent).await), "{mode:?}");
            drop((_client_r, _pod_w));
            assert_eq!(finish(relay).await.expect("relay").to_pod, SIZE as u64, "{mode:?}");
        }
    }

    #[tokio::test]
    async fn client_half_close_still_gets_the_reply() {
        for mode in [None, Some(Mode::Splice), Some(Mode::Copy)] {
            let Setup { mut client, mut pod, relay } = setup(mode, LONG_IDLE).await;
            client.write_all(b"request").await.expect("write");
            client.shutdown().await.expect("shutdown");
            // The pod sees the request end (FIN) before it answers.
            assert_eq!(read_all(&mut pod).await, b"request", "{mode:?}");
            pod.write_all(b"the reply").await.expect("write");
            pod.shutdown().await.expect("shutdown");
            assert_eq!(read_all(&mut client).await, b"the reply", "{mode:?}");
            let stats = finish(relay).await.expect("relay");
            assert_eq!(stats, RelayStats { to_pod: 7, to_client: 9 }, "{mode:?}");
        }
    }

    #[tokio::test]
    async fn pod_half_close_first() {
        for mode in MODES {
            let Setup { mut client, mut pod, relay } = setup(Some(mode), LONG_IDLE).await;
            pod.write_all(b"bye").await.expect("write");
            pod.shutdown().await.expect("shutdown");
            assert_eq!(read_all(&mut client).await, b"bye", "{mode:?}");
            // The client may still talk to the pod after the pod's FIN.
            client.write_all(b"late words").await.expect("write");
            client.shutdown().await.expect("shutdown");
            assert_eq!(read_all(&mut pod).await, b"late words", "{mode:?}");
            let stats = finish(relay).await.expect("relay");
            assert_eq!(stats, RelayStats { to_pod: 10, to_client: 3 }, "{mode:?}");
        }
    }

    #[tokio::test]
    async fn pod_closes_first() {
        for mode in MODES {
            let Setup { mut client, mut pod, relay } = setup(Some(mode), LONG_IDLE).await;
            client.write_all(b"ping").await.expect("write");
            let mut got = [0u8; 4];
            tokio::time::timeout(WAIT, pod.read_exact(&mut got)).await.expect("in time").expect("read");
            assert_eq!(&got, b"ping");
            pod.write_all(b"pong").await.expect("write");
            drop(pod);
            assert_eq!(read_all(&mut client).await, b"pong", "{mode:?}: reply, then EOF");
            drop(client);
            let stats = finish(relay).await.expect("relay");
            assert_eq!(stats, RelayStats { to_pod: 4, to_client: 4 }, "{mode:?}");
        }
    }

    #[tokio::test]
    async fn idle_timeout_closes_both() {
        let idle = Duration::from_millis(300);
        for mode in MODES {
            let Setup { mut client, mut pod, relay } = setup(Some(mode), idle).await;
            // Traffic more often than the timeout keeps the relay up well past it.
            let mut last_write = std::time::Instant::now();
            for i in 0..6 {
                if i > 0 {
                    tokio::time::sleep(idle / 2).await;
                }
                client.write_all(b"k").await.expect("write");
                last_write = std::time::Instant::now();
            }
            assert!(!relay.is_finished(), "{mode:?}: closed while active");
            let mut got = [0u8; 6];
            tokio::time::timeout(WAIT, pod.read_exact(&mut got)).await.expect("in time").expect("read");
            let err = finish(relay).await.expect_err("idle timeout");
            assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{mode:?}");
            // The relay saw the last byte a moment after it was written; allow for that and for whole milliseconds.
            assert!(last_write.elapsed() >= idle - Duration::from_millis(20), "{mode:?}: closed too soon");
            assert_eq!(read_all(&mut client).await, b"", "{mode:?}: client sees the close");
            assert_eq!(read_all(&mut pod).await, b"", "{mode:?}: pod sees the close");
        }
    }

    #[tokio::test]
    async fn after_a_fin_the_other_side_has_only_its_fin_timeout() {
        let fin = FinTimeouts { client: Duration::from_millis(250), server: Duration::from_millis(150) };
        for (mode, client_closes) in [(Mode::Splice, true), (Mode::Copy, true), (Mode::Splice, false)] {
            let front = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let backend = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let (mut client, router_client) = connected_pair(&front, front.local_addr().expect("addr")).await;
            let (router_pod, mut pod) = connected_pair(&backend, backend.local_addr().expect("addr")).await;
            let limits = RelayLimits { idle: LONG_IDLE, fin: Some(fin) };
            let relay = tokio::spawn(run(router_client, router_pod, limits, channels(mode)));
            let started = std::time::Instant::now();
            let (closing, silent, expected) = match client_closes {
                true => (&mut client, &mut pod, fin.server),
                false => (&mut pod, &mut client, fin.client),
            };
            closing.shutdown().await.expect("shutdown");
            // The silent side sees the FIN, then says nothing: the relay ends after the FIN timeout, not the
            // hour of the tunnel timeout.
            assert_eq!(read_all(silent).await, b"", "{mode:?}: FIN passed on, then the close");
            let err = finish(relay).await.expect_err("FIN timeout");
            assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{mode:?}");
            let took = started.elapsed();
            assert!(took >= expected - Duration::from_millis(20), "{mode:?} {client_closes}: closed after {took:?}");
            assert!(took < expected + Duration::from_secs(5), "{mode:?} {client_closes}: closed after {took:?}");
        }
    }

    /// Expects `stream` to be reset (after whatever it had received).
    async fn expect_reset(stream: &mut TcpStream) {
        let mut sink = Vec::new();
        let result = tokio::time::timeout(WAIT, stream.read_to_end(&mut sink)).await.expect("in time");
        let err = result.expect_err("a reset, not a clean EOF");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    }

    #[tokio::test]
    async fn client_reset_resets_the_pod() {
        for mode in MODES {
            let Setup { client, mut pod, relay } = setup(Some(mode), LONG_IDLE).await;
            client.set_zero_linger().expect("linger");
            drop(client);
            let err = finish(relay).await.expect_err("reset");
            assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{mode:?}: {err}");
            expect_reset(&mut pod).await;
        }
    }

    #[tokio::test]
    async fn pod_reset_resets_the_client() {
        for mode in MODES {
            let Setup { mut client, pod, relay } = setup(Some(mode), LONG_IDLE).await;
            // Even after the client's half-close, the pod's reset reaches it.
            client.shutdown().await.expect("shutdown");
            pod.set_zero_linger().expect("linger");
            drop(pod);
            let err = finish(relay).await.expect_err("reset");
            assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{mode:?}: {err}");
            expect_reset(&mut client).await;
        }
    }
}
