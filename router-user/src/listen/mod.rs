//! Accepting client connections, for every listener (:80 in `proxy`, :443 in `https`, the admin listener):
//! the accept loop and its drain on shutdown, the connection limit (ROUTER_MAX_CONNECTIONS) it waits on, the
//! shutdown signal, the client-side timer settings, and the
//! client a connection is attributed to (its peer, or the source its PROXY protocol header names, with the
//! bytes read past the header replayed by `Prefixed`), and the client socket counting its frontend's bytes
//! (`CountedIo`).

mod accept;
mod bind;
mod client;
mod counted;
mod limit;
mod prefixed;
// pub(crate) for `crate::fuzzing`, which checks its parser against the stream reader.
pub(crate) mod proxy_protocol;

pub use accept::{accept_loop, stop_requested};
pub use bind::{bind_listeners, listen_addresses, IpMode};
pub use client::{client_of, ClientTimeouts};
pub use counted::CountedIo;
pub use limit::{ConnectionLimit, ConnectionPermit};
pub use prefixed::Prefixed;
pub use proxy_protocol::{read_proxy_header, ProxyHeader, ProxyProtocolError};
