//! HTTP/3 on the HTTPS port over UDP (ROUTER_ENABLE_HTTP3): QUIC by quinn, HTTP/3 framing by h3, requests
//! through the same handler as HTTP/2 over edge and reencrypt (`proxy::MultiplexedClient`). Certificates come
//! from the live table as on TCP :443 (a route's own, a wildcard route's, the default; ROUTER_STRICT_SNI);
//! a server name of a passthrough route, or of a route checking client certificates itself
//! (`router.openshift.io/client-tls-ca` or `-ca-secret`), gets no certificate: its QUIC handshake fails and the client stays
//! on TCP. Router-wide client certificates (ROUTER_MUTUAL_TLS_AUTH) are verified in the handshake as on TCP.
//! The `Alt-Svc` value that advertises this listener is built here and written by `proxy`.

mod alt_svc;
mod cert_resolver;
mod codes;
mod connection;
mod listener;
mod request;
mod request_body;
mod setup;

pub use alt_svc::alt_svc_value;
pub use listener::serve_http3;
pub use setup::{bind_udp, Http3Endpoints, Http3Error};
