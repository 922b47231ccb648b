//! The HTTP listener (:80): accept, route by Host and path, forward to pods, answer for failures.

mod forwarded;
mod handler;
mod headers;
mod listener;
mod response;
mod upstream;

pub use forwarded::{forwarded_element, ConnectionInfo};
pub use handler::HttpProxy;
pub use listener::{serve_http, stop_requested};
pub use response::ProxyBody;
pub use upstream::Upstream;
