//! Writes the benchmark interchanges and times edi-inbox's parser on them, for `bench/compare.py`:
//! `cargo run --release --example throughput -- DIR` prints one line per file: name, bytes, MB/s.

#[path = "../benches/corpus.rs"]
mod corpus;

use std::time::{Duration, Instant};

use edi_inbox::edi;

fn main() -> std::io::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "target/bench".into()));
    std::fs::create_dir_all(&dir)?;
    const MIB: usize = 1024 * 1024;
    for (name, bytes) in
        [("x12-810-1mib.edi", corpus::x12_810(MIB)), ("edifact-invoic-1mib.edi", corpus::edifact_invoic(MIB))]
    {
        std::fs::write(dir.join(name), &bytes)?;
        let mut scratch = Vec::new();
        let (mut runs, started) = (0u32, Instant::now());
        while runs < 5 || started.elapsed() < Duration::from_secs(2) {
            let interchange = edi::parse(&bytes, &mut scratch, Default::default()).expect("valid");
            std::hint::black_box((interchange.documents().expect("valid").len(), interchange.fingerprint()));
            runs += 1;
        }
        let seconds = started.elapsed().as_secs_f64() / f64::from(runs);
        println!("{name} {} {:.1}", bytes.len(), bytes.len() as f64 / seconds / 1e6);
    }
    Ok(())
}
