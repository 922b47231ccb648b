//! A client's HTTP/1.x request heads, read by the router's own client-side loop, pipelined and split.
//! The checks live in `router::fuzzing::request_head`, so that the seeds in corpus/request_head/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::request_head(data));
