//! The relays' raw system calls, the one place in them that needs `unsafe`: splice(2) and pipes for the
//! splice(2) relay; the socket facts and knobs the sockmap relay needs (cookie, queue sizes, TCP counters,
//! the data-ready kick) and its epoll set that reports only hang-ups and errors; half-close and reset for
//! both.

#![allow(unsafe_code)]

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// `SO_COOKIE` (asm-generic/socket.h): the socket's 64-bit cookie.
const SO_COOKIE: libc::c_int = 57;
/// `SIOCINQ` (= `FIONREAD`): bytes received and not yet read.
const SIOCINQ: libc::Ioctl = libc::FIONREAD;
/// `SIOCOUTQ` (= `TIOCOUTQ`): bytes written and not yet acknowledged.
const SIOCOUTQ: libc::Ioctl = libc::TIOCOUTQ;
/// `TCP_ESTABLISHED` in `tcpi_state`.
const TCP_ESTABLISHED: u8 = 1;
/// Bounded retries for a consistent pair of counter reads.
const CONSISTENT_READS: usize = 64;

/// The head of the kernel's `struct tcp_info` (uapi linux/tcp.h) up to `tcpi_bytes_received`; the kernel
/// fills as much as the caller asks for. glibc's struct stops before the byte counters.
#[repr(C)]
#[derive(Clone, Copy)]
struct TcpInfo {
    state: u8,
    _bytes: [u8; 7],
    /// `tcpi_rto` .. `tcpi_total_retrans`: 24 `u32`s.
    _words: [u32; 24],
    _pacing_rate: u64,
    _max_pacing_rate: u64,
    /// Sequence space acknowledged by the peer (data, plus 1 for an acknowledged FIN).
    bytes_acked: u64,
    /// Data bytes received in order.
    bytes_received: u64,
}

const _: () = assert!(size_of::<TcpInfo>() == 136);

fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    let mut info = MaybeUninit::<TcpInfo>::zeroed();
    let mut len = size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: `info` is a writable buffer of `len` bytes and `len` points to its size; the descriptor is
    // borrowed from a live socket.
    let rc = unsafe {
        libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, info.as_mut_ptr().cast(), &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if (len as usize) < size_of::<TcpInfo>() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "tcp_info without byte counters (kernel < 4.1)"));
    }
    // SAFETY: zero-initialised, then (partly) overwritten by the kernel; every bit pattern is valid.
    Ok(unsafe { info.assume_init() })
}

fn ioctl_int(fd: BorrowedFd<'_>, request: libc::Ioctl) -> io::Result<u64> {
    let mut value: libc::c_int = 0;
    // SAFETY: both requests write one c_int through the pointer; the descriptor is borrowed from a live socket.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request, &mut value as *mut libc::c_int) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u64::try_from(value).unwrap_or(0))
}

/// The socket's cookie: the key it has in the sockmap relay's maps.
pub(super) fn cookie(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut value: u64 = 0;
    let mut len = size_of::<u64>() as libc::socklen_t;
    // SAFETY: `value` is a writable u64 and `len` its size; the descriptor is borrowed from a live socket.
    let rc = unsafe {
        libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, SO_COOKIE, (&mut value as *mut u64).cast(), &mut len)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// Whether the connection is ESTABLISHED (neither side has sent FIN); the kernel admits only those to a
/// SOCKHASH.
pub(super) fn established(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(tcp_info(fd)?.state == TCP_ESTABLISHED)
}

/// Data bytes received in order so far.
pub(super) fn bytes_received(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(tcp_info(fd)?.bytes_received)
}

/// Bytes ever consumed from the receive queue (received minus still queued), read so that no byte can
/// arrive between the two reads unnoticed.
pub(super) fn bytes_consumed(fd: BorrowedFd<'_>) -> io::Result<u64> {
    for _ in 0..CONSISTENT_READS {
        let before = bytes_received(fd)?;
        let queued = ioctl_int(fd, SIOCINQ)?;
        if bytes_received(fd)? == before {
            return Ok(before.saturating_sub(queued));
        }
    }
    Err(io::Error::new(io::ErrorKind::WouldBlock, "receive counters kept moving"))
}

/// Sequence space ever written to the socket (acknowledged plus still queued), exact: acknowledgements
/// arriving between the reads are detected and the reads repeated.
pub(super) fn bytes_written(fd: BorrowedFd<'_>) -> io::Result<u64> {
    for _ in 0..CONSISTENT_READS {
        let acked = tcp_info(fd)?.bytes_acked;
        let queued = ioctl_int(fd, SIOCOUTQ)?;
        if tcp_info(fd)?.bytes_acked == acked {
            return Ok(acked + queued);
        }
    }
    Err(io::Error::new(io::ErrorKind::WouldBlock, "send counters kept moving"))
}

/// Makes the kernel call the socket's data-ready callback now if bytes are queued: setting `SO_RCVLOWAT`
/// (to its default, 1) re-checks readiness. For a socket with a verdict program this runs the program over
/// bytes that were queued before the socket was inserted.
pub(super) fn kick(fd: BorrowedFd<'_>) -> io::Result<()> {
    let one: libc::c_int = 1;
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, one)
}

