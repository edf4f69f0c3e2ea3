//! ASC X12 envelopes: ISA/IEA interchange, GS/GE functional groups, ST/SE transaction sets.
//!
//! The ISA is read by counting its 16 element separators rather than by fixed offsets, so an ISA
//! whose fixed-width fields were not padded still yields its separators and key (and the 422 that
//! names the element of the wrong width, [`check_isa`]); the separators are the ones it declares
//! (element = 4th byte, component = ISA16, terminator = the byte after ISA16, repetition = ISA11
//! from control version 00402 on).

use super::syntax::{Charset, Delimiters, Segment};
use super::walk::Step;
use super::{
    Document, EdiError, Envelope, Interchange, Limits, PartyId, Standard, Unique, expect_count,
    expect_reference, invoice, trailing_data,
};

/// Number of elements in an ISA segment.
const ISA_ELEMENTS: usize = 16;

/// The fixed width of ISA01 to ISA16: 106 bytes with the tag, separators and terminator.
const ISA_WIDTHS: [usize; ISA_ELEMENTS] = [2, 10, 2, 10, 2, 15, 2, 15, 6, 4, 1, 5, 9, 1, 1, 1];

/// The interchange control versions ASC X12 published (ISA12, code source I11).
const CONTROL_VERSIONS: [&[u8]; 39] = [
    b"00200", b"00201", b"00204", b"00300", b"00301", b"00302", b"00303", b"00304", b"00305", b"00306",
    b"00307", b"00400", b"00401", b"00402", b"00403", b"00404", b"00405", b"00406", b"00500", b"00501",
    b"00502", b"00503", b"00504", b"00505", b"00600", b"00601", b"00602", b"00603", b"00604", b"00605",
    b"00700", b"00701", b"00702", b"00703", b"00704", b"00705", b"00706", b"00800", b"00801",
];

/// The control version from which ISA11 is the repetition separator (before it, the standards
/// identifier `U`).
const REPETITION_SEPARATOR_FROM: &str = "00402";

/// The ISA as the standard fixes it: each element its width (padded with spaces), ISA12 a published
/// control version, ISA11 the repetition separator from 00402 on and `U` before. A lenient partner's
/// ISA only needs its 16 elements.
fn check_isa(isa: &Segment<'_>) -> Result<(), EdiError> {
    let invalid = |n: usize, message: String| {
        isa.error(Some(isa.element_name(n)), message).with_kind(super::ErrorKind::Invalid)
    };
    for (n, width) in (1..=ISA_ELEMENTS).zip(ISA_WIDTHS) {
        let found = isa.element(n).len();
        if found != width {
            let name = isa.element_name(n);
            return Err(invalid(
                n,
                format!(
                    "{name} must be {width} characters wide (the ISA is fixed-width, padded with spaces); it has {found}"
                ),
            ));
        }
    }
    let version = isa.element(12);
    if !CONTROL_VERSIONS.contains(&version) {
        let version = String::from_utf8_lossy(version);
        return Err(invalid(12, format!("ISA12 {version:?} is not a published interchange control version")));
    }
    let standards = isa.element(11);
    if version >= REPETITION_SEPARATOR_FROM.as_bytes() {
        if standards[0].is_ascii_alphanumeric() || standards[0] == b' ' {
            let found = String::from_utf8_lossy(standards);
            return Err(invalid(
                11,
                format!("ISA11 is the repetition separator from control version 00402 on, not {found:?}"),
            ));
        }
    } else if standards != b"U" {
        let found = String::from_utf8_lossy(standards);
        return Err(invalid(
            11,
            format!("ISA11 must be U (the standards identifier) before control version 00402, not {found:?}"),
        ));
    }
    Ok(())
}

/// Where the ISA at the start of `body` has its 16th element separator: ISA16 is the one byte after
/// it, and the segment terminator follows (ISAs are not always padded to 106 bytes).
fn sixteenth_separator(body: &[u8], element: u8) -> Option<usize> {
    body.iter().enumerate().filter(|&(_, &b)| b == element).nth(ISA_ELEMENTS - 1).map(|(at, _)| at)
}

