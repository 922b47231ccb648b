//! The PROXY protocol header (v1 text, v2 binary) a load balancer puts before a client's bytes.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::listen::proxy_protocol::{parse, Parsed, ProxyProtocolError};
use crate::listen::read_proxy_header;

/// Inputs up to this length have every prefix read; longer ones this many evenly spaced prefixes.
const ALL_PREFIXES_UP_TO: usize = 512;

/// An answer with the error reduced to its kind (errors carry no comparable payload).
fn outcome(buf: &[u8]) -> Result<Option<Parsed>, &'static str> {
    parse(buf).map_err(|error| error.reason())
}

/// Every prefix of the input needs more bytes or gives the whole input's answer (a header that is complete
/// is complete at its last byte); the header's length is within the input; and the stream reader, reading
/// the same bytes from a connection, finds the same header and hands back exactly the bytes after it.
pub fn proxy_protocol(data: &[u8]) {
    let full = outcome(data);
    let step = data.len().div_ceil(ALL_PREFIXES_UP_TO).max(1);
    let mut decided = false;
    for n in (0..data.len()).step_by(step) {
        let got = outcome(&data[..n]);
        let complete = matches!(full, Ok(Some((_, length))) if n >= length);
        if got == Ok(None) && !decided && !complete {
            continue;
        }
        assert_eq!(got, full, "the first {n} of {} bytes", data.len());
        decided = true;
    }
    if let Ok(Some((_, length))) = full {
        assert!((1..=data.len()).contains(&length), "header of {length} bytes in {}", data.len());
    }

    let mut stream = data;
    let read = runtime().block_on(read_proxy_header(&mut stream, Duration::from_secs(1)));
    match (read, full) {
        (Ok(header), Ok(Some((addresses, length)))) => {
            assert_eq!(header.source.zip(header.destination), addresses);
            let mut after = header.leftover;
            after.extend_from_slice(stream);
            assert_eq!(after, &data[length..], "the bytes after the header");
        }
        (Err(ProxyProtocolError::Closed(read)), Ok(None)) => assert_eq!(read, data.len()),
        (Err(error), Err(reason)) => assert_eq!(error.reason(), reason),
        (read, full) => panic!("the stream reader says {read:?}, the parser {full:?}"),
    }
}

/// One current-thread runtime for every input (the reader's timeout needs one; the bytes are all there).
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a current-thread runtime")
    })
}
