//! Fuzz target: envelope reading, segment splitting and fingerprinting never panic on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut scratch = Vec::new();
    if let Ok(interchange) = edi_inbox::edi::parse(data, &mut scratch) {
        let _ = interchange.fingerprint();
    }
});