/// The segment terminator of the ISA at the start of `body`, when it can be read.
pub(super) fn segment_terminator(body: &[u8]) -> Option<u8> {
    let sixteenth = sixteenth_separator(body, *body.get(3)?)?;
    body.get(sixteenth + 2).copied()
}

pub(super) fn read(input: &[u8], start: usize, limits: Limits) -> Result<Interchange<'_>, EdiError> {
    let body = &input[start..];
    let isa_error = |message: &str| EdiError {
        kind: super::ErrorKind::Structure,
        message: message.to_owned(),
        segment_position: Some(1),
        segment: Some("ISA".to_owned()),
        element: None,
    };
    let element = *body.get(3).ok_or_else(|| isa_error("the ISA segment is truncated"))?;
    if element.is_ascii_alphanumeric() || element.is_ascii_whitespace() {
        return Err(isa_error("the 4th byte of the ISA must be the element separator"));
    }
    let sixteenth = sixteenth_separator(body, element)
        .ok_or_else(|| isa_error("the ISA segment is truncated: it must have 16 elements"))?;
    let (Some(&component), Some(&terminator)) = (body.get(sixteenth + 1), body.get(sixteenth + 2)) else {
        return Err(isa_error("the ISA segment is truncated: ISA16 or the segment terminator is missing"));
    };
    if terminator.is_ascii_alphanumeric() || terminator == element || terminator == component {
        return Err(isa_error(
            "the byte after ISA16 must be a segment terminator distinct from the other separators",
        ));
    }
    let isa_bytes = &body[..sixteenth + 2];
    let mut delimiters =
        Delimiters { segment: terminator, element, component, repetition: None, release: None };
    let isa = Segment { position: 1, offset: start, bytes: isa_bytes, terminated: true, delimiters };
    let field = |n: usize| String::from_utf8_lossy(isa.element(n)).trim().to_owned();
    // The key's parts may be unpadded (a lenient partner), never wider than the ISA fixes them:
    // what the inbox's unique index holds.
    for n in [5, 6, 7, 8, 13] {
        let (found, width) = (isa.element(n).len(), ISA_WIDTHS[n - 1]);
        if found > width {
            let name = isa.element_name(n);
            return Err(EdiError {
                element: Some(name.clone()),
                ..isa_error(&format!("{name} is {found} characters wide; the ISA fixes it at {width}"))
            });
        }
    }
    if field(12).as_str() >= REPETITION_SEPARATOR_FROM {
        delimiters.repetition = isa.element(11).first().copied();
    }
    let envelope = Envelope {
        standard: Standard::X12,
        sender: PartyId { qualifier: field(5), id: field(6) },
        receiver: PartyId { qualifier: field(7), id: field(8) },
        control_number: field(13),
    };
    if envelope.sender.id.is_empty() || envelope.control_number.is_empty() {
        return Err(isa_error(
            "ISA06 (sender id) and ISA13 (control number) are required to identify the interchange",
        ));
    }
    Ok(Interchange {
        envelope,
        delimiters,
        charset: Charset::Ascii,
        decimal_mark: b'.',
        input,
        service_advice: &[],
        header: Segment { delimiters, ..isa },
        rest: start + isa_bytes.len() + 1,
        limits,
        lenient: false,
        byte_order_mark: false,
        refuse_mismatches: false,
    })
}

/// The X12 envelope rules, applied one segment at a time: GS..GE groups of ST..SE transaction sets
/// in one ISA..IEA, each trailer's count and reference checked, control numbers unique per level.
pub(super) struct Envelopes<'a> {
    isa: Segment<'a>,
    group_numbers: Unique<'a>,
    set_numbers: Unique<'a>,
    groups: usize,
    /// The open GS and the transaction sets seen in it.
    group: Option<(Segment<'a>, usize)>,
    /// A transaction set is open (its segments are the walk's set).
    in_set: bool,
}

