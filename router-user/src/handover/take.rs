//! The starting router's side: asks the router running on ROUTER_HANDOVER_SOCKET for its listeners, serves
//! on them, then confirms, and the old router drains.

use std::io::{self, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::fds::recv_with_fds;
use super::message::{Offer, Role, RELEASED, REQUEST, TAKEN};

/// How long the old router may take to answer each step.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Listeners received from a running router, until taken by role; the old router drains after
/// [`Inherited::confirm`].
#[derive(Debug)]
pub struct Inherited {
    stream: UnixStream,
    from_pid: u32,
    listeners: Vec<(Role, SocketAddr, TcpListener)>,
}

/// Why the hand-over failed.
#[derive(Debug, thiserror::Error)]
pub enum TakeError {
    #[error("asking the router on {path} for its listeners: {source}")]
    Ask { path: String, source: io::Error },
    #[error("the router on {path} sent an offer that does not parse: {source}")]
    Offer { path: String, source: serde_json::Error },
    #[error("the router on {path} sent {fds} descriptors for {listeners} listeners")]
    Count { path: String, fds: usize, listeners: usize },
    #[error("confirming the hand-over: {0}")]
    Confirm(io::Error),
}

/// The listeners of the router offering them at `path`; `None` when no router does (no socket there, or
/// one nobody listens on).
pub fn take(path: &Path) -> Result<Option<Inherited>, TakeError> {
    let shown = path.display().to_string();
    let stream = match UnixStream::connect(path) {
        Ok(stream) => stream,
        Err(error) if matches!(error.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused) => {
            return Ok(None)
        }
        Err(source) => return Err(TakeError::Ask { path: shown, source }),
    };
    let ask = |source| TakeError::Ask { path: shown.clone(), source };
    stream.set_read_timeout(Some(ANSWER_WAIT)).map_err(ask)?;
    (&stream).write_all(REQUEST).map_err(ask)?;
    let (text, fds) = recv_with_fds(&stream).map_err(ask)?;
    let offer: Offer =
        serde_json::from_slice(&text).map_err(|source| TakeError::Offer { path: shown.clone(), source })?;
    if fds.len() != offer.listeners.len() {
        return Err(TakeError::Count { path: shown, fds: fds.len(), listeners: offer.listeners.len() });
    }
    let listeners =
        offer.listeners.into_iter().zip(fds).map(|(l, fd)| (l.role, l.addr, TcpListener::from(fd))).collect();
    Ok(Some(Inherited { stream, from_pid: offer.pid, listeners }))
}

impl Inherited {
    /// The process that offered the listeners.
    pub fn from_pid(&self) -> u32 {
        self.from_pid
    }

    /// The listeners of `role` (one per address family), bound where `wanted` asks: the same port, or any
    /// port when `wanted` asks for port 0. `None` when there are none such: bind afresh (the old router's
    /// then closes with it).
    pub fn take_role(&mut self, role: Role, wanted: SocketAddr) -> Option<Vec<TcpListener>> {
        let fits = |r: &Role, addr: &SocketAddr| *r == role && (wanted.port() == 0 || addr.port() == wanted.port());
        let (taken, rest): (Vec<_>, Vec<_>) = self.listeners.drain(..).partition(|(r, addr, _)| fits(r, addr));
        self.listeners = rest;
        let taken: Vec<TcpListener> = taken.into_iter().map(|(_, _, listener)| listener).collect();
        (!taken.is_empty()).then_some(taken)
    }

    /// Tells the old router this one serves on the listeners; returns once it stopped offering them (and
    /// began draining).
    pub fn confirm(self) -> Result<(), TakeError> {
        (&self.stream).write_all(TAKEN).map_err(TakeError::Confirm)?;
        let mut released = vec![0u8; RELEASED.len()];
        (&self.stream).read_exact(&mut released).map_err(TakeError::Confirm)?;
        if released != RELEASED {
            return Err(TakeError::Confirm(io::Error::new(io::ErrorKind::InvalidData, "no release")));
        }
        Ok(())
    }
}
