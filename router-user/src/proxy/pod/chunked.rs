//! The chunked transfer coding (RFC 9112 section 7.1): decoding a pod's response body or a client's request
//! body as it arrives, and encoding a body the router has to frame itself. Client request bodies are decoded
//! strictly (every line ends in CRLF, nothing but spaces between the size and its extensions, no bare CR or
//! LF in an extension): a request the router reads one way must not be read another way by a pod.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};

/// A chunk-size line or trailer section longer than this is refused.
const MAX_LINE: usize = 8 * 1024;
const MAX_TRAILERS: usize = 32;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChunkError {
    #[error("invalid chunk size line")]
    BadSize,
    #[error("chunk data not followed by CRLF")]
    MissingCrlf,
    #[error("invalid trailer section")]
    BadTrailers,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    Data(Bytes),
    Trailers(HeaderMap),
    /// The last chunk and the trailer section have been read.
    End,
    /// More bytes are needed.
    NeedMore,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

#[derive(Debug, Default)]
pub struct ChunkedDecoder {
    state: State,
    strict: bool,
}

impl ChunkedDecoder {
    /// The decoder of client request bodies (see the module comment).
    pub fn strict() -> ChunkedDecoder {
        ChunkedDecoder { state: State::Size, strict: true }
    }

    /// Consumes what it can from the front of `buf`.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, ChunkError> {
        loop {
            match self.state {
                State::Size => {
                    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
                        return if buf.len() > MAX_LINE { Err(ChunkError::BadSize) } else { Ok(Decoded::NeedMore) };
                    };
                    let size = if self.strict { strict_chunk_size(&buf[..end])? } else { chunk_size(&buf[..end])? };
                    buf.advance(end + 1);
                    self.state = if size == 0 { State::Trailers } else { State::Data(size) };
                }
                State::Data(remaining) => {
                    if buf.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    let take = remaining.min(buf.len() as u64);
                    let data = buf.split_to(take as usize).freeze();
                    self.state = if take == remaining { State::DataEnd } else { State::Data(remaining - take) };
                    return Ok(Decoded::Data(data));
                }
                State::DataEnd => match line_end(buf) {
                    None => return Ok(Decoded::NeedMore),
                    Some(2) if self.strict => return Err(ChunkError::MissingCrlf),
                    Some(0 | 2) => self.state = State::Size,
                    Some(_) => return Err(ChunkError::MissingCrlf),
                },
                State::Trailers => {
                    if self.strict && buf.first() == Some(&b'\n') {
                        return Err(ChunkError::BadTrailers);
                    }
                    if let Some(0 | 2) = line_end(buf) {
                        self.state = State::Done;
                        return Ok(Decoded::End);
                    }
                    return self.trailers(buf);
                }
                State::Done => return Ok(Decoded::End),
            }
        }
    }

    fn trailers(&mut self, buf: &mut BytesMut) -> Result<Decoded, ChunkError> {
        let mut slots = [httparse::EMPTY_HEADER; MAX_TRAILERS];
        match httparse::parse_headers(buf, &mut slots) {
            Ok(httparse::Status::Complete((length, fields))) => {
                let mut trailers = HeaderMap::with_capacity(fields.len());
                for field in fields {
                    let name = HeaderName::from_bytes(field.name.as_bytes()).map_err(|_| ChunkError::BadTrailers)?;
                    let value = HeaderValue::from_bytes(field.value).map_err(|_| ChunkError::BadTrailers)?;
                    trailers.append(name, value);
                }
                buf.advance(length);
                self.state = State::Done;
                Ok(Decoded::Trailers(trailers))
            }
            Ok(httparse::Status::Partial) if buf.len() > MAX_LINE => Err(ChunkError::BadTrailers),
            Ok(httparse::Status::Partial) => Ok(Decoded::NeedMore),
            Err(_) => Err(ChunkError::BadTrailers),
        }
    }
}

/// The hexadecimal size before any `;extension`, from a line without its `\n`.
fn chunk_size(line: &[u8]) -> Result<u64, ChunkError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let digits = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
    if digits.is_empty() || digits.len() > 15 {
        return Err(ChunkError::BadSize);
    }
    digits.iter().try_fold(0u64, |size, &b| {
        let digit = (b as char).to_digit(16).ok_or(ChunkError::BadSize)?;
        Ok(size * 16 + u64::from(digit))
    })
}

