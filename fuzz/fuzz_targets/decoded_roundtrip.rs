//! libFuzzer target: the decoders' output written through the JSONL store and loaded back (see
//! `panto_fuzz::decoded_roundtrip`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| panto_fuzz::decoded_roundtrip(data));
