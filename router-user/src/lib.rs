//! The router: sources -> snapshot -> compiled route table -> HTTP proxy, with the admin listener and the XDP
//! loader beside it.
//!
//! No `unsafe` outside the modules that talk to the kernel directly: the relays' system calls
//! (`relay::sys`) and the XDP loader and its maps (`xdp`); each of those allows it for itself.

#![deny(unsafe_code)]

pub mod admin;
pub mod admission;
pub mod balance;
pub mod config;
pub mod health;
pub mod https;
pub mod listen;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod protection;
pub mod proxy;
pub mod publish;
pub mod relay;
pub mod server;
pub mod source;
pub mod table;
pub mod tls;
pub mod xdp;