impl<'a> Envelopes<'a> {
    pub(super) fn new(ic: &Interchange<'a>) -> Result<Envelopes<'a>, EdiError> {
        if !ic.lenient {
            check_isa(&ic.header)?;
        }
        Ok(Envelopes {
            isa: ic.header,
            group_numbers: Unique::new(ic),
            set_numbers: Unique::new(ic),
            groups: 0,
            group: None,
            in_set: false,
        })
    }

    /// Reads `segment` (`next` is the one after it), adding it to `set` when it belongs to a
    /// transaction set.
    pub(super) fn step(
        &mut self,
        segment: Segment<'a>,
        set: &mut Vec<Segment<'a>>,
        next: Option<&Segment<'a>>,
    ) -> Result<Step, EdiError> {
        match segment.tag() {
            b"ISA" => return Err(segment.error(None, "ISA inside an interchange: envelopes must not nest")),
            b"GS" => {
                if self.group.is_some() {
                    return Err(segment.error(None, "GS before the previous group's GE"));
                }
                self.group_numbers.check(&segment, 6)?;
                self.set_numbers.clear();
                self.group = Some((segment, 0));
                self.groups += 1;
            }
            b"ST" => {
                let Some((_, sets)) = self.group.as_mut() else {
                    return Err(segment.error(None, "ST outside a functional group (GS..GE)"));
                };
                if self.in_set {
                    return Err(segment.error(None, "ST before the previous transaction set's SE"));
                }
                self.set_numbers.check(&segment, 2)?;
                *sets += 1;
                self.in_set = true;
                set.clear();
                set.push(segment);
            }
            b"SE" => {
                if !self.in_set {
                    return Err(segment.error(None, "SE without a matching ST"));
                }
                self.in_set = false;
                set.push(segment);
                expect_count(&segment, 1, "segments (ST to SE)", set.len())?;
                expect_reference(&segment, 2, set[0].element(2))?;
                return Ok(Step::Document);
            }
            b"GE" => {
                if self.in_set {
                    let st = set[0].position;
                    return Err(segment.error(None, format!("GE before the SE of the ST at segment {st}")));
                }
                let Some((gs, sets)) = self.group.take() else {
                    return Err(segment.error(None, "GE without a matching GS"));
                };
                expect_count(&segment, 1, "transaction sets", sets)?;
                expect_reference(&segment, 2, gs.element(6))?;
            }
            b"IEA" => {
                if self.in_set || self.group.is_some() {
                    return Err(
                        segment.error(None, "IEA before the open transaction set or group was closed")
                    );
                }
                expect_count(&segment, 1, "functional groups", self.groups)?;
                expect_reference(&segment, 2, self.isa.element(13))?;
                trailing_data(&segment, next)?;
                return Ok(Step::End);
            }
            tag if !self.in_set => {
                return Err(segment.error(
                    None,
                    format!("segment {} outside a transaction set (ST..SE)", String::from_utf8_lossy(tag)),
                ));
            }
            _ => set.push(segment),
        }
        Ok(Step::Read)
    }
}

/// The transaction set that carries an invoice.
pub(super) const INVOICE: &str = "810";

/// The transaction set `set`, its invoice mapped when it is one and `invoices` asks for it.
pub(super) fn document(
    ic: &Interchange<'_>,
    set: &[Segment<'_>],
    invoices: bool,
) -> Result<Document, EdiError> {
    let st = &set[0];
    let kind = ic.text(st, st.element(1), 1)?;
    let control_number = ic.text(st, st.element(2), 2)?;
    let (invoice, warnings) = if kind == INVOICE && invoices {
        let (invoice, warnings) = invoice::from_810(ic, set, &control_number)?;
        (Some(std::sync::Arc::new(invoice)), warnings)
    } else {
        (None, Vec::new())
    };
    Ok(Document { control_number, kind, position: st.position, invoice, warnings })
}

#[cfg(test)]
mod tests {
    use super::super::read;

    const ONE_810: &[u8] = b"ISA*00*          *00*          *ZZ*ACME           *ZZ*BUYER          *260317*1015*U*00401*000000007*0*P*>~\
GS*IN*ACME*BUYER*20260317*1015*7*X*004010~ST*810*0001~BIG*20260317*INV-7~IT1*1*2*EA*1.50~TDS*300~SE*5*0001~GE*1*7~IEA*1*000000007~";

    #[test]
    fn reads_key_and_separators_from_the_isa() {
        let ic = read(ONE_810).unwrap();
        assert_eq!(ic.envelope.sender.id, "ACME");
        assert_eq!(ic.envelope.sender.qualifier, "ZZ");
        assert_eq!(ic.envelope.control_number, "000000007");
        assert_eq!(ic.delimiters.segment, b'~');
        assert_eq!(ic.delimiters.component, b'>');
        assert_eq!(ic.delimiters.repetition, None);
        let docs = ic.documents().unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].invoice.as_ref().unwrap().total.to_string(), "3.00");
    }

