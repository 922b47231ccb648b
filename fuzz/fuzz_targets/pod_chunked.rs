//! A pod's chunked response body, decoded as it arrives in reads of several sizes.
//! The checks live in `router::fuzzing::pod_chunked`, so that the seeds in corpus/pod_chunked/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::pod_chunked(data));
