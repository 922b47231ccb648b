//! The hand-over's messages, one per `sendmsg`: the taker's request, the offer (text naming each listener,
//! the descriptors attached in the same order), the taker's confirmation and the old router's release.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// The taker's first words (with the protocol version).
pub const REQUEST: &[u8] = b"ROUTER-HANDOVER 1\n";
/// The taker serves on the listeners: the old router may stop accepting.
pub const TAKEN: &[u8] = b"TAKEN\n";
/// The old router stopped offering (its socket path is free) and is draining.
pub const RELEASED: &[u8] = b"RELEASED\n";

/// Which of the router's listeners a descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The admin port (`/healthz`, `/metrics`).
    Admin,
    /// :80.
    Http,
    /// :443.
    Https,
}

/// One listener of the offer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    pub role: Role,
    /// The address it is bound to.
    pub addr: SocketAddr,
}

/// What the old router offers: its process id (for logs) and its listeners, in descriptor order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    pub pid: u32,
    pub listeners: Vec<Listener>,
}
