//! The HTTP/3 error codes (RFC 9114 section 8.1) the router closes QUIC connections with.

/// H3_NO_ERROR: the connection closes normally.
pub const H3_NO_ERROR: quinn::VarInt = quinn::VarInt::from_u32(0x100);

/// H3_REQUEST_REJECTED: the connection closes without serving the client (its certificate subject, or a
/// route's protection refused it).
pub const H3_REQUEST_REJECTED: quinn::VarInt = quinn::VarInt::from_u32(0x10b);
