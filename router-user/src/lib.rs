//! The router: sources -> snapshot -> compiled route table -> HTTP proxy, with the admin listener and the XDP
//! loader beside it.

pub mod admin;
pub mod admission;
pub mod balance;
pub mod config;
pub mod health;
pub mod https;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod protection;
pub mod proxy;
pub mod publish;
pub mod server;
pub mod source;
pub mod table;
pub mod tls;
pub mod xdp;
