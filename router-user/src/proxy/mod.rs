//! The HTTP listener (:80): accept, route by Host and path, forward to pods, answer for failures.

mod client_io;
mod forwarded;
mod handler;
mod headers;
mod lease;
mod listener;
mod response;
mod rewrite;
mod sticky;
mod tunnel;
mod upstream;

pub use forwarded::{forwarded_element, ConnectionInfo};
pub use handler::{HttpProxy, ProxyOptions};
pub use listener::{serve_http, stop_requested, ClientTimeouts};
pub use response::{ErrorFile, ProxyBody};
pub use upstream::Upstream;
