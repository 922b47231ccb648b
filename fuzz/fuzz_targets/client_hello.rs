//! Fuzz target for `router_common::tls::parse_client_hello`: any bytes, read with a full-size and a
//! small scratch buffer, must not panic, and the answers must keep the reader's promises:
//!
//! - every prefix of the input gives `NeedMore` or the input's own answer, and once a prefix gives
//!   the answer every longer prefix gives it too (a hello exactly from its `consumed` offset on);
//! - `looks_like_tls` says `Some(false)` exactly when the answer is `NotTls`;
//! - the scratch size only matters through `TooLarge`;
//! - a hello's fields are within what the protocol allows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use router_common::tls::{looks_like_tls, parse_client_hello, HelloError, Parsed, MAX_HELLO};

/// Scratch size that makes most fragmented hellos too large.
const SMALL_SCRATCH: usize = 64;

/// Inputs up to this length have every prefix checked; longer ones this many evenly spaced prefixes.
const ALL_PREFIXES_UP_TO: usize = 1024;

/// An answer detached from the buffers, so answers of separate calls compare.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    NeedMore,
    Hello { name: Option<Vec<u8>>, alpn: Vec<Vec<u8>>, legacy_version: u16, tls13: bool, consumed: usize },
    Error(HelloError),
}

fn outcome(buf: &[u8], scratch: &mut [u8]) -> Outcome {
    match parse_client_hello(buf, scratch) {
        Ok(Parsed::NeedMore) => Outcome::NeedMore,
        Ok(Parsed::Hello(h)) => {
            let name = h.server_name.map(|n| n.as_bytes().to_vec());
            let alpn: Vec<Vec<u8>> = h.alpn.iter().map(<[u8]>::to_vec).collect();
            assert!(h.consumed <= buf.len(), "consumed {} past {} bytes", h.consumed, buf.len());
            assert!(name.as_ref().is_none_or(|n| !n.is_empty()), "empty server name");
            assert!(alpn.iter().all(|p| !p.is_empty()), "empty ALPN name");
            assert_eq!(h.alpn.is_empty(), alpn.is_empty());
            Outcome::Hello {
                name,
                alpn,
                legacy_version: h.legacy_version,
                tls13: h.supported_versions_has_tls13,
                consumed: h.consumed,
            }
        }
        Err(e) => Outcome::Error(e),
    }
}

fn check_prefixes(data: &[u8], scratch: &mut [u8], full: &Outcome) {
    let step = data.len().div_ceil(ALL_PREFIXES_UP_TO).max(1);
    let mut decided = false;
    for n in (0..data.len()).step_by(step) {
        let got = outcome(&data[..n], scratch);
        match full {
            Outcome::Hello { consumed, .. } if n < *consumed => assert_eq!(got, Outcome::NeedMore, "prefix {n}"),
            Outcome::NeedMore => assert_eq!(got, Outcome::NeedMore, "prefix {n}"),
            _ if decided => assert_eq!(&got, full, "prefix {n} after the answer"),
            _ if got == Outcome::NeedMore => {}
            _ => {
                assert_eq!(&got, full, "prefix {n}");
                decided = true;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut scratch = vec![0u8; MAX_HELLO];

    let full = outcome(data, &mut scratch);
    match looks_like_tls(data) {
        Some(false) => assert_eq!(full, Outcome::Error(HelloError::NotTls)),
        Some(true) => assert_ne!(full, Outcome::Error(HelloError::NotTls)),
        None => assert!(data.len() < 2 && full == Outcome::NeedMore, "{full:?}"),
    }
    check_prefixes(data, &mut scratch, &full);

    let small = outcome(data, &mut scratch[..SMALL_SCRATCH]);
    if small != Outcome::Error(HelloError::TooLarge) {
        assert_eq!(small, full, "scratch size changed the answer");
    }
    if full == Outcome::Error(HelloError::TooLarge) {
        assert_eq!(small, full, "too large for the full scratch but not for a smaller one");
    }
    check_prefixes(data, &mut scratch[..SMALL_SCRATCH], &small);
});