/// The size of a strict chunk-size line (without its `\n`): hex digits, optional spaces or tabs, then any
/// `;extension`, then the CR.
fn strict_chunk_size(line: &[u8]) -> Result<u64, ChunkError> {
    let line = line.strip_suffix(b"\r").ok_or(ChunkError::BadSize)?;
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let (size, rest) = line.split_at(digits);
    let rest = rest.trim_ascii_start();
    let spaces_only = line[digits..line.len() - rest.len()].iter().all(|&b| b == b' ' || b == b'\t');
    if size.is_empty() || size.len() > 15 || !spaces_only || !(rest.is_empty() || rest[0] == b';') {
        return Err(ChunkError::BadSize);
    }
    if rest.contains(&b'\r') {
        return Err(ChunkError::BadSize);
    }
    Ok(size.iter().fold(0u64, |n, &b| n * 16 + u64::from((b as char).to_digit(16).unwrap_or(0))))
}

/// At a line end (`\r\n` or `\n`): consumes it and returns `Some(0)` (`Some(2)` for a bare `\n`); `Some(1)`
/// when something else is there; `None` when more bytes are needed.
fn line_end(buf: &mut BytesMut) -> Option<u8> {
    match buf.first() {
        None => None,
        Some(b'\n') => {
            buf.advance(1);
            Some(2)
        }
        Some(b'\r') => match buf.get(1) {
            None => None,
            Some(b'\n') => {
                buf.advance(2);
                Some(0)
            }
            Some(_) => Some(1),
        },
        Some(_) => Some(1),
    }
}

/// One chunk of `data` (nothing for empty data: an empty chunk would end the body).
pub fn encode_chunk(data: &[u8], out: &mut BytesMut) {
    if data.is_empty() {
        return;
    }
    out.reserve(data.len() + 20);
    out.put_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// The last chunk, with `trailers` if any.
pub fn encode_end(trailers: Option<&HeaderMap>, out: &mut BytesMut) {
    out.put_slice(b"0\r\n");
    for (name, value) in trailers.into_iter().flatten() {
        out.put_slice(name.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(value.as_bytes());
        out.put_slice(b"\r\n");
    }
    out.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` to a decoder `step` bytes at a time; returns the body, the trailers, and whether it ended.
    fn decode_in_steps(wire: &[u8], step: usize) -> Result<(Vec<u8>, HeaderMap, bool), ChunkError> {
        let mut decoder = ChunkedDecoder::default();
        let mut buf = BytesMut::new();
        let (mut body, mut trailers) = (Vec::new(), HeaderMap::new());
        for piece in wire.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match decoder.decode(&mut buf)? {
                    Decoded::Data(data) => body.extend_from_slice(&data),
                    Decoded::Trailers(t) => trailers = t,
                    Decoded::End => return Ok((body, trailers, true)),
                    Decoded::NeedMore => break,
                }
            }
        }
        Ok((body, trailers, false))
    }

    #[test]
    fn decodes_at_every_split() {
        let wire = b"5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-checksum: 42\r\n\r\n";
        for step in 1..=wire.len() {
            let (body, trailers, ended) = decode_in_steps(wire, step).expect("valid");
            assert!(ended, "step {step}");
            assert_eq!(body, b"helloabcdefghijklmnopqrstuvwxyz", "step {step}");
            assert_eq!(trailers["x-checksum"], "42", "step {step}");
        }
    }

    #[test]
    fn bare_newlines_and_no_trailers() {
        let (body, trailers, ended) = decode_in_steps(b"3\nabc\n0\n\n", 1).expect("valid");
        assert!(ended);
        assert_eq!(body, b"abc");
        assert!(trailers.is_empty());
    }

    #[test]
    fn refuses_bad_framing() {
        assert_eq!(decode_in_steps(b"zz\r\n", 4).expect_err("refused"), ChunkError::BadSize);
        assert_eq!(decode_in_steps(b"\r\n", 2).expect_err("refused"), ChunkError::BadSize);
        assert_eq!(decode_in_steps(b"2\r\nabX\r\n", 9).expect_err("refused"), ChunkError::MissingCrlf);
        assert_eq!(decode_in_steps(b"ffffffffffffffff\r\n", 18).expect_err("refused"), ChunkError::BadSize);
        assert!(decode_in_steps(&[b'1'; MAX_LINE + 2], MAX_LINE + 2).is_err());
    }

    #[test]
    fn encodes_what_it_decodes() {
        let mut wire = BytesMut::new();
        encode_chunk(b"hello ", &mut wire);
        encode_chunk(b"", &mut wire);
        encode_chunk(&[b'x'; 300], &mut wire);
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        encode_end(Some(&trailers), &mut wire);
        let (body, decoded_trailers, ended) = decode_in_steps(&wire, 7).expect("valid");
        assert!(ended);
        assert_eq!(body.len(), 306);
        assert_eq!(decoded_trailers, trailers);
    }
}
