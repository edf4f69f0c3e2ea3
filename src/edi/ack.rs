//! Acknowledgements in the partner's own syntax, generated once from the outcome of an interchange
//! and stored with it, so every replay returns the same acknowledgement.
//!
//! X12: a TA1 when the sender asked for one (ISA14 = 1) or the interchange envelope itself is in error,
//! and otherwise one functional acknowledgement per received group: a 997 (AK1–AK9) for versions
//! before 00501, a 999 (AK1, AK2, IK3, IK4, IK5, AK9) from 00501 on. EDIFACT: a CONTRL message (UCI,
//! UCM per message, UCS/UCD at the error). The acknowledgement's own interchange control number is
//! allocated by the store, per partner, in the transaction that records the interchange: the text
//! generated here holds [`CONTROL_NUMBER`] where that number goes.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::syntax::Segment;
use super::{EdiError, ErrorKind, Interchange, Standard};

/// Stands where the acknowledgement's own control number goes (nine digits, zero-padded).
pub const CONTROL_NUMBER: &str = "{ACK-CONTROL-NUMBER}";

/// The acknowledgement text with its control number filled in.
pub fn with_control_number(template: &str, control_number: i64) -> String {
    template.replace(CONTROL_NUMBER, &format!("{control_number:09}"))
}

/// The acknowledgement of `interchange`, accepted (no `error`) or rejected with its first error.
pub fn acknowledge(interchange: &Interchange<'_>, error: Option<&EdiError>, at: DateTime<Utc>) -> String {
    match interchange.envelope.standard {
        Standard::X12 => x12(interchange, error, at),
        Standard::Edifact => contrl(interchange, error, at),
    }
}

/// An acknowledgement written a segment at a time into one string: each segment ended by the
/// terminator and a line break (unless the terminator is one), and counted. One string for any
/// number of documents, never a string per segment.
struct Segments {
    out: String,
    terminator: char,
    count: usize,
}

impl Segments {
    fn new(terminator: char) -> Segments {
        Segments { out: String::new(), terminator, count: 0 }
    }

    fn push(&mut self, segment: std::fmt::Arguments<'_>) {
        // Writing into a String cannot fail.
        let _ = self.out.write_fmt(segment);
        self.out.push(self.terminator);
        if self.terminator != '\n' {
            self.out.push('\n');
        }
        self.count += 1;
    }
}

/// Where in the envelope structure an error stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Interchange,
    /// Index of the group (0-based) in the interchange.
    Group(usize),
    /// Group index and document index within the group.
    Document(usize, usize),
}

/// A functional group (or, in EDIFACT, the whole interchange) and its documents' header segments.
struct Group<'a> {
    header: Option<Segment<'a>>,
    documents: Vec<Segment<'a>>,
}

/// Walks the segments the way the validators do, collecting groups and documents and locating the error.
fn structure<'a>(
    interchange: &Interchange<'a>,
    error: Option<&EdiError>,
    tags: [&[u8]; 4],
) -> (Vec<Group<'a>>, Option<Level>) {
    let [group_header, group_trailer, document_header, document_trailer] = tags;
    let error_position = error.and_then(|e| e.segment_position);
    let mut groups: Vec<Group<'a>> = Vec::new();
    let (mut in_group, mut in_document) = (false, false);
    let mut level = error.map(|_| Level::Interchange);
    for segment in interchange.segments().skip(1) {
        let tag = segment.tag();
        if tag == group_header {
            groups.push(Group { header: Some(segment), documents: Vec::new() });
            in_group = true;
        } else if tag == document_header {
            // EDIFACT messages without UNG form one implicit group.
            if !in_group && groups.last().is_none_or(|group| group.header.is_some()) {
                groups.push(Group { header: None, documents: Vec::new() });
            }
            if let Some(group) = groups.last_mut() {
                group.documents.push(segment);
            }
            in_document = true;
        }
        if Some(segment.position) == error_position {
            let group = groups.len().checked_sub(1);
            let document = groups.last().and_then(|g| g.documents.len().checked_sub(1));
            level = Some(match (group, document) {
                (Some(g), Some(d)) if in_document => Level::Document(g, d),
                (Some(g), _) if in_group => Level::Group(g),
                _ => Level::Interchange,
            });
        }
        if tag == document_trailer {
            in_document = false;
        } else if tag == group_trailer {
            in_group = false;
        }
    }
    (groups, level)
}

