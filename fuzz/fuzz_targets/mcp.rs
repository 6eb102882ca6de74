#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| skill_fuzz::mcp(data));
