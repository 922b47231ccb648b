//! Route annotations and the router-wide header actions, compiled into a route's policy and used.
//! The checks live in `router::fuzzing::annotations`, so that the seeds in corpus/annotations/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::annotations(data));
