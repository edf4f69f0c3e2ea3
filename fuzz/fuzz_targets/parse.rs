//! Fuzz target: envelope reading, segment splitting and fingerprinting never panic on any bytes.
#![no_main]

use edi_inbox::edi::Limits;
use libfuzzer_sys::fuzz_target;

/// Small enough that the fuzzer reaches both limits.
const LIMITS: Limits = Limits { max_segments: 64, max_element_length: 48 };

fuzz_target!(|data: &[u8]| {
    let mut scratch = Vec::new();
    if let Ok(interchange) = edi_inbox::edi::parse(data, &mut scratch, LIMITS) {
        let _ = interchange.fingerprint();
    }
});
