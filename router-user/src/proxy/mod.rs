//! The HTTP listener (:80): accept, route by Host and path, forward to pods, answer for failures.

mod client_io;
mod coalesced_writes;
mod connection;
mod forwarded;
mod handler;
mod headers;
mod lease;
mod listener;
mod pod;
mod prefixed;
mod proxy_protocol;
mod response;
mod rewrite;
mod sticky;
mod tunnel;
mod upstream;
mod upstream_tls;

pub use connection::{serve_client, HttpVersion};
pub use forwarded::{forwarded_element, ConnectionInfo};
pub use handler::{ClientConnection, HttpProxy, ProxyOptions, MAX_ATTEMPTS};
pub use listener::{accept_loop, client_of, serve_http, stop_requested, ClientTimeouts};
pub use prefixed::Prefixed;
pub use proxy_protocol::{read_proxy_header, ProxyHeader, ProxyProtocolError};
pub use response::{ErrorFile, ProxyBody};
pub use upstream::{Upstream, Via};
pub use upstream_tls::ReencryptUpstream;
