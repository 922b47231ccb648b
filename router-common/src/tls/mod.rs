//! Reading the TLS ClientHello that opens a connection, from bytes peeked off the socket, to learn the
//! server name (SNI), the ALPN offer and whether TLS 1.3 is offered before anything is consumed.
//!
//! The reader is `no_std`, allocates nothing, cannot panic (every read is a checked `get`), has no
//! recursion and only loops with constant bounds, so the same code serves the userspace :443 listener
//! and, later, eBPF programs.
//!
//! The caller keeps the bytes received so far in one buffer and calls [`parse_client_hello`] again
//! after each read until it returns something other than [`Parsed::NeedMore`]:
//!
//! - records may be cut anywhere by TCP: a partial record gives `NeedMore`;
//! - the ClientHello may be fragmented over several handshake records: it is reassembled into the
//!   caller's `scratch` buffer ([`MAX_HELLO`] bytes is enough for any hello a record can carry whole,
//!   and for fragmented hellos up to that size);
//! - errors are final ([`HelloError`]); bytes that cannot begin a TLS stream are refused after one or
//!   two bytes (see also [`looks_like_tls`]).

mod client_hello;
mod error;
mod handshake;
mod reader;
mod record;

#[cfg(test)]
mod tests;

pub use client_hello::{AlpnIter, AlpnProtocols, ClientHello, ServerName};
pub use error::HelloError;
pub use record::looks_like_tls;

/// Recommended size, in bytes, of the peek buffer and of the reassembly scratch buffer: one full
/// record (5-byte header + 2^14-byte fragment).
pub const MAX_HELLO: usize = record::HEADER_LEN + record::MAX_FRAGMENT;

/// Most records a ClientHello may be spread over. Real clients use one; deliberate fragmentation
/// uses a handful. More gives [`HelloError::TooLarge`].
pub const MAX_RECORDS: usize = 64;

/// Result of reading the bytes received so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// The bytes so far are a valid prefix of a ClientHello stream as far as they can be judged: the
    /// record headers, the handshake header and the record framing are consistent (the hello's own
    /// fields are checked once it is complete). Read more and call again.
    NeedMore,
    /// The complete ClientHello.
    Hello(ClientHello<'a>),
}

/// Reads the ClientHello at the start of `buf`, the bytes received on a connection so far.
///
/// `scratch` receives the handshake message when it is fragmented over several records; its length
/// caps the size of such a message ([`HelloError::TooLarge`] past it; [`MAX_HELLO`] recommended). A
/// ClientHello carried by the first record alone is read in place and does not use `scratch`.
///
/// Returns [`Parsed::NeedMore`] while `buf` is a consistent but incomplete prefix; the result for a
/// longer `buf` of the same stream is then either `NeedMore` again or final. Once the result is
/// `Hello` or an error, it stays the same for every longer `buf` of the same stream. Bytes after
/// [`ClientHello::consumed`] are not looked at; the record that ends the hello must end with it.
///
/// A fragmented hello occupies more of the stream than of `scratch` (5 bytes of record header per
/// record), so a caller whose receive buffer is full while the answer is still `NeedMore` should treat
/// the hello as too large rather than wait.
pub fn parse_client_hello<'a>(buf: &'a [u8], scratch: &'a mut [u8]) -> Result<Parsed<'a>, HelloError> {
    match handshake::reassemble(buf, scratch)? {
        handshake::Reassembly::NeedMore => Ok(Parsed::NeedMore),
        handshake::Reassembly::Complete { body, consumed } => {
            client_hello::parse_body(body, consumed).map(Parsed::Hello)
        }
    }
}
