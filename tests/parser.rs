//! Property tests of the pure parser: generated valid interchanges (random separators, groups,
//! documents, lines, escaped names) parse back to what was generated, and no byte sequence, random
//! or one byte away from a valid interchange, makes it panic.

use edi_inbox::edi::{self, Standard};
use proptest::prelude::*;
use rust_decimal::Decimal;

#[derive(Clone, Debug)]
struct Line {
    quantity: u32,
    cents: u32,
}

#[derive(Clone, Debug)]
struct Doc {
    number: String,
    lines: Vec<Line>,
}

impl Doc {
    fn total_cents(&self) -> u64 {
        self.lines.iter().map(|l| u64::from(l.quantity) * u64::from(l.cents)).sum()
    }
}

fn line() -> impl Strategy<Value = Line> {
    (1u32..1000, 1u32..100_000).prop_map(|(quantity, cents)| Line { quantity, cents })
}

fn doc() -> impl Strategy<Value = Doc> {
    ("[A-Z0-9-]{1,12}", prop::collection::vec(line(), 1..5)).prop_map(|(number, lines)| Doc { number, lines })
}

fn groups() -> impl Strategy<Value = Vec<Vec<Doc>>> {
    prop::collection::vec(prop::collection::vec(doc(), 1..4), 1..3)
}

/// Element, component and segment separators that X12 senders really use.
fn x12_separators() -> impl Strategy<Value = (char, char, char)> {
    (
        prop::sample::select(vec!['*', '|', '^', '!']),
        prop::sample::select(vec![':', '>', '\\', '<']),
        prop::sample::select(vec!['~', '\n', '\'', '`']),
    )
        .prop_filter("distinct", |(e, c, s)| e != c && c != s && e != s)
}

fn price(cents: u32) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn x12(
    sender: &str,
    control: u32,
    (e, c, s): (char, char, char),
    line_breaks: bool,
    groups: &[Vec<Doc>],
) -> String {
    let nl = if line_breaks && s != '\n' { "\r\n" } else { "" };
    let mut out = format!(
        "ISA{e}00{e}          {e}00{e}          {e}ZZ{e}{sender:<15}{e}ZZ{e}RECEIVER       {e}260317{e}1015{e}U{e}00401{e}{control:09}{e}0{e}P{e}{c}{s}{nl}"
    );
    for (g, docs) in groups.iter().enumerate() {
        let gs = g + 1;
        out += &format!("GS{e}IN{e}{sender}{e}RECEIVER{e}20260317{e}1015{e}{gs}{e}X{e}004010{s}{nl}");
        for (d, doc) in docs.iter().enumerate() {
            let st = format!("{:04}", d + 1);
            let mut segments = vec![
                format!("ST{e}810{e}{st}"),
                format!("BIG{e}20260317{e}{}", doc.number),
                format!("N1{e}SE{e}SELLER{e}92{e}S-1"),
            ];
            for (n, line) in doc.lines.iter().enumerate() {
                segments.push(format!(
                    "IT1{e}{}{e}{}{e}EA{e}{}{e}{e}VP{e}SKU-{n}",
                    n + 1,
                    line.quantity,
                    price(line.cents)
                ));
                segments.push(format!("PID{e}F{e}{e}{e}{e}ITEM {n}"));
            }
            segments.push(format!("TDS{e}{}", doc.total_cents()));
            segments.push(format!("SE{e}{}{e}{st}", segments.len() + 1));
            for segment in segments {
                out += &format!("{segment}{s}{nl}");
            }
        }
        out += &format!("GE{e}{}{e}{gs}{s}{nl}", docs.len());
    }
    out += &format!("IEA{e}{}{e}{control:09}{s}{nl}", groups.len());
    out
}

/// EDIFACT service characters: component, element, decimal mark, release, terminator.
fn una() -> impl Strategy<Value = (char, char, char, char, char)> {
    (
        prop::sample::select(vec![':', '^']),
        prop::sample::select(vec!['+', '|']),
        prop::sample::select(vec!['.', ',']),
        prop::sample::select(vec!['?', '\\']),
        prop::sample::select(vec!['\'', '~']),
    )
}

fn escape(text: &str, specials: &[char], release: char) -> String {
    text.chars().fold(String::new(), |mut out, ch| {
        if specials.contains(&ch) {
            out.push(release);
        }
        out.push(ch);
        out
    })
}

