//! Sockets opened from the test process inside a network namespace: a thread joins the namespace
//! (setns(2) changes only the calling thread's), creates the socket there, and hands it back; the
//! socket keeps its namespace for its whole life, whichever thread then uses it.

use std::{
    fs::File,
    io,
    net::{SocketAddr, TcpListener, TcpStream},
    os::fd::AsRawFd,
    time::Duration,
};

use router_tests::netns::NetNs;

/// Runs `f` on a thread that joined `ns`'s network namespace.
pub fn in_netns<T: Send>(ns: &NetNs, f: impl FnOnce() -> T + Send) -> T {
    let handle = File::open(ns.path()).unwrap_or_else(|err| panic!("open {}: {err}", ns.path().display()));
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: setns(2) with a namespace file descriptor this thread owns; it changes only this
                // thread's network namespace, and the thread ends with the scope.
                let rc = unsafe { libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(rc, 0, "setns: {}", io::Error::last_os_error());
                f()
            })
            .join()
            .expect("thread in the namespace")
    })
}

/// A listener on `addr` inside `ns`.
pub fn listen(ns: &NetNs, addr: SocketAddr) -> TcpListener {
    in_netns(ns, || TcpListener::bind(addr)).unwrap_or_else(|err| panic!("listen on {addr}: {err}"))
}

/// A connection from inside `ns` to `addr`, with TCP_NODELAY (each write leaves as its own segment)
/// and `timeout` on every read and write.
pub fn connect(ns: &NetNs, addr: SocketAddr, timeout: Duration) -> TcpStream {
    let stream = in_netns(ns, || TcpStream::connect_timeout(&addr, timeout))
        .unwrap_or_else(|err| panic!("connect to {addr}: {err}"));
    bounded(&stream, timeout);
    stream.set_nodelay(true).expect("TCP_NODELAY");
    stream
}

/// Accepts one connection on `listener` within `timeout` (which then bounds its reads and writes).
pub fn accept(listener: &TcpListener, timeout: Duration) -> TcpStream {
    listener.set_nonblocking(true).expect("nonblocking listener");
    let deadline = std::time::Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).expect("blocking stream");
                bounded(&stream, timeout);
                return stream;
            }
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                assert!(std::time::Instant::now() < deadline, "no connection accepted within {timeout:?}");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(err) => panic!("accept: {err}"),
        }
    }
}

fn bounded(stream: &TcpStream, timeout: Duration) {
    stream.set_read_timeout(Some(timeout)).expect("read timeout");
    stream.set_write_timeout(Some(timeout)).expect("write timeout");
}

/// Closes `stream` with a RST (SO_LINGER on with a zero timeout, then close).
pub fn reset(stream: TcpStream) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: setsockopt(2) on a socket this function owns, with a `linger` that lives across the call
    // and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_LINGER: {}", io::Error::last_os_error());
    drop(stream);
}