fn x12(ic: &Interchange<'_>, error: Option<&EdiError>, at: DateTime<Utc>) -> String {
    let d = ic.delimiters;
    let (e, s, c) = (char::from(d.element), char::from(d.segment), char::from(d.component));
    let isa = &ic.header;
    let field = |n: usize| String::from_utf8_lossy(isa.element(n)).into_owned();
    let version = field(12);
    let (groups, level) = structure(ic, error, [b"GS", b"GE", b"ST", b"SE"]);
    let mut ack = Segments::new(s);
    ack.push(format_args!(
        "ISA{e}00{e}          {e}00{e}          {e}{}{e}{}{e}{}{e}{}{e}{}{e}{}{e}{}{e}{version}{e}{CONTROL_NUMBER}{e}0{e}{}{e}{c}",
        field(7),
        field(8),
        field(5),
        field(6),
        at.format("%y%m%d"),
        at.format("%H%M"),
        field(11),
        field(15),
    ));
    if field(14).trim() == "1" || level == Some(Level::Interchange) {
        let (status, note) = match (level, error) {
            (Some(Level::Interchange), Some(error)) => ("R", ta1_note(error)),
            _ => ("A", "000"),
        };
        ack.push(format_args!("TA1{e}{}{e}{}{e}{}{e}{status}{e}{note}", field(13), field(9), field(10)));
    }
    let mut sets = 0;
    if level != Some(Level::Interchange) && !groups.is_empty() {
        let first_gs = groups.iter().find_map(|g| g.header);
        let gs_field = |n: usize| {
            first_gs.map(|gs| String::from_utf8_lossy(gs.element(n)).into_owned()).unwrap_or_default()
        };
        ack.push(format_args!(
            "GS{e}FA{e}{}{e}{}{e}{}{e}{}{e}{CONTROL_NUMBER}{e}X{e}{}",
            gs_field(3),
            gs_field(2),
            at.format("%Y%m%d"),
            at.format("%H%M"),
            gs_field(8)
        ));
        let implementation = version.as_str() >= "00501";
        for (g, group) in groups.iter().enumerate() {
            sets += 1;
            let set_control = format!("{sets:04}");
            let start = ack.count;
            let gs = |n: usize| {
                group.header.map(|gs| String::from_utf8_lossy(gs.element(n)).into_owned()).unwrap_or_default()
            };
            if implementation {
                ack.push(format_args!("ST{e}999{e}{set_control}{e}{}", gs(8)));
                ack.push(format_args!("AK1{e}{}{e}{}{e}{}", gs(1), gs(6), gs(8)));
            } else {
                ack.push(format_args!("ST{e}997{e}{set_control}"));
                ack.push(format_args!("AK1{e}{}{e}{}", gs(1), gs(6)));
            }
            let group_rejected =
                error.is_some() && matches!(level, Some(Level::Group(x) | Level::Document(x, _)) if x == g);
            let mut accepted = 0;
            for (n, st) in group.documents.iter().enumerate() {
                ack.push(format_args!(
                    "AK2{e}{}{e}{}",
                    String::from_utf8_lossy(st.element(1)),
                    String::from_utf8_lossy(st.element(2))
                ));
                match (level, error) {
                    (Some(Level::Document(x, y)), Some(error)) if x == g && y == n => {
                        let (segment_tag, element) =
                            if implementation { ("IK3", "IK4") } else { ("AK3", "AK4") };
                        if let (Some(tag), Some(position)) = (&error.segment, error.segment_position)
                            && !matches!(tag.as_str(), "ST" | "SE")
                        {
                            let in_set = position + 1 - st.position;
                            ack.push(format_args!(
                                "{segment_tag}{e}{tag}{e}{in_set}{e}{e}{}",
                                segment_code(error)
                            ));
                            if let Some(number) = error.element_number() {
                                ack.push(format_args!("{element}{e}{number}{e}{e}{}", element_code(error)));
                            }
                        }
                        let result = if implementation { "IK5" } else { "AK5" };
                        ack.push(format_args!("{result}{e}R{e}{}", set_code(error, tag_of(error))));
                    }
                    _ if group_rejected || error.is_some() => {
                        ack.push(format_args!("{}{e}R", if implementation { "IK5" } else { "AK5" }));
                    }
                    _ => {
                        accepted += 1;
                        ack.push(format_args!("{}{e}A", if implementation { "IK5" } else { "AK5" }));
                    }
                }
            }
            let received = group.documents.len();
            let status = if accepted == received && !group_rejected && error.is_none() { "A" } else { "R" };
            let group_error = match (level, error) {
                (Some(Level::Group(x)), Some(error)) if x == g => format!("{e}{}", group_code(error)),
                _ => String::new(),
            };
            ack.push(format_args!("AK9{e}{status}{e}{received}{e}{received}{e}{accepted}{group_error}"));
            let count = ack.count - start + 1;
            ack.push(format_args!("SE{e}{count}{e}{set_control}"));
        }
        ack.push(format_args!("GE{e}{sets}{e}{CONTROL_NUMBER}"));
    }
    let groups_sent = usize::from(sets > 0);
    ack.push(format_args!("IEA{e}{groups_sent}{e}{CONTROL_NUMBER}"));
    ack.out
}

