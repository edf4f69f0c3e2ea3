//! Fuzz target: the full interchange → documents → invoices mapping never panics, and what it
//! accepts serializes to JSON (the stored response) without failing.
#![no_main]

use edi_inbox::edi::Limits;
use libfuzzer_sys::fuzz_target;

/// Small enough that the fuzzer reaches both limits.
const LIMITS: Limits = Limits { max_segments: 64, max_element_length: 48 };

fuzz_target!(|data: &[u8]| {
    let mut scratch = Vec::new();
    if let Ok(interchange) = edi_inbox::edi::parse(data, &mut scratch, LIMITS)
        && let Ok(documents) = interchange.documents()
    {
        for document in documents {
            if let Some(invoice) = document.invoice {
                serde_json::to_string(&invoice).expect("an invoice always serializes");
            }
        }
    }
});
