//! Fuzz target: envelope reading, segment splitting and fingerprinting never panic on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(interchange) = edi_inbox::edi::read(data) {
        let _ = interchange.fingerprint();
    }
});
