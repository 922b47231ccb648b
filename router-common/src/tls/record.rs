//! The TLS record layer as far as a ClientHello needs it: the 5-byte record header
//! (content type, legacy record version, fragment length) and the quick "is this TLS at all" test.

use super::HelloError;

/// Bytes in a record header: content type (1), legacy_record_version (2), length (2).
pub const HEADER_LEN: usize = 5;

/// Largest fragment a plaintext record may carry, in bytes (2^14).
pub const MAX_FRAGMENT: usize = 1 << 14;

/// Content type of handshake records.
pub const CONTENT_HANDSHAKE: u8 = 0x16;

/// Major version byte of every TLS (and SSLv3) record version.
const VERSION_MAJOR: u8 = 3;

/// Tells from the first bytes of a connection whether it can be TLS: `Some(true)` when it starts with a
/// handshake record header (content type 0x16, major version 3), `Some(false)` when it cannot be one,
/// `None` while fewer than 2 bytes have arrived and the first does not already rule TLS out.
///
/// Agrees with [`parse_client_hello`](super::parse_client_hello): `Some(false)` exactly when that
/// returns [`HelloError::NotTls`].
pub fn looks_like_tls(first_bytes: &[u8]) -> Option<bool> {
    match first_bytes {
        [] => None,
        [ty, ..] if *ty != CONTENT_HANDSHAKE => Some(false),
        [_] => None,
        [_, major, ..] => Some(*major == VERSION_MAJOR),
    }
}

/// Checks the record header at the start of `bytes`, or as much of it as has arrived, and returns the
/// fragment length once all 5 header bytes are there (`Ok(None)` before).
///
/// `first` says whether this is the connection's first record: there a wrong content type or version
/// means the stream is not TLS; later it means a record of another kind interrupted the ClientHello.
/// A fragment length of 0 (forbidden for handshake records) or above 2^14 is malformed.
pub(crate) fn read_header(bytes: &[u8], first: bool) -> Result<Option<usize>, HelloError> {
    if let Some(&ty) = bytes.first() {
        if ty != CONTENT_HANDSHAKE {
            return Err(if first { HelloError::NotTls } else { HelloError::NotClientHello });
        }
    }
    if let Some(&major) = bytes.get(1) {
        if major != VERSION_MAJOR {
            return Err(if first { HelloError::NotTls } else { HelloError::Malformed("record version") });
        }
    }
    let Some(&[_, _, _, hi, lo]) = bytes.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    if len == 0 {
        return Err(HelloError::Malformed("empty handshake record"));
    }
    if len > MAX_FRAGMENT {
        return Err(HelloError::Malformed("record longer than 2^14 bytes"));
    }
    Ok(Some(len))
}
