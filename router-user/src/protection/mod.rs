//! Protecting pods and the router from clients: a route's IP allowlist, per-client connection and request
//! rate limits, and a cap on requests in flight per endpoint (`pod-concurrent-connections`).

mod gate;
mod rate_limiter;
mod slots;

pub use gate::{ConnectionTickets, RefusedConnection, RouteGate};
pub use rate_limiter::{ConnectionTicket, RateLimiter, Refused};
pub use slots::ConnectionSlots;
