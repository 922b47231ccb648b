//! The sockmap relay's eBPF object (`router-sockmap`, built by `build.rs`): loaded once, `sockmap_verdict` attached to
//! `SOCKMAP_SOCKS`, and the three maps behind one lock (each operation is one bpf(2) call).

use std::os::fd::BorrowedFd;
use std::sync::Mutex;

use aya::maps::{HashMap, MapData, MapError, SockHash};
use aya::programs::{ProgramError, SkSkb};
use aya::{Ebpf, EbpfLoader};
use router_common::maps::{SOCKMAP_PEERS, SOCKMAP_SOCKS, SOCKMAP_TARGETS};
use router_common::sockmap::{SockKey, SockmapPeer};

/// The ELF object holding `sockmap_verdict` and its maps, 8-byte aligned as aya's parser wants.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/router-sockmap"));

/// Name of the stream-verdict program in the object.
const PROGRAM: &str = "sockmap_verdict";

#[derive(Debug, thiserror::Error)]
pub enum SockmapError {
    #[error("loading the sockmap relay object: {0}")]
    Object(#[source] Box<aya::EbpfError>),
    #[error("this router was built without its eBPF objects (AYA_BUILD_SKIP=1)")]
    NotBuilt,
    #[error("the sockmap relay object has no {kind} {name}")]
    Missing { kind: &'static str, name: &'static str },
    #[error("program {PROGRAM}: {0}")]
    Program(#[source] Box<ProgramError>),
    #[error("duplicating the {SOCKMAP_SOCKS} descriptor: {0}")]
    Dup(#[source] std::io::Error),
    #[error("map {map}: {source}")]
    Map { map: &'static str, source: Box<MapError> },
}

fn map_error(map: &'static str) -> impl Fn(MapError) -> SockmapError {
    move |source| SockmapError::Map { map, source: Box::new(source) }
}

struct Inner {
    socks: SockHash<MapData, SockKey>,
    targets: SockHash<MapData, SockKey>,
    peers: HashMap<MapData, SockKey, SockmapPeer>,
}

/// The loaded, attached program and its maps. Dropping it detaches the program and frees the maps (relayed
/// sockets keep their data flowing only while it lives).
pub(super) struct RedirectMaps {
    inner: Mutex<Inner>,
    /// Owns the program and its attachment.
    _ebpf: Mutex<Ebpf>,
}

impl RedirectMaps {
    /// Loads the object, verifies and attaches the program. Needs CAP_BPF (and CAP_NET_ADMIN for the
    /// SOCKHASH programs) or root.
    pub(super) fn load() -> Result<RedirectMaps, SockmapError> {
        if OBJECT.is_empty() {
            return Err(SockmapError::NotBuilt);
        }
        let mut ebpf = EbpfLoader::new().load(OBJECT).map_err(|e| SockmapError::Object(Box::new(e)))?;
        let take = |ebpf: &mut Ebpf, name: &'static str| {
            ebpf.take_map(name).ok_or(SockmapError::Missing { kind: "map", name })
        };
        let socks: SockHash<MapData, SockKey> =
            take(&mut ebpf, SOCKMAP_SOCKS)?.try_into().map_err(map_error(SOCKMAP_SOCKS))?;
        let targets: SockHash<MapData, SockKey> =
            take(&mut ebpf, SOCKMAP_TARGETS)?.try_into().map_err(map_error(SOCKMAP_TARGETS))?;
        let peers: HashMap<MapData, SockKey, SockmapPeer> =
            take(&mut ebpf, SOCKMAP_PEERS)?.try_into().map_err(map_error(SOCKMAP_PEERS))?;
        let program = ebpf.program_mut(PROGRAM).ok_or(SockmapError::Missing { kind: "program", name: PROGRAM })?;
        let program: &mut SkSkb = program.try_into().map_err(|e| SockmapError::Program(Box::new(e)))?;
        program.load().map_err(|e| SockmapError::Program(Box::new(e)))?;
        let map_fd = socks.fd().try_clone().map_err(SockmapError::Dup)?;
        program.attach(&map_fd).map_err(|e| SockmapError::Program(Box::new(e)))?;
        Ok(RedirectMaps { inner: Mutex::new(Inner { socks, targets, peers }), _ebpf: Mutex::new(ebpf) })
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        // A panic while holding the lock leaves the maps as consistent as the kernel keeps them.
        let mut guard = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// Records that `cookie`'s bytes go to `peer` (counters zero).
    pub(super) fn set_peer(&self, cookie: u64, peer: u64) -> Result<(), SockmapError> {
        let value = SockmapPeer { peer, bytes: 0, skbs: 0 };
        self.with(|m| m.peers.insert(SockKey { cookie }, value, 0)).map_err(map_error(SOCKMAP_PEERS))
    }

    /// Bytes redirected from `cookie` to its peer so far.
    pub(super) fn redirected(&self, cookie: u64) -> Result<u64, SockmapError> {
        self.with(|m| m.peers.get(&SockKey { cookie }, 0)).map(|p| p.bytes).map_err(map_error(SOCKMAP_PEERS))
    }

    /// Makes `socket` a redirect target (no program runs on it for this).
    pub(super) fn add_target(&self, cookie: u64, socket: BorrowedFd<'_>) -> Result<(), SockmapError> {
        self.with(|m| m.targets.insert(SockKey { cookie }, socket, 0)).map_err(map_error(SOCKMAP_TARGETS))
    }

    /// Starts the verdict program on `socket`'s received bytes.
    pub(super) fn start_redirect(&self, cookie: u64, socket: BorrowedFd<'_>) -> Result<(), SockmapError> {
        self.with(|m| m.socks.insert(SockKey { cookie }, socket, 0)).map_err(map_error(SOCKMAP_SOCKS))
    }

    /// Stops the verdict program on the socket; absent entries are fine.
    pub(super) fn stop_redirect(&self, cookie: u64) {
        let _ = self.with(|m| m.socks.remove(&SockKey { cookie }));
    }

    /// Removes every entry of the socket; absent entries are fine.
    pub(super) fn remove_all(&self, cookie: u64) {
        let key = SockKey { cookie };
        self.with(|m| {
            let _ = m.socks.remove(&key);
            let _ = m.targets.remove(&key);
            let _ = m.peers.remove(&key);
        });
    }

    /// Entries in (`SOCKMAP_SOCKS`, `SOCKMAP_TARGETS`, `SOCKMAP_PEERS`).
    pub(super) fn entries(&self) -> (usize, usize, usize) {
        self.with(|m| (m.socks.keys().count(), m.targets.keys().count(), m.peers.keys().count()))
    }
}
