//! OCSP responses (ROUTER_OCSP_STAPLING): what a responder answers, checked for a fixed certificate (the chain
//! in `testdata/ocsp-chain.pem`, whose seeds in `fuzz/corpus/ocsp_response/` openssl made).

use std::time::{Duration, UNIX_EPOCH};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

use crate::tls::check_ocsp_response;

const CHAIN: &str = include_str!("testdata/ocsp-chain.pem");
/// 2030-01-01: after the seeds' thisUpdate, before their nextUpdate.
const NOW: Duration = Duration::from_secs(1_893_456_000);

/// Any bytes: no panic; a response that verifies has no strict prefix that verifies too (DER lengths are
/// definite, so a cut answer must never pass for a whole one).
pub fn ocsp_response(data: &[u8]) {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(CHAIN.as_bytes()).collect::<Result<_, _>>().expect("the fixed chain loads");
    let now = UNIX_EPOCH + NOW;
    if check_ocsp_response(&chain, data, now).is_err() {
        return;
    }
    for end in 0..data.len() {
        assert!(check_ocsp_response(&chain, &data[..end], now).is_err(), "a prefix of {end} bytes verifies");
    }
}
