//! Writes a generated X12 810 interchange of at least BYTES bytes (three-line invoices) to stdout,
//! under interchange control number CONTROL, its invoices numbered `INV-{CONTROL}-{n}` (so that the
//! interchanges of two controls hold invoices of their own), for `bench/memory.sh` and
//! `bench/large.sh`:
//! `cargo run --release --example corpus -- BYTES [CONTROL]`.

#[path = "../benches/corpus.rs"]
#[allow(dead_code)] // the EDIFACT generator serves the benchmarks
mod corpus;

use std::io::Write;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bytes = args.next().and_then(|n| n.parse().ok()).unwrap_or(10 * 1024 * 1024 - 4096);
    let control: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let body = String::from_utf8(corpus::x12_810(bytes)).expect("the generator writes ASCII");
    let numbered = format!("{control:09}");
    let body = body.replacen("*000000001*0*P*", &format!("*{numbered}*0*P*"), 1).replacen(
        "IEA*1*000000001~",
        &format!("IEA*1*{numbered}~"),
        1,
    );
    let body = body.replace("*INV-", &format!("*INV-{control}-"));
    std::io::stdout().write_all(body.as_bytes())
}