fn tag_of(error: &EdiError) -> &str {
    error.segment.as_deref().unwrap_or_default()
}

/// TA105 interchange note code.
fn ta1_note(error: &EdiError) -> &'static str {
    match error.kind {
        ErrorKind::Reference => "001",
        ErrorKind::Count => "021",
        ErrorKind::Duplicate => "025",
        ErrorKind::Charset => "024",
        _ if error.message.contains("ends") => "023",
        _ => "022",
    }
}

/// AK905 functional group error code.
fn group_code(error: &EdiError) -> &'static str {
    match error.kind {
        ErrorKind::Reference => "4",
        ErrorKind::Count => "5",
        ErrorKind::Duplicate => "19",
        _ => "3",
    }
}

/// AK502 / IK502 transaction set error code.
fn set_code(error: &EdiError, tag: &str) -> &'static str {
    match (error.kind, tag) {
        (ErrorKind::Reference, _) => "3",
        (ErrorKind::Count, _) => "4",
        (ErrorKind::Duplicate, _) => "23",
        (ErrorKind::Structure, "ST" | "SE") => "2",
        _ => "5",
    }
}

/// AK304 / IK304 segment error code.
fn segment_code(error: &EdiError) -> &'static str {
    match (error.kind, error.element.is_some()) {
        (ErrorKind::Missing, false) => "3",
        (ErrorKind::Structure, _) => "2",
        _ => "8",
    }
}

/// AK403 / IK403 element error code.
fn element_code(error: &EdiError) -> &'static str {
    match error.kind {
        ErrorKind::Missing => "1",
        ErrorKind::InvalidDate => "8",
        ErrorKind::Charset => "6",
        _ => "7",
    }
}

/// CONTRL syntax error code (0085).
fn contrl_code(error: &EdiError) -> &'static str {
    match error.kind {
        ErrorKind::Reference => "28",
        ErrorKind::Count => "29",
        ErrorKind::Duplicate => "26",
        ErrorKind::Missing => "13",
        ErrorKind::Invalid | ErrorKind::InvalidDate | ErrorKind::Mismatch | ErrorKind::DuplicateNumber => {
            "12"
        }
        ErrorKind::Charset => "21",
        ErrorKind::Structure => "15",
    }
}

