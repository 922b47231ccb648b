//! A chunked body (RFC 9112 section 7.1) as the router decodes it while it arrives: a pod's response body
//! (lenient decoder) and a client's request body (strict decoder).

use bytes::BytesMut;
use http::HeaderMap;

use crate::proxy::pod::chunked::{encode_chunk, encode_end, ChunkError, ChunkedDecoder, Decoded};

/// What a decoder made of a whole input.
#[derive(Debug, PartialEq)]
struct Decoding {
    body: Vec<u8>,
    trailers: HeaderMap,
    /// `Some(Ok)`: the body ended; `Some(Err)`: the framing was refused; `None`: more bytes were wanted.
    end: Option<Result<(), ChunkError>>,
}

/// Feeds `wire` to a decoder in pieces of `piece` bytes (the last may be shorter), as reads would bring it.
fn decode_in_pieces(wire: &[u8], piece: usize) -> Decoding {
    decode_with(ChunkedDecoder::default(), wire, piece)
}

fn decode_with(mut decoder: ChunkedDecoder, wire: &[u8], piece: usize) -> Decoding {
    let mut buf = BytesMut::new();
    let mut decoding = Decoding { body: Vec::new(), trailers: HeaderMap::new(), end: None };
    for bytes in wire.chunks(piece) {
        buf.extend_from_slice(bytes);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Decoded::Data(data)) => {
                    assert!(!data.is_empty(), "an empty data frame");
                    decoding.body.extend_from_slice(&data);
                }
                Ok(Decoded::Trailers(trailers)) => decoding.trailers = trailers,
                Ok(Decoded::End) => {
                    decoding.end = Some(Ok(()));
                    return decoding;
                }
                Ok(Decoded::NeedMore) => break,
                Err(error) => {
                    decoding.end = Some(Err(error));
                    return decoding;
                }
            }
        }
    }
    decoding
}

/// The body decodes to the same bytes, trailers and end however the reads split it, and what it decodes to
/// encodes to a body that decodes the same again. The strict decoder of request bodies is as indifferent to
/// the splits, and never reads a body differently from the lenient one: it decodes the same or refuses.
pub fn pod_chunked(data: &[u8]) {
    let whole = decode_in_pieces(data, data.len().max(1));
    let strict = decode_with(ChunkedDecoder::strict(), data, data.len().max(1));
    for piece in [1, 2, 7, 64] {
        assert_eq!(decode_in_pieces(data, piece), whole, "read {piece} bytes at a time");
        assert_eq!(decode_with(ChunkedDecoder::strict(), data, piece), strict, "strict, {piece} bytes at a time");
    }
    if matches!(strict.end, Some(Ok(()))) {
        assert_eq!(strict, whole, "the strict decoder read the body otherwise");
    }
    if whole.end != Some(Ok(())) {
        return;
    }
    let mut wire = BytesMut::new();
    for chunk in whole.body.chunks(1000) {
        encode_chunk(chunk, &mut wire);
    }
    encode_end(Some(&whole.trailers), &mut wire);
    assert_eq!(decode_in_pieces(&wire, wire.len()), whole, "re-encoded as {wire:?}");
}
