//! The PROXY protocol header (v1 and v2): the parser and the stream reader.
//! The checks live in `router::fuzzing::proxy_protocol`, so that the seeds in corpus/proxy_protocol/
//! also run in the router's unit tests.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| router::fuzzing::proxy_protocol(data));
