//! One connection in the sockmap relay: handing it to the program (or refusing), then watching both
//! sockets for FIN, errors and idleness until both directions have ended. The steps and why they are
//! ordered so are in the parent module's comment.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use super::maps::RedirectMaps;
use super::Refused;
use crate::relay::idle::IdleTracker;
use crate::relay::sys::{self, Epoll};
use crate::relay::RelayStats;

/// Bytes per read while moving what was queued before the program took over.
const DRAIN_BUFFER: usize = 16 * 1024;
/// First and longest pause between checks that a direction's bytes have all reached the peer.
const FLUSH_FIRST: Duration = Duration::from_millis(1);
const FLUSH_MAX: Duration = Duration::from_millis(50);
/// Longest wait for redirected bytes to reach the peer when the hand-over is abandoned during set-up.
const UNDO_WAIT: Duration = Duration::from_secs(2);
/// Shortest interval between idle checks (the interval is an eighth of the idle timeout, so a connection
/// is closed at most 12.5% later than its timeout).
const IDLE_CHECK_MIN: Duration = Duration::from_millis(10);

/// One direction, named by its sending socket (0 client, 1 pod); the receiving socket is the other one.
#[derive(Debug, Clone, Copy, Default)]
struct Direction {
    cookie: u64,
    /// Bytes userspace had consumed from the sender when the program took over.
    consumed: u64,
    /// Bytes userspace moved to the receiver while setting up.
    drained: u64,
    /// `sys::bytes_written` of the receiver before any of this direction's bytes.
    receiver_base: u64,
    /// The sender is in `SOCKMAP_SOCKS`.
    redirecting: bool,
    /// FIN seen from the sender.
    eof: bool,
    /// FIN passed on to the receiver.
    done: bool,
}

/// How set-up ended when it did not hand the connection to the program.
enum SetupEnd {
    /// Hand both connections back.
    Refuse(io::Error),
    /// A connection failed: reset both and report.
    Fail(io::Error),
}

/// Removes every entry of both sockets when dropped, on every exit path.
struct Entries<'a> {
    maps: &'a RedirectMaps,
    cookies: Vec<u64>,
}

impl Drop for Entries<'_> {
    fn drop(&mut self) {
        for cookie in &self.cookies {
            self.maps.remove_all(*cookie);
        }
    }
}

pub(super) async fn run(
    maps: &RedirectMaps,
    client: TcpStream,
    pod: TcpStream,
    idle_timeout: Duration,
) -> Result<io::Result<RelayStats>, Refused> {
    let mut entries = Entries { maps, cookies: Vec::with_capacity(2) };
    let mut dirs = [Direction::default(); 2];
    match setup(maps, &mut entries, &mut dirs, [&client, &pod]).await {
        Ok(()) => {}
        Err(SetupEnd::Refuse(reason)) => {
            return match undo(maps, &dirs, [client.as_fd(), pod.as_fd()]).await {
                Ok(()) => {
                    drop(entries);
                    Err(Refused { client, pod, reason })
                }
                Err(error) => Ok(Err(reset([client.as_fd(), pod.as_fd()], error))),
            };
        }
        Err(SetupEnd::Fail(error)) => return Ok(Err(reset([client.as_fd(), pod.as_fd()], error))),
    }
    // From here on the runtime must not watch the sockets: the program's data-ready wake-ups would reach it.
    let sockets = match (client.into_std(), pod.into_std()) {
        (Ok(client), Ok(pod)) => [client, pod],
        (Err(error), _) | (_, Err(error)) => return Ok(Err(error)),
    };
    let fds = [sockets[0].as_fd(), sockets[1].as_fd()];
    let result = watch(maps, &mut dirs, fds, idle_timeout).await;
    if let Err(error) = &result {
        if error.kind() != io::ErrorKind::TimedOut {
            for fd in fds {
                let _ = sys::zero_linger(fd);
            }
        }
    }
    let stats = RelayStats {
        to_pod: dirs[0].drained + counted(maps, dirs[0].cookie),
        to_client: dirs[1].drained + counted(maps, dirs[1].cookie),
    };
    drop(entries);
    // Dropping `sockets` closes both connections.
    Ok(result.map(|()| stats))
}

