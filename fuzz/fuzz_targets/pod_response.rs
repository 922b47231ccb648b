//! A pod's HTTP/1.1 response as the pod client reads it: head, then body by its framing.
//! The checks live in `router::fuzzing::pod_response`, so that the seeds in corpus/pod_response/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::pod_response(data));
