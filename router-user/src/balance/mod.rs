//! Choosing an endpoint for a request. Round robin for now; the weighted algorithms build on the same shape.

mod passive_health;
mod round_robin;

pub use passive_health::PassiveHealth;
pub use round_robin::RoundRobin;