fn edifact(
    control: u32,
    (c, e, d, r, s): (char, char, char, char, char),
    name: &str,
    docs: &[Doc],
) -> String {
    let esc = |t: &str| escape(t, &[c, e, r, s], r);
    let amount = |cents: u64| format!("{}{d}{:02}", cents / 100, cents % 100);
    let mut out = format!(
        "UNA{c}{e}{d}{r} {s}UNB{e}UNOC{c}3{e}SENDER{c}14{e}RECEIVER{c}14{e}260317{c}1015{e}{control}{s}\n"
    );
    for (m, doc) in docs.iter().enumerate() {
        let reference = m + 1;
        let mut segments = vec![
            format!("UNH{e}{reference}{e}INVOIC{c}D{c}96A{c}UN"),
            format!("BGM{e}380{e}{}{e}9", esc(&doc.number)),
            format!("DTM{e}137{c}20260317{c}102"),
            format!("NAD{e}SU{e}4000001000005{c}{c}9{e}{e}{}", esc(name)),
            format!("CUX{e}2{c}EUR{c}4"),
        ];
        for (n, line) in doc.lines.iter().enumerate() {
            segments.push(format!("LIN{e}{}{e}{e}P{n}{c}EN", n + 1));
            segments.push(format!("QTY{e}47{c}{}", line.quantity));
            segments
                .push(format!("MOA{e}203{c}{}", amount(u64::from(line.quantity) * u64::from(line.cents))));
            segments.push(format!("PRI{e}AAA{c}{}", amount(u64::from(line.cents))));
        }
        segments.push(format!("UNS{e}S"));
        segments.push(format!("MOA{e}77{c}{}", amount(doc.total_cents())));
        segments.push(format!("UNT{e}{}{e}{reference}", segments.len() + 1));
        for segment in segments {
            out += &format!("{segment}{s}\n");
        }
    }
    out += &format!("UNZ{e}{}{e}{control}{s}", docs.len());
    out
}

fn cents(value: u64) -> Decimal {
    Decimal::new(i64::try_from(value).unwrap(), 2)
}

