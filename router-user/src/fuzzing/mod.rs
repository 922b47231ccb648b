//! The fuzz entry points: one function per parser that reads bytes from outside the router, each taking the
//! fuzzer's `&[u8]` and panicking only when the parser breaks a promise (a panic of its own, or an answer
//! that contradicts another way of asking). The fuzz targets in `fuzz/` call them, one target each, under
//! libFuzzer; `tests` runs them over the targets' seed corpus on every test run, so a seed that once found a
//! bug stays a regression test here too. See `docs/fuzzing.md`.
//!
//! Public only for the fuzz crate (a separate workspace); nothing in the router calls into this module.

mod access_log_format;
mod annotations;
mod haproxy_duration;
mod lines;
mod manifest;
mod ocsp_response;
mod pod_chunked;
mod pod_response;
mod prefixes;
mod proxy_protocol;
mod request_head;

pub use access_log_format::access_log_format;
pub use annotations::annotations;
pub use haproxy_duration::haproxy_duration;
pub use manifest::manifest;
pub use ocsp_response::ocsp_response;
pub use pod_chunked::pod_chunked;
pub use pod_response::pod_response;
pub use proxy_protocol::proxy_protocol;
pub use request_head::request_head;

/// A fuzz target's body: any bytes; panics on a broken promise.
pub type EntryPoint = fn(&[u8]);

/// Every entry point by its fuzz target's name (the corpus directory under `fuzz/corpus/`). The ClientHello
/// target calls router-common's parser directly.
pub const TARGETS: [(&str, EntryPoint); 9] = [
    ("access_log_format", access_log_format),
    ("annotations", annotations),
    ("haproxy_duration", haproxy_duration),
    ("manifest", manifest),
    ("ocsp_response", ocsp_response),
    ("pod_chunked", pod_chunked),
    ("pod_response", pod_response),
    ("proxy_protocol", proxy_protocol),
    ("request_head", request_head),
];

#[cfg(test)]
mod tests;