    #[test]
    fn other_separators_work_too() {
        let text = String::from_utf8(ONE_810.to_vec()).unwrap().replace('*', "|").replace('~', "\n");
        let ic = read(text.as_bytes()).unwrap();
        assert_eq!(ic.delimiters.element, b'|');
        assert_eq!(ic.documents().unwrap()[0].invoice.as_ref().unwrap().number, "INV-7");
    }

    #[test]
    fn structural_errors_are_positioned() {
        let cases: &[(&str, &str, usize, Option<&str>)] = &[
            ("SE*5*0001~", "SE*4*0001~", 7, Some("SE01")),
            ("SE*5*0001~", "SE*5*0002~", 7, Some("SE02")),
            ("GE*1*7~", "GE*2*7~", 8, Some("GE01")),
            ("GE*1*7~", "GE*1*8~", 8, Some("GE02")),
            ("IEA*1*000000007~", "IEA*1*000000007~ST*810*1~", 10, None),
            ("IEA*1*000000007~", "IEA*1*00000", 9, None),
            ("IEA*1*000000007~", "", 8, None),
            ("ST*810*0001~", "", 3, None),
            (
                "GS*IN*",
                "ISA*00*          *00*          *ZZ*X              *ZZ*Y              *260317*1015*U*00401*000000008*0*P*>~GS*IN*",
                2,
                None,
            ),
            ("GE*1*7~", "GE*1*7~GS*IN*ACME*BUYER*20260317*1015*7*X*004010~GE*0*7~", 9, Some("GS06")),
            (
                "SE*5*0001~",
                "SE*5*0001~ST*810*0001~BIG*20260317*INV-8~IT1*1*2*EA*1.50~TDS*300~SE*5*0001~",
                8,
                Some("ST02"),
            ),
        ];
        for (from, to, position, element) in cases {
            let text = String::from_utf8(ONE_810.to_vec()).unwrap().replace(from, to);
            let err = read(text.as_bytes()).unwrap().documents().unwrap_err();
            assert_eq!(err.segment_position, Some(*position), "{to}: {err:?}");
            assert_eq!(err.element.as_deref(), *element, "{to}: {err:?}");
        }
    }

    #[test]
    fn a_second_interchange_in_the_body_says_what_to_do() {
        let mailbag = [ONE_810, b"\r\n", ONE_810].concat();
        let err = read(&mailbag).unwrap().documents().unwrap_err();
        assert!(err.message.starts_with("another interchange follows the IEA trailer"), "{err:?}");
        assert!(err.message.contains("a request of its own"), "{err:?}");
        let leftover = [ONE_810, b"ST*810*1~".as_slice()].concat();
        let err = read(&leftover).unwrap().documents().unwrap_err();
        assert_eq!(err.message, "data after the IEA interchange trailer");
    }

    #[test]
    fn only_an_interchange_ending_with_its_trailer_ends_with_it() {
        use super::super::ends_with_trailer;
        assert!(ends_with_trailer(ONE_810));
        assert!(ends_with_trailer(&[ONE_810, b"\r\n"].concat()));
        assert!(!ends_with_trailer(&[ONE_810, b"\x07\x07\x07\xd1\x9c"].concat()));
        assert!(!ends_with_trailer(&[ONE_810, b"ST*810*1~"].concat()));
        assert!(!ends_with_trailer(&ONE_810[..ONE_810.len() - 12]));
        assert!(!ends_with_trailer(b"\x00garbage"));
    }