fn contrl(ic: &Interchange<'_>, error: Option<&EdiError>, at: DateTime<Utc>) -> String {
    let unb = &ic.header;
    let (groups, level) = structure(ic, error, [b"UNG", b"UNE", b"UNH", b"UNT"]);
    // Our own service characters; values copied from the interchange keep its escaping only when the
    // separators agree, so they are re-escaped for ours.
    let escape = |text: &str| {
        text.chars().fold(String::new(), |mut out, ch| {
            if matches!(ch, ':' | '+' | '?' | '\'') {
                out.push('?');
            }
            out.push(ch);
            out
        })
    };
    let text = |segment: &Segment<'_>, n: usize| {
        let raw = super::syntax::unescape(segment.element(n), ic.delimiters.release);
        let d = ic.delimiters;
        // Components keep their meaning: split on the interchange's component separator, rejoin with ours.
        super::syntax::split(&raw, d.component, None)
            .map(|component| escape(&String::from_utf8_lossy(component)))
            .collect::<Vec<_>>()
            .join(":")
    };
    let action = if error.is_some() { "4" } else { "7" };
    let interchange_error = match (level, error) {
        (Some(Level::Interchange), Some(error)) => format!(
            "+{}+{}{}",
            contrl_code(error),
            error.segment.as_deref().map(escape).unwrap_or_default(),
            error.element_number().map(|n| format!("+{n}")).unwrap_or_default()
        ),
        _ => String::new(),
    };
    let mut ack = Segments::new('\'');
    ack.out.push_str("UNA:+.? '");
    ack.push(format_args!(
        "UNB+{}+{}+{}+{}:{}+{CONTROL_NUMBER}",
        text(unb, 1),
        text(unb, 3),
        text(unb, 2),
        at.format("%y%m%d"),
        at.format("%H%M")
    ));
    let start = ack.count;
    ack.push(format_args!("UNH+1+CONTRL:D:3:UN"));
    ack.push(format_args!(
        "UCI+{}+{}+{}+{action}{interchange_error}",
        text(unb, 5),
        text(unb, 2),
        text(unb, 3)
    ));
    if level != Some(Level::Interchange) {
        for (g, group) in groups.iter().enumerate() {
            for (m, unh) in group.documents.iter().enumerate() {
                let failed =
                    matches!((level, error), (Some(Level::Document(x, y)), Some(_)) if x == g && y == m);
                match error.filter(|_| failed) {
                    Some(error) => {
                        let tag = error.segment.as_deref().unwrap_or_default();
                        if matches!(tag, "UNH" | "UNT") {
                            ack.push(format_args!(
                                "UCM+{}+{}+4+{}",
                                text(unh, 1),
                                text(unh, 2),
                                contrl_code(error)
                            ));
                        } else {
                            ack.push(format_args!("UCM+{}+{}+4", text(unh, 1), text(unh, 2)));
                            if let Some(position) = error.segment_position {
                                ack.push(format_args!(
                                    "UCS+{}+{}",
                                    position + 1 - unh.position,
                                    contrl_code(error)
                                ));
                                if let Some(number) = error.element_number() {
                                    ack.push(format_args!("UCD+{}+{number}", contrl_code(error)));
                                }
                            }
                        }
                    }
                    None => ack.push(format_args!("UCM+{}+{}+{action}", text(unh, 1), text(unh, 2))),
                }
            }
        }
    }
    let count = ack.count - start + 1;
    ack.push(format_args!("UNT+{count}+1"));
    ack.push(format_args!("UNZ+1+{CONTROL_NUMBER}"));
    ack.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edi::read;

    fn ack_of(bytes: &[u8]) -> String {
        let interchange = read(bytes).unwrap();
        let at = DateTime::parse_from_rfc3339("2026-03-18T09:30:00Z").unwrap().with_timezone(&Utc);
        let documents = interchange.documents();
        let text = acknowledge(&interchange, documents.as_ref().err(), at);
        with_control_number(&text, 42)
    }

    fn fixture(path: &str) -> Vec<u8> {
        std::fs::read(format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    fn segments(ack: &str, terminator: char) -> Vec<String> {
        ack.split(terminator).map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
    }

    #[test]
    fn accepted_004010_gets_a_997_and_00501_a_999() {
        let ack = segments(&ack_of(&fixture("x12/810-single.edi")), '~');
        assert!(ack[0].starts_with("ISA*00*          *00*          *ZZ*BUYERCO        *ZZ*ACMESUPPLY     *260318*0930*U*00401*000000042*0*P*>"));
        assert_eq!(
            &ack[1..],
            [
                "GS*FA*BUYERCO*ACMESUPPLY*20260318*0930*000000042*X*004010",
                "ST*997*0001",
                "AK1*IN*1142",
                "AK2*810*0001",
                "AK5*A",
                "AK9*A*1*1*1",
                "SE*6*0001",
                "GE*1*000000042",
                "IEA*1*000000042",
            ]
        );
        let ack = segments(&ack_of(&fixture("x12/810-two-invoices-00501.edi")), '~');
        assert_eq!(
            &ack[2..10],
            [
                "ST*999*0001*005010",
                "AK1*IN*1143*005010",
                "AK2*810*0001",
                "IK5*A",
                "AK2*810*0002",
                "IK5*A",
                "AK9*A*2*2*2",
                "SE*8*0001",
            ]
        );
    }

    #[test]
    fn envelope_errors_get_ta1_and_set_errors_ak5_codes() {
        let ack = segments(&ack_of(&fixture("x12/invalid-iea-count.edi")), '~');
        assert_eq!(&ack[1..], ["TA1*000001145*260317*1015*R*021", "IEA*0*000000042"]);
        let ack = segments(&ack_of(&fixture("x12/invalid-iea-control.edi")), '~');
        assert_eq!(ack[1], "TA1*000001147*260317*1015*R*001");
        let ack = segments(&ack_of(&fixture("x12/invalid-se-count.edi")), '~');
        assert_eq!(&ack[4..7], ["AK2*810*0001", "AK5*R*4", "AK9*R*1*1*0"]);
    }

    #[test]
    fn element_errors_are_located_with_ak3_and_ak4() {
        let text = String::from_utf8(fixture("x12/810-single.edi"))
            .unwrap()
            .replace("BIG*20260317*INV-1042", "BIG*20261317*INV-1042");
        let ack = segments(&ack_of(text.as_bytes()), '~');
        assert_eq!(&ack[4..9], ["AK2*810*0001", "AK3*BIG*2**8", "AK4*1**8", "AK5*R*5", "AK9*R*1*1*0"]);
        let text = String::from_utf8(fixture("x12/810-two-invoices-00501.edi"))
            .unwrap()
            .replace("BIG*20260317*INV-2002", "BIG*20260317*");
        let ack = segments(&ack_of(text.as_bytes()), '~');
        assert_eq!(
            &ack[4..11],
            ["AK2*810*0001", "IK5*R", "AK2*810*0002", "IK3*BIG*2**8", "IK4*2**1", "IK5*R*5", "AK9*R*2*2*0"]
        );
    }

    #[test]
    fn edifact_gets_contrl() {
        let ack = segments(&ack_of(&fixture("edifact/invoic-d96a.edi")), '\'');
        assert_eq!(
            ack,
            [
                "UNA:+.?",
                "UNB+UNOC:3+4000002000004:14+4000001000005:14+260318:0930+000000042",
                "UNH+1+CONTRL:D:3:UN",
                "UCI+1042+4000001000005:14+4000002000004:14+7",
                "UCM+M1+INVOIC:D:96A:UN:EAN008+7",
                "UNT+4+1",
                "UNZ+1+000000042",
            ]
        );
        let ack = segments(&ack_of(&fixture("edifact/invalid-unz-reference.edi")), '\'');
        assert_eq!(ack[3], "UCI+1046+4000001000005:14+4000002000004:14+4+28+UNZ+2");
        let text =
            String::from_utf8(fixture("edifact/invoic-d96a.edi")).unwrap().replace("UNT+24+M1", "UNT+23+M1");
        let ack = segments(&ack_of(text.as_bytes()), '\'');
        assert_eq!(
            &ack[3..6],
            ["UCI+1042+4000001000005:14+4000002000004:14+4", "UCM+M1+INVOIC:D:96A:UN:EAN008+4+29", "UNT+4+1"]
        );
        let text = String::from_utf8(fixture("edifact/invoic-d96a.edi"))
            .unwrap()
            .replace("DTM+137:20260317:102", "DTM+137:2026:102");
        let ack = segments(&ack_of(text.as_bytes()), '\'');
        assert_eq!(&ack[4..7], ["UCM+M1+INVOIC:D:96A:UN:EAN008+4", "UCS+3+12", "UCD+12+1"]);
    }
}
