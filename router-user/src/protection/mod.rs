//! Protecting pods and the router from clients: per-client connection and request rate limits, and a cap on
//! requests in flight per endpoint (`pod-concurrent-connections`).

mod rate_limiter;
mod slots;

pub use rate_limiter::{ConnectionTicket, RateLimiter, Refused};
pub use slots::ConnectionSlots;