    #[test]
    fn a_nul_byte_is_named_where_it_stands_even_for_a_lenient_partner() {
        let text = String::from_utf8(ONE_810.to_vec()).unwrap();
        let in_invoice = text.replace("INV-7", "INV\0-7");
        let err = read(in_invoice.as_bytes()).unwrap().lenient().documents().unwrap_err();
        assert_eq!((err.segment.as_deref(), err.element.as_deref()), (Some("BIG"), Some("BIG02")), "{err:?}");
        assert!(err.message.contains("NUL"), "{err:?}");
        let in_key = text.replace("000000007*0*P", "00000\x0007*0*P");
        let err = read(in_key.as_bytes()).unwrap_err();
        assert_eq!((err.segment.as_deref(), err.element.as_deref()), (Some("ISA"), Some("ISA13")), "{err:?}");
    }

    #[test]
    fn a_byte_order_mark_is_skipped_with_a_warning() {
        let marked = [b"\xEF\xBB\xBF\n".as_slice(), ONE_810].concat();
        let (marked, plain) = (read(&marked).unwrap(), read(ONE_810).unwrap());
        assert_eq!(marked.fingerprint(), plain.fingerprint());
        let warnings = &marked.documents().unwrap()[0].warnings;
        assert!(warnings.iter().any(|w| w.message.contains("byte order mark")), "{warnings:?}");
        assert_eq!(super::super::standard_of(b"\xEF\xBB\xBF  ISA*00"), Some(super::super::Standard::X12));
        assert!(read(b"\xEF\xBB\xBF").unwrap_err().message.contains("empty"));
    }

    #[test]
    fn non_ascii_bytes_are_positioned_errors() {
        let bytes = [&ONE_810[..ONE_810.len() - 60], &b"\xe9"[..], &ONE_810[ONE_810.len() - 60..]].concat();
        let err = read(&bytes).unwrap().documents().unwrap_err();
        assert!(err.message.contains("0xE9"), "{err:?}");
        assert!(err.segment_position.is_some() && err.element.is_some(), "{err:?}");
    }

    #[test]
    fn totals_that_disagree_with_lines_are_warnings() {
        let ic = read(ONE_810).unwrap();
        let warnings = &ic.documents().unwrap()[0].warnings;
        assert!(
            warnings.len() == 1 && warnings[0].message.contains("booked as unknown"),
            "no CUR: {warnings:?}"
        );
        let off = String::from_utf8(ONE_810.to_vec()).unwrap().replace("TDS*300", "TDS*301");
        let docs = read(off.as_bytes()).unwrap().documents().unwrap();
        let warning = &docs[0].warnings[1];
        assert_eq!((warning.document.as_str(), warning.segment_position), ("0001", Some(6)));
        assert!(warning.message.contains("3.01"), "{warning:?}");
    }

    #[test]
    fn limits_bound_segments_and_elements() {
        use super::super::{Limits, read_with};
        let at = |limits| {
            read_with(ONE_810, limits)
                .unwrap()
                .documents()
                .map(|_| ())
                .map_err(|e| (e.segment_position, e.element))
        };
        assert_eq!(at(Limits { max_segments: 9, max_element_length: 15 }), Ok(()));
        assert_eq!(at(Limits { max_segments: 8, max_element_length: 15 }), Err((Some(9), None)));
        assert_eq!(
            at(Limits { max_segments: 9, max_element_length: 14 }),
            Err((Some(1), Some("ISA06".into())))
        );
        let read = read_with(ONE_810, Limits { max_segments: 3, max_element_length: 15 }).unwrap();
        assert_eq!(read.segments().count(), 4, "reading stops after the first segment over the limit");
    }

    #[test]
    fn missing_key_is_malformed() {
        assert!(read(b"ISA*00*          *00*    ~").is_err());
        assert!(read(b"ISA").is_err());
        assert!(read(b"ISA*00**00**ZZ**ZZ*B*260317*1015*U*00401**0*P*>~").is_err());
    }
}