fn setsockopt_int(fd: BorrowedFd<'_>, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the option value is one c_int, passed with its size; the descriptor is borrowed from a live socket.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends FIN (shutdown(SHUT_WR)); a connection that is already gone (or was reset by its peer) counts as
/// done.
pub(super) fn shutdown_write(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: the descriptor is borrowed from a live socket, so it is open for the call.
    let rc = unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) };
    if rc == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::ENOTCONN) {
        return Ok(());
    }
    Err(error)
}

/// Makes the coming close send RST instead of FIN (SO_LINGER 0).
pub(super) fn zero_linger(fd: BorrowedFd<'_>) -> io::Result<()> {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: the option value is one `linger`, passed with its size; the descriptor is borrowed from a live
    // socket.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The pending socket error (SO_ERROR), cleared by reading it.
pub(super) fn take_error(fd: BorrowedFd<'_>) -> io::Result<Option<io::Error>> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` is a writable c_int and `len` its size; the descriptor is borrowed from a live socket.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((value != 0).then(|| io::Error::from_raw_os_error(value)))
}

/// What an [`Epoll`] reported for one socket.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Event {
    /// The `token` the socket was added with.
    pub token: u64,
    /// The peer sent FIN (EPOLLRDHUP).
    pub read_closed: bool,
    /// A socket error is pending (EPOLLERR).
    pub error: bool,
    /// Both directions are shut or the connection is closed (EPOLLHUP).
    pub hang_up: bool,
}

/// A level-triggered epoll set watching sockets for FIN (only while asked), errors and hang-ups, never for
/// data: the sockmap relay moves data in the kernel, and its wake-ups must not reach userspace.
pub(super) struct Epoll {
    fd: OwnedFd,
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Epoll {
    pub(super) fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall with a valid flag.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: epoll_create1 succeeded, so `fd` is an open descriptor that nothing else owns.
        Ok(Epoll { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// The set registered with the runtime, which then reports when events are pending.
    pub(super) fn into_async(self) -> io::Result<AsyncFd<Epoll>> {
        // SAFETY: `Epoll` owns its descriptor and never changes or closes it while alive, so it stays the same
        // open epoll instance for the AsyncFd's whole life.
        unsafe { AsyncFd::register_with_interest(self, Interest::READABLE) }.map_err(io::Error::from)
    }

    fn ctl(&self, op: libc::c_int, socket: BorrowedFd<'_>, token: u64, read_closed: bool) -> io::Result<()> {
        let events = if read_closed { libc::EPOLLRDHUP as u32 } else { 0 };
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: both descriptors are live; `event` is a valid epoll_event for the call.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, socket.as_raw_fd(), &mut event) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `socket` for errors and hang-ups, and for FIN when `read_closed`.
    pub(super) fn add(&self, socket: BorrowedFd<'_>, token: u64, read_closed: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, socket, token, read_closed)
    }

    pub(super) fn modify(&self, socket: BorrowedFd<'_>, token: u64, read_closed: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, socket, token, read_closed)
    }

    pub(super) fn remove(&self, socket: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, socket, 0, false)
    }

    /// The events pending now (does not wait).
    pub(super) fn pending(&self) -> io::Result<Vec<Event>> {
        let mut raw = [libc::epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: `raw` is a writable array of 4 epoll_events, the count passed; timeout 0 never blocks.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), raw.as_mut_ptr(), raw.len() as libc::c_int, 0) };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        Ok(raw
            .iter()
            .take(n)
            .map(|e| Event {
                token: e.u64,
                read_closed: e.events & libc::EPOLLRDHUP as u32 != 0,
                error: e.events & libc::EPOLLERR as u32 != 0,
                hang_up: e.events & libc::EPOLLHUP as u32 != 0,
            })
            .collect())
    }
}

/// One non-blocking read of what is queued (`WouldBlock` when nothing is), whatever the runtime believes
/// about the socket's readiness.
pub(super) fn recv_now(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is writable for its length; the descriptor is borrowed from a live socket.
    let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// A non-blocking pipe: (read end, write end).
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1, -1];
    // SAFETY: `fds` is a writable array of two c_ints, which is what pipe2 fills; the flags are valid.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read, write] = fds;
    // SAFETY: pipe2 succeeded, so both descriptors are open, and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(read), OwnedFd::from_raw_fd(write)) })
}

/// One splice(2) call of up to `len` bytes, non-blocking on the pipe side.
pub(super) fn splice(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    // SAFETY: both descriptors are borrowed from live owners, so they stay open for the call; null offsets
    // are what splice takes for pipes and sockets; no memory of ours is passed.
    let n = unsafe {
        libc::splice(
            from.as_raw_fd(),
            std::ptr::null_mut(),
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Whether this process runs as root (the sockmap relay's tests need it).
#[cfg(test)]
pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// User plus system CPU seconds of `who` (`RUSAGE_SELF` or `RUSAGE_THREAD`), for the throughput benchmark.
#[cfg(test)]
pub(super) fn cpu_seconds(who: libc::c_int) -> f64 {
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a writable rusage; `who` is RUSAGE_SELF or RUSAGE_THREAD.
    unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    // SAFETY: zero-initialised and filled by the kernel; every bit pattern is valid.
    let usage = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Clock ticks per second, the unit of /proc/stat.
#[cfg(test)]
pub(super) fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}
