//! Parser throughput: read + validate + map + fingerprint of a 1 MiB X12 810 interchange (~2,000
//! invoices) and a 1 MiB EDIFACT INVOIC interchange. `cargo bench --bench parse`.

#[path = "corpus.rs"]
mod corpus;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use edi_inbox::edi;

const MIB: usize = 1024 * 1024;

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for (name, bytes) in
        [("x12_810_1mib", corpus::x12_810(MIB)), ("edifact_invoic_1mib", corpus::edifact_invoic(MIB))]
    {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(name, |b| {
            let mut scratch = Vec::new();
            b.iter(|| {
                let interchange =
                    edi::parse(black_box(&bytes), &mut scratch, Default::default()).expect("valid");
                let documents = interchange.documents().expect("valid");
                (interchange.fingerprint(), documents.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
