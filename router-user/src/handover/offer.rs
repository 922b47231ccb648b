//! The running router's side: a unix socket at ROUTER_HANDOVER_SOCKET where a new router asks for the
//! listeners. A thread answers one taker at a time: it sends the listeners, waits for the taker to say it
//! serves on them (as long as a large table takes to load), then frees the path, tells the router to drain
//! (the returned channel) and answers `RELEASED`. A taker that goes away before confirming leaves this router
//! as it was, still serving and still offering.

use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tracing::{info, warn};

use super::fds::send_with_fds;
use super::message::{Listener, Offer, RELEASED, REQUEST, TAKEN};

/// How long a taker may take between receiving the listeners and confirming (its first table loads
/// meanwhile: tens of seconds at 100,000 routes).
const CONFIRM_WAIT: Duration = Duration::from_secs(300);
/// How long a taker may take to send its request.
const REQUEST_WAIT: Duration = Duration::from_secs(5);

/// One listener this router offers: what it is, and a duplicate of its descriptor.
#[derive(Debug)]
pub struct Offered {
    pub listener: Listener,
    pub fd: OwnedFd,
}

/// The listeners on offer at a path.
pub struct Offering {
    /// Completes when a new router took them.
    pub taken: oneshot::Receiver<()>,
    path: PathBuf,
    withdrawn: Arc<AtomicBool>,
}

impl Offering {
    /// Stops offering (this router stops by itself): the offer's duplicates of the listening sockets close, so
    /// the sockets close with the accept loops' copies, and the path is removed.
    pub fn withdraw(self) {
        self.withdrawn.store(true, Ordering::Release);
        // Wakes the thread from accept(2); it sees the flag and ends.
        let _ = UnixStream::connect(&self.path);
    }
}

/// Offers `listeners` at `path` until a new router takes them ([`Offering::taken`]) or the offer is withdrawn.
pub fn offer(path: &Path, listeners: Vec<Offered>) -> io::Result<Offering> {
    // A socket file left by a router that died: nothing listens on it any more.
    if UnixStream::connect(path).is_err() {
        let _ = std::fs::remove_file(path);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let socket = UnixListener::bind(path)?;
    // Only the router's own user may take its listeners.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let (taken_tx, taken) = oneshot::channel();
    let withdrawn = Arc::new(AtomicBool::new(false));
    let (thread_path, thread_withdrawn) = (path.to_path_buf(), withdrawn.clone());
    std::thread::Builder::new()
        .name("router-handover".into())
        .spawn(move || serve(&socket, &thread_path, listeners, taken_tx, &thread_withdrawn))?;
    Ok(Offering { taken, path: path.to_path_buf(), withdrawn })
}

fn serve(
    socket: &UnixListener,
    path: &PathBuf,
    listeners: Vec<Offered>,
    taken: oneshot::Sender<()>,
    withdrawn: &AtomicBool,
) {
    for stream in socket.incoming() {
        if withdrawn.load(Ordering::Acquire) {
            let _ = std::fs::remove_file(path);
            return;
        }
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                warn!(%error, "hand-over socket failed; no longer offering the listeners");
                return;
            }
        };
        match hand_over(&stream, &listeners) {
            Ok(()) => {
                // The path is the taker's from now on (it offers there next).
                let _ = std::fs::remove_file(path);
                let _ = taken.send(());
                let _ = (&stream).write_all(RELEASED);
                info!("listeners handed over to a new router; draining");
                return;
            }
            Err(error) => warn!(%error, "a hand-over did not complete; still serving and offering"),
        }
    }
}

/// Sends the listeners to one taker and waits for its confirmation.
fn hand_over(stream: &UnixStream, listeners: &[Offered]) -> io::Result<()> {
    stream.set_read_timeout(Some(REQUEST_WAIT))?;
    let mut request = vec![0u8; REQUEST.len()];
    (&*stream).read_exact(&mut request)?;
    if request != REQUEST {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a hand-over request"));
    }
    let offer = Offer { pid: std::process::id(), listeners: listeners.iter().map(|o| o.listener.clone()).collect() };
    let text = serde_json::to_vec(&offer).map_err(io::Error::other)?;
    let fds: Vec<_> = listeners.iter().map(|o| o.fd.as_raw_fd()).collect();
    send_with_fds(stream, &text, &fds)?;
    stream.set_read_timeout(Some(CONFIRM_WAIT))?;
    let mut confirm = vec![0u8; TAKEN.len()];
    (&*stream).read_exact(&mut confirm)?;
    if confirm != TAKEN {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the taker did not confirm"));
    }
    Ok(())
}
