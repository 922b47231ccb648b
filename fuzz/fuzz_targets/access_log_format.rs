//! Access-log format strings and capture lists, parsed and rendered.
//! The checks live in `router::fuzzing::access_log_format`, so that the seeds in corpus/access_log_format/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::access_log_format(data));
