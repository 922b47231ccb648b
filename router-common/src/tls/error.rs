//! Why bytes at the start of a connection could not be read as a TLS ClientHello.

use core::fmt;

/// A ClientHello reading failure. Every variant is final: feeding more bytes of the same stream cannot
/// turn it into a success, so the caller closes the connection (and counts it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelloError {
    /// The first byte is not the handshake content type (0x16) or the record's major version is not 3:
    /// plain HTTP, a PROXY header, SSLv2 or other bytes that are not a TLS record stream.
    NotTls,
    /// A TLS record stream, but what it opens with is not a ClientHello: a handshake message of another
    /// type, or a record of another content type before the ClientHello is complete.
    NotClientHello,
    /// A length field does not fit its container, a field is outside the range the protocol allows,
    /// or an extension we read appears twice. The text names the field.
    Malformed(&'static str),
    /// The ClientHello spans several records and does not fit the caller's scratch buffer, or it is
    /// spread over more than [`MAX_RECORDS`](super::MAX_RECORDS) records.
    TooLarge,
}

impl fmt::Display for HelloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HelloError::NotTls => f.write_str("not a TLS handshake record"),
            HelloError::NotClientHello => f.write_str("TLS stream does not open with a ClientHello"),
            HelloError::Malformed(what) => write!(f, "malformed ClientHello: {what}"),
            HelloError::TooLarge => f.write_str("ClientHello larger than the reassembly buffer"),
        }
    }
}

impl core::error::Error for HelloError {}
