//! Relays: how bytes are carried between a client and a pod once the router has nothing more to decide
//! about them. Passthrough connections use the sockmap relay (an `sk_skb` program moves the bytes in the
//! kernel) when it is loaded, else the splice(2) relay (userspace drives splice(2) through pipes); upgraded
//! HTTP exchanges (WebSocket) use the tunnel, a userspace copy. All three share one idle tracker, and their
//! raw system calls live in `sys`, the only module here allowed `unsafe` besides `steer::sys`. With
//! `--xdp-steer-passthrough`, a passthrough connection is first offered to the XDP datapath (`steer`), which
//! then carries it without the router.

mod idle;
mod passthrough;
mod sockmap;
mod splice;
pub mod steer;
mod sys;
mod tunnel;

pub use idle::FinTimeouts;
pub use passthrough::{PassthroughRelay, SteerOutcome};
pub use sockmap::{SockmapError, SockmapRelay};
pub use splice::{splice_relay, splice_relay_closing};
pub use tunnel::tunnel;

/// Bytes a passthrough relay carried, counted when written to the receiving side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayStats {
    /// Client to pod.
    pub to_pod: u64,
    /// Pod to client.
    pub to_client: u64,
}