/// Parses and maps whatever it is given; the result does not matter, only that it returns.
fn parse_everything(bytes: &[u8]) {
    let mut scratch = Vec::new();
    if let Ok(interchange) = edi::parse(bytes, &mut scratch, Default::default()) {
        let _ = interchange.fingerprint();
        let _ = interchange.documents();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_x12_round_trips(
        sender in "[A-Z0-9]{1,15}",
        control in 1u32..999_999_999,
        separators in x12_separators(),
        line_breaks in any::<bool>(),
        groups in groups(),
    ) {
        let text = x12(&sender, control, separators, line_breaks, &groups);
        let interchange = edi::read(text.as_bytes()).expect("header");
        prop_assert_eq!(interchange.envelope.standard, Standard::X12);
        prop_assert_eq!(&interchange.envelope.sender.id, &sender);
        prop_assert_eq!(&interchange.envelope.control_number, &format!("{control:09}"));
        let documents = interchange.documents().expect("valid");
        let expected: Vec<&Doc> = groups.iter().flatten().collect();
        prop_assert_eq!(documents.len(), expected.len());
        for (document, want) in documents.iter().zip(expected) {
            let invoice = document.invoice.as_ref().expect("an 810 is an invoice");
            prop_assert_eq!(&invoice.number, &want.number);
            prop_assert_eq!(invoice.total, cents(want.total_cents()));
            prop_assert_eq!(invoice.lines.len(), want.lines.len());
            let sum: Decimal = invoice.lines.iter().map(|l| l.amount).sum();
            prop_assert_eq!(sum, invoice.total);
        }
    }

    #[test]
    fn generated_edifact_round_trips(
        control in 1u32..99_999_999,
        service in una(),
        name in "[A-Za-z ?:+'|^~\\\\]{1,20}",
        docs in prop::collection::vec(doc(), 1..4),
    ) {
        let text = edifact(control, service, &name, &docs);
        let interchange = edi::read(text.as_bytes()).expect("header");
        prop_assert_eq!(&interchange.envelope.control_number, &control.to_string());
        let documents = interchange.documents().expect("valid");
        prop_assert_eq!(documents.len(), docs.len());
        for (document, want) in documents.iter().zip(&docs) {
            let invoice = document.invoice.as_ref().expect("an INVOIC is an invoice");
            prop_assert_eq!(&invoice.number, &want.number);
            prop_assert_eq!(invoice.total, cents(want.total_cents()));
            prop_assert_eq!(invoice.seller.as_ref().and_then(|p| p.name.clone()), Some(name.trim_end().to_owned()).filter(|n| !n.is_empty()));
            for (line, want) in invoice.lines.iter().zip(&want.lines) {
                prop_assert_eq!(line.quantity, Decimal::from(want.quantity));
                prop_assert_eq!(line.unit_price, Some(cents(u64::from(want.cents))));
            }
        }
    }

    #[test]
    fn rewrapping_keeps_the_fingerprint(groups in groups(), separators in x12_separators()) {
        let plain = x12("ACME", 7, separators, false, &groups);
        let wrapped = x12("ACME", 7, separators, true, &groups);
        let e = separators.0;
        // Gateways re-stamp ISA09/ISA10 and GS04/GS05 on resend; BIG01 (content) stays.
        let restamped = plain
            .replacen(&format!("RECEIVER       {e}260317{e}1015"), &format!("RECEIVER       {e}991231{e}2359"), 1)
            .replace(&format!("RECEIVER{e}20260317{e}1015"), &format!("RECEIVER{e}20991231{e}2359"));
        prop_assert_ne!(&restamped, &plain);
        let fingerprint = |text: &str| edi::read(text.as_bytes()).expect("header").fingerprint();
        prop_assert_eq!(fingerprint(&plain), fingerprint(&wrapped));
        prop_assert_eq!(fingerprint(&plain), fingerprint(&restamped));
    }

    #[test]
    fn segments_wrapped_over_lines_read_like_unwrapped_ones(groups in groups(), crlf in any::<bool>()) {
        let plain = x12("ACME", 7, ('*', '>', '~'), false, &groups);
        // A mainframe-style 80-column wrap: line breaks fall inside segments and elements.
        let line_end = if crlf { "\r\n" } else { "\n" };
        let wrapped = plain.as_bytes().chunks(80).map(|chunk| String::from_utf8(chunk.to_vec()).unwrap()).collect::<Vec<_>>().join(line_end);
        let mut scratch = Vec::new();
        let interchange = edi::parse(wrapped.as_bytes(), &mut scratch, Default::default()).expect("header");
        let expected = edi::read(plain.as_bytes()).expect("header");
        prop_assert_eq!(&interchange.envelope, &expected.envelope);
        prop_assert_eq!(interchange.fingerprint(), expected.fingerprint());
        prop_assert_eq!(interchange.documents().expect("valid"), expected.documents().expect("valid"));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_everything(&bytes);
        let mut isa = b"ISA*00*          *00*          *ZZ*A              *ZZ*B              *260317*1015*U*00401*000000001*0*P*>~".to_vec();
        isa.extend_from_slice(&bytes);
        parse_everything(&isa);
        let mut unb = b"UNA:+.? 'UNB+UNOC:3+A:14+B:14+260317:1015+1'".to_vec();
        unb.extend_from_slice(&bytes);
        parse_everything(&unb);
    }

    #[test]
    fn one_changed_byte_never_panics(
        groups in groups(),
        separators in x12_separators(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = x12("ACME", 7, separators, true, &groups).into_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        parse_everything(&bytes);
        let mut edifact = edifact(9, (':', '+', '.', '?', '\''), "A?B", &groups[0]).into_bytes();
        let j = at.index(edifact.len());
        edifact[j] = byte;
        parse_everything(&edifact);
    }
}

#[test]
fn changing_an_amount_changes_the_fingerprint() {
    let a = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/x12/810-single.edi")).unwrap();
    let b = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/x12/810-single-conflict.edi"))
        .unwrap();
    let c =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/x12/810-single-rewrapped.edi"))
            .unwrap();
    let fingerprint = |bytes: &[u8]| edi::read(bytes).unwrap().fingerprint();
    assert_ne!(fingerprint(&a), fingerprint(&b));
    assert_eq!(fingerprint(&a), fingerprint(&c));
}

/// Inputs the fuzzers once crashed on stay fixed: each parses and maps without panicking.
#[test]
fn fuzzer_findings_stay_fixed() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fuzz");
    let mut found = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        parse_everything(&std::fs::read(entry.unwrap().path()).unwrap());
        found += 1;
    }
    assert!(found > 0);
}