fn counted(maps: &RedirectMaps, cookie: u64) -> u64 {
    maps.redirected(cookie).unwrap_or(0)
}

/// Steps 1 and 2 of the parent module's comment. `dirs` is filled as far as set-up got.
async fn setup(
    maps: &RedirectMaps,
    entries: &mut Entries<'_>,
    dirs: &mut [Direction; 2],
    streams: [&TcpStream; 2],
) -> Result<(), SetupEnd> {
    let refuse =
        |what: &str, error: io::Error| SetupEnd::Refuse(io::Error::new(error.kind(), format!("{what}: {error}")));
    let map_refuse = |error: super::SockmapError| SetupEnd::Refuse(io::Error::other(error));
    for stream in streams {
        if !sys::established(stream.as_fd()).map_err(|e| refuse("tcp_info", e))? {
            return Err(SetupEnd::Refuse(io::Error::new(io::ErrorKind::NotConnected, "connection not established")));
        }
    }
    let cookies = [
        sys::cookie(streams[0].as_fd()).map_err(|e| refuse("SO_COOKIE", e))?,
        sys::cookie(streams[1].as_fd()).map_err(|e| refuse("SO_COOKIE", e))?,
    ];
    entries.cookies.extend(cookies);
    for (i, dir) in dirs.iter_mut().enumerate() {
        dir.cookie = cookies[i];
        maps.set_peer(cookies[i], cookies[1 - i]).map_err(map_refuse)?;
    }
    for (i, stream) in streams.iter().enumerate() {
        maps.add_target(cookies[i], stream.as_fd()).map_err(map_refuse)?;
    }
    for i in 0..2 {
        let (from, to) = (streams[i], streams[1 - i]);
        dirs[i].receiver_base = sys::bytes_written(to.as_fd()).map_err(|e| refuse("send counters", e))?;
        dirs[i].drained = drain(from, to, &mut dirs[i]).await?;
        dirs[i].consumed = sys::bytes_consumed(from.as_fd()).map_err(|e| refuse("receive counters", e))?;
        maps.start_redirect(cookies[i], from.as_fd()).map_err(map_refuse)?;
        dirs[i].redirecting = true;
        sys::kick(from.as_fd()).map_err(|e| refuse("SO_RCVLOWAT", e))?;
    }
    Ok(())
}

/// Moves the bytes queued on `from` to `to` in userspace; returns how many. A FIN already queued refuses
/// the hand-over (the kernel does not take half-closed sockets); the splice(2) relay reads it again.
async fn drain(from: &TcpStream, to: &TcpStream, dir: &mut Direction) -> Result<u64, SetupEnd> {
    let mut buf = vec![0u8; DRAIN_BUFFER];
    let mut moved = 0u64;
    loop {
        let n = match sys::recv_now(from.as_fd(), &mut buf) {
            Ok(0) => {
                dir.drained = moved;
                return Err(SetupEnd::Refuse(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "FIN before the hand-over to the program",
                )));
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(moved),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SetupEnd::Fail(e)),
        };
        let mut written = 0;
        while written < n {
            to.writable().await.map_err(SetupEnd::Fail)?;
            match to.try_write(buf.get(written..n).unwrap_or_default()) {
                Ok(w) => written += w,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
                Err(e) => return Err(SetupEnd::Fail(e)),
            }
        }
        moved += n as u64;
        dir.drained = moved;
    }
}

/// Abandons a half-made hand-over: stops the program on both sockets, then waits (bounded) until what it
/// redirected has reached the receivers, so that the splice(2) relay continues with nothing missing.
async fn undo(maps: &RedirectMaps, dirs: &[Direction; 2], fds: [BorrowedFd<'_>; 2]) -> io::Result<()> {
    for dir in dirs.iter().filter(|d| d.redirecting) {
        maps.stop_redirect(dir.cookie);
    }
    let deadline = Instant::now() + UNDO_WAIT;
    let mut pause = FLUSH_FIRST;
    for (i, dir) in dirs.iter().enumerate().filter(|(_, d)| d.redirecting) {
        while !delivered(maps, dir, fds[1 - i])? {
            if Instant::now() >= deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "redirected bytes did not reach the peer"));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(FLUSH_MAX);
        }
    }
    Ok(())
}

