//! The router: sources -> snapshot -> compiled route table -> HTTP proxy, with the admin listener and the XDP
//! loader beside it.
//!
//! Layering: modules depend only downward, with no circle. At the bottom are leaf types: `duration` (HAProxy's
//! time syntax), `model` (typed objects, the `Snapshot`, and what derives from a snapshot alone, such as the
//! router's own Service as this node sees it), `metrics` and `access_log` (HAProxy log-format lines, syslog
//! framing, the writer task and its bounded queue). Above them `policy` reads route annotations; then
//! `admission` (which routes are served, host validation included), `tls` (certificates and rustls
//! configurations), `balance` and `protection`; then `table`, the compiled route table built from all of those;
//! then `source`, which also writes route status from a table's outcomes. Serving sits on top: `listen` (accepting
//! connections, PROXY headers), `relay` (byte relays: splice(2), sockmap, tunnel), `proxy`, `https`, `http3` (QUIC on
//! the HTTPS port, through `proxy` with `https`'s certificates), `admin`, `publish`, `health_check` (active checks of a published table's endpoints), `load_balancer_probe`
//! (the healthCheckNodePort), `router_service`, `xdp` and `handover` (listening sockets passed to the next router
//! on an upgrade). `config` turns settings into the options of the layers
//! it configures and may depend on them; nothing those layers hold depends on `config`, and only the start-up
//! code (`server`, `https`'s setup) reads it. `server` assembles the whole.
//!
//! No `unsafe` outside the modules that talk to the kernel directly: the relays' system calls
//! (`relay::sys`), the XDP loader and its maps (`xdp`) and descriptor passing (`handover::fds`); each of those
//! allows it for itself.

#![deny(unsafe_code)]

pub mod access_log;
pub mod admin;
pub mod admission;
pub mod balance;
pub mod config;
pub mod duration;
/// Entry points for the fuzz targets in `fuzz/`; not part of the router.
#[doc(hidden)]
pub mod fuzzing;
pub mod handover;
pub mod health_check;
pub mod http3;
pub mod https;
pub mod listen;
pub mod load_balancer_probe;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod protection;
pub mod proxy;
pub mod publish;
pub mod relay;
pub mod router_service;
pub mod server;
pub mod source;
pub mod table;
pub mod tls;
pub mod xdp;
