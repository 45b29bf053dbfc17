//! libFuzzer target: the JSONL session store on an arbitrary session file (see
//! `panto_fuzz::jsonl`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| panto_fuzz::jsonl(data));
