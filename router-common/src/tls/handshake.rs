//! Reassembly of the first handshake message from the records at the start of a connection.
//!
//! The message (4-byte handshake header: type, 24-bit length; then the body) may start and end
//! anywhere inside records, as long as the records are consecutive handshake records and the last one
//! ends exactly where the message ends. A message that sits wholly in the first record is read where it
//! lies; one spread over several records is copied into the caller's scratch buffer.
//!
//! Reading is stateless and deterministic in the bytes: a call on a prefix of the stream either asks
//! for more bytes or gives the answer a call on the whole stream gives, because every check looks only
//! at bytes already present and checks run in stream order.

use super::record::{self, HEADER_LEN};
use super::{HelloError, MAX_RECORDS};

/// Handshake message type of a ClientHello.
const CLIENT_HELLO: u8 = 1;

/// Bytes in a handshake message header: msg_type (1), length (3).
const MESSAGE_HEADER_LEN: usize = 4;

/// Error text for a record that goes on after the ClientHello ends.
const PAST_THE_HELLO: &str = "record holds bytes past the ClientHello";

/// Outcome of [`reassemble`].
pub(crate) enum Reassembly<'a> {
    /// The bytes so far are a consistent prefix; the message is not complete.
    NeedMore,
    /// The complete ClientHello body (without its handshake header), and the stream offset just past
    /// the record that held its last byte.
    Complete { body: &'a [u8], consumed: usize },
}

/// Finds the ClientHello body at the start of `buf`, copying it into `scratch` when it spans records.
///
/// Expects `buf` to start at the connection's first byte. Errors: [`HelloError::NotTls`] and
/// [`HelloError::NotClientHello`] as soon as the first bytes rule them in; a record that runs past the
/// end of the message is malformed; [`HelloError::TooLarge`] when a multi-record message is longer
/// than `scratch` or needs more than [`MAX_RECORDS`] records.
pub(crate) fn reassemble<'a>(buf: &'a [u8], scratch: &'a mut [u8]) -> Result<Reassembly<'a>, HelloError> {
    // Start of the current record in `buf`.
    let mut pos = 0usize;
    // Message bytes carried by the records before the current one.
    let mut before = 0usize;
    // The message header, gathered byte by byte because it may itself be split across records.
    let mut header = [0u8; MESSAGE_HEADER_LEN];
    let mut header_len = 0usize;
    // Message length including its header, once the header is complete.
    let mut total: Option<usize> = None;

    for index in 0..MAX_RECORDS {
        let rest = buf.get(pos..).unwrap_or_default();
        let Some(len) = record::read_header(rest, index == 0)? else {
            return Ok(Reassembly::NeedMore);
        };
        // No overflow: pos <= buf.len() <= isize::MAX and len <= 2^14.
        let frag_start = pos + HEADER_LEN;
        let frag_end = frag_start + len;
        let available = buf.get(frag_start..frag_end.min(buf.len())).unwrap_or_default();
        let complete = available.len() == len;

        let total = match total {
            Some(t) => t,
            None => {
                let mut bytes = available.iter();
                while header_len < MESSAGE_HEADER_LEN {
                    let (Some(slot), Some(&b)) = (header.get_mut(header_len), bytes.next()) else { break };
                    *slot = b;
                    header_len += 1;
                }
                if header_len >= 1 && header[0] != CLIENT_HELLO {
                    return Err(HelloError::NotClientHello);
                }
                if header_len < MESSAGE_HEADER_LEN {
                    if !complete {
                        return Ok(Reassembly::NeedMore);
                    }
                    // The whole fragment was header bytes; the rest of the header is in the next record.
                    before += len;
                    pos = frag_end;
                    continue;
                }
                let body_len = u32::from_be_bytes([0, header[1], header[2], header[3]]);
                // A 24-bit length always fits a usize on the targets we build for (32 and 64 bit).
                let t = MESSAGE_HEADER_LEN + body_len as usize;
                if before + len > t {
                    return Err(HelloError::Malformed(PAST_THE_HELLO));
                }
                if index > 0 || t != len {
                    // Spread over several records: it must fit the scratch buffer, which gets the header
                    // now and every fragment (header bytes included) at its message offset below.
                    if t > scratch.len() {
                        return Err(HelloError::TooLarge);
                    }
                    copy(scratch, 0, &header);
                }
                total = Some(t);
                t
            }
        };

        if before + len > total {
            return Err(HelloError::Malformed(PAST_THE_HELLO));
        }

        if index == 0 && total == len {
            // Common case: the whole message in the first record, read in place.
            if !complete {
                return Ok(Reassembly::NeedMore);
            }
            let body = available.get(MESSAGE_HEADER_LEN..).unwrap_or_default();
            return Ok(Reassembly::Complete { body, consumed: frag_end });
        }

        copy(scratch, before, available);
        if !complete {
            return Ok(Reassembly::NeedMore);
        }
        before += len;
        pos = frag_end;
        if before == total {
            let message: &'a [u8] = scratch;
            let body = message.get(MESSAGE_HEADER_LEN..total).unwrap_or_default();
            return Ok(Reassembly::Complete { body, consumed: frag_end });
        }
    }
    Err(HelloError::TooLarge)
}

/// Copies `src` into `dst` at `at`, as far as `dst` reaches (callers have checked that all of it does).
fn copy(dst: &mut [u8], at: usize, src: &[u8]) {
    if let Some(window) = dst.get_mut(at..) {
        for (d, s) in window.iter_mut().zip(src) {
            *d = *s;
        }
    }
}
