//! HTTP serving: the :80 listener's connections, and the requests of :443 connections that `https`
//! terminated. Each request is routed by Host and path, rewritten, forwarded to a pod and answered, with the
//! router's own answers for failures. Accepting connections is `listen`'s job; an upgraded exchange's bytes
//! go to `relay`'s tunnel.

// The client side: a connection's HTTP (1.1 or 2), its timers (and the 408 of the head timer), each request's phases, its body on the way
// to a pod, and the case of header names written on HTTP/1 (ROUTER_H1_CASE_ADJUST).
mod client_auth_check;
mod client_body;
mod client_io;
mod coalesced_writes;
mod connection;
pub(crate) mod h1;
mod handler;
mod header_case;
mod listener;
mod multiplexed;
mod request_log;
mod request_timeout;
mod upgrade;

// The request policy: the host a request is for, rewriting for the pod, forwarded headers, the sticky cookie,
// response compression (ROUTER_ENABLE_COMPRESSION), the router's own answers.
mod compression;
mod forwarded;
mod headers;
mod request_host;
mod response;
mod rewrite;
mod sticky;

// The pod side: the endpoints a request tries, the one it holds, and the way to a pod (own HTTP/1.1
// client, h2c and reencrypt through hyper).
mod lease;
mod request_body;
// pub(crate) for `crate::fuzzing`, which reads pod responses with its parsers.
pub(crate) mod pod;
mod request_trial;
mod upstream;
mod wire_size;

pub use client_auth_check::HandshakeCheck;
pub use compression::{ResponseCompression, DEFAULT_COMPRESSION_MIME};
pub use connection::{serve_client, HttpVersion};
pub use forwarded::ConnectionInfo;
pub use handler::{ClientConnection, HttpProxy, ProxyOptions};
pub use header_case::{HeaderCaseMap, InvalidHeaderName};
pub use listener::serve_http;
pub use multiplexed::{MultiplexedClient, StreamResponseBody};
pub use request_body::{BoxError, RequestBody};
pub use response::{ErrorFile, ProxyBody};
pub use upstream::{Upstream, Via};
