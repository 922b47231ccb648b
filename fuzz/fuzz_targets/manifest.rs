//! Manifest files: documents read into objects, then admitted and compiled into a route table.
//! The checks live in `router::fuzzing::manifest`, so that the seeds in corpus/manifest/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::manifest(data));