/// Whether every byte redirected for `dir` is in the receiver's send queue (or sent).
fn delivered(maps: &RedirectMaps, dir: &Direction, receiver: BorrowedFd<'_>) -> io::Result<bool> {
    let redirected = maps.redirected(dir.cookie).map_err(io::Error::other)?;
    Ok(sys::bytes_written(receiver)? >= dir.receiver_base + dir.drained + redirected)
}

/// Whether everything the sender received before its FIN has gone through the program and reached the
/// receiver. Only asked after the FIN.
fn flushed(maps: &RedirectMaps, dir: &Direction, sender: BorrowedFd<'_>, receiver: BorrowedFd<'_>) -> io::Result<bool> {
    let redirected = maps.redirected(dir.cookie).map_err(io::Error::other)?;
    // `bytes_received` counts the FIN's sequence number too.
    if sys::bytes_received(sender)? != dir.consumed + redirected + 1 {
        return Ok(false);
    }
    Ok(sys::bytes_written(receiver)? >= dir.receiver_base + dir.drained + redirected)
}

/// Sets SO_LINGER 0 on both so that closing them resets them; returns `error`.
fn reset(fds: [BorrowedFd<'_>; 2], error: io::Error) -> io::Error {
    for fd in fds {
        let _ = sys::zero_linger(fd);
    }
    error
}

/// Steps 3 and 4: until both directions are done, a socket error, an unexpected hang-up or the idle timeout.
async fn watch(
    maps: &RedirectMaps,
    dirs: &mut [Direction; 2],
    fds: [BorrowedFd<'_>; 2],
    idle_timeout: Duration,
) -> io::Result<()> {
    let epoll = Epoll::new()?;
    for (i, fd) in fds.iter().enumerate() {
        epoll.add(*fd, i as u64, true)?;
    }
    let epoll = epoll.into_async()?;
    let check = (idle_timeout / 8).max(IDLE_CHECK_MIN);
    let mut last_total = 0;
    let idle = IdleTracker::new();
    let mut next_check = Instant::now() + check;
    let mut pause = FLUSH_FIRST;
    let mut watched = [true, true];
    loop {
        if dirs.iter().all(|d| d.done) {
            return Ok(());
        }
        let flushing = dirs.iter().any(|d| d.eof && !d.done);
        tokio::select! {
            guard = epoll.readable() => {
                let mut guard = guard?;
                let events = epoll.get_ref().pending()?;
                if events.is_empty() {
                    guard.clear_ready();
                    continue;
                }
                for event in events {
                    let i = usize::from(event.token == 1);
                    if event.error {
                        let error = sys::take_error(fds[i])?;
                        return Err(error.unwrap_or_else(|| io::ErrorKind::ConnectionReset.into()));
                    }
                    if event.read_closed && !dirs[i].eof {
                        dirs[i].eof = true;
                        epoll.get_ref().modify(fds[i], i as u64, false)?;
                        pause = FLUSH_FIRST;
                    } else if event.hang_up {
                        return Err(io::Error::new(io::ErrorKind::ConnectionReset, "connection closed"));
                    }
                }
            }
            () = tokio::time::sleep(pause), if flushing => {
                for i in 0..2 {
                    if dirs[i].eof && !dirs[i].done && flushed(maps, &dirs[i], fds[i], fds[1 - i])? {
                        sys::shutdown_write(fds[1 - i])?;
                        dirs[i].done = true;
                    }
                }
                pause = (pause * 2).min(FLUSH_MAX);
            }
            () = tokio::time::sleep_until(next_check) => {
                next_check = Instant::now() + check;
                let total = counted(maps, dirs[0].cookie) + counted(maps, dirs[1].cookie);
                if last_total != total {
                    last_total = total;
                    idle.touch();
                } else if idle.expired(idle_timeout) {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "no bytes either way within the tunnel timeout"));
                }
            }
        }
        // A socket that has received FIN and been sent one reports a hang-up from now on: stop watching it.
        for i in 0..2 {
            if watched[i] && dirs[i].eof && dirs[1 - i].done {
                epoll.get_ref().remove(fds[i])?;
                watched[i] = false;
            }
        }
    }
}
