//! HTTP/1.x on the client side, the router's own: the connection loop, request heads and bodies read from
//! one buffer, response heads and bodies written as the router's handler produced them. HTTP/2 stays with
//! hyper's server (`connection`).

mod body_feed;
mod connection;
mod date;
pub(crate) mod request_head;
mod response_head;
mod response_writer;
mod upgrade_handoff;

pub use body_feed::OwnRequestBody;
pub use connection::{serve_http1, Http1End, Http1Settings};
pub use upgrade_handoff::{UpgradeSlot, UpgradedClient};
