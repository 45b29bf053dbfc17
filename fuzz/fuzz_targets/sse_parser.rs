//! libFuzzer target: the SSE parser and both decoders on arbitrary bytes (see `panto_fuzz::sse`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| panto_fuzz::sse(data));
