//! OCSP responses as a responder sends them (ROUTER_OCSP_STAPLING).
//! The checks live in `router::fuzzing::ocsp_response`, so that the seeds in corpus/ocsp_response/ also run in
//! the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::ocsp_response(data));
