//! HAProxy duration strings (timeout settings and annotations).
//! The checks live in `router::fuzzing::haproxy_duration`, so that the seeds in corpus/haproxy_duration/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::haproxy_duration(data));
