//! UN/EDIFACT envelopes: optional UNA service string advice, UNB/UNZ interchange, optional UNG/UNE
//! groups, UNH/UNT messages. Without a UNA the ISO 9735 defaults apply (`:` `+` `.` `?` `'`).

use super::syntax::{Charset, Delimiters, Segment, Segments};
use super::walk::Step;
use super::{
    Document, EdiError, Envelope, Interchange, Limits, PartyId, Standard, Unique, expect_count,
    expect_reference, invoice, trailing_data,
};

const DEFAULTS: Delimiters =
    Delimiters { segment: b'\'', element: b'+', component: b':', repetition: None, release: Some(b'?') };

/// Length of `UNA` plus its six service characters.
const UNA_LEN: usize = 9;

pub(super) fn read(input: &[u8], start: usize, limits: Limits) -> Result<Interchange<'_>, EdiError> {
    let body = &input[start..];
    let (delimiters, decimal_mark, service_advice) = if body.starts_with(b"UNA") {
        let una = body.get(..UNA_LEN).ok_or_else(|| EdiError {
            kind: super::ErrorKind::Structure,
            message: "the UNA service string advice is truncated: it has six service characters".into(),
            segment_position: None,
            segment: Some("UNA".into()),
            element: None,
        })?;
        let delimiters = Delimiters {
            component: una[3],
            element: una[4],
            release: Some(una[6]).filter(|&r| r != b' '),
            repetition: Some(una[7]).filter(|&r| r != b' '),
            segment: una[8],
        };
        (delimiters, una[5], una)
    } else {
        (DEFAULTS, b'.', &[][..])
    };
    let unb = match Segments::new(input, start + service_advice.len(), 1, delimiters).next() {
        Some(first) if first.tag() == b"UNB" => first,
        _ => {
            return Err(EdiError::unlocated(
                "an EDIFACT interchange must start with UNB (after an optional UNA)",
            ));
        }
    };
    let charset = charset(unb.component(1, 1)).unwrap_or(Charset::Latin1);
    // Each of the key's parts at most as long as ISO 9735 allows (0004 and 0010 an..35, 0007
    // an..4, 0020 an..14): what the inbox's unique index holds.
    let text = |n: usize, c: usize, max: usize| -> Result<String, EdiError> {
        let raw = super::syntax::unescape(unb.component(n, c), delimiters.release);
        let text = charset.decode(&raw).map(|s| s.trim().to_owned()).map_err(|_| {
            unb.error(Some(unb.element_name(n)), "the UNB contains bytes outside its character set")
                .with_kind(super::ErrorKind::Charset)
        })?;
        match text.chars().count() {
            length if length > max => Err(unb.error(
                Some(unb.element_name(n)),
                format!("{} is {length} characters long; ISO 9735 allows at most {max}", unb.element_name(n)),
            )),
            _ => Ok(text),
        }
    };
    let envelope = Envelope {
        standard: Standard::Edifact,
        sender: PartyId { id: text(2, 1, 35)?, qualifier: text(2, 2, 4)? },
        receiver: PartyId { id: text(3, 1, 35)?, qualifier: text(3, 2, 4)? },
        control_number: text(5, 1, 14)?,
    };
    if envelope.sender.id.is_empty() || envelope.control_number.is_empty() {
        return Err(unb.error(
            None,
            "UNB sender (S002) and interchange control reference (0020) are required to identify the interchange",
        ));
    }
    Ok(Interchange {
        envelope,
        delimiters,
        charset,
        decimal_mark,
        input,
        service_advice,
        header: unb,
        rest: unb.offset + unb.bytes.len() + usize::from(unb.terminated),
        limits,
        lenient: false,
        byte_order_mark: false,
        refuse_mismatches: false,
    })
}

/// The character set named by the UNB syntax identifier (S001/0001).
fn charset(syntax_identifier: &[u8]) -> Option<Charset> {
    use encoding_rs::{
        ISO_8859_2, ISO_8859_3, ISO_8859_4, ISO_8859_5, ISO_8859_6, ISO_8859_7, ISO_8859_8, UTF_8,
    };
    Some(match syntax_identifier {
        b"UNOA" | b"UNOB" => Charset::Ascii,
        b"UNOC" => Charset::Latin1,
        b"UNOD" => Charset::Other(ISO_8859_2),
        b"UNOE" => Charset::Other(ISO_8859_5),
        b"UNOF" => Charset::Other(ISO_8859_7),
        b"UNOG" => Charset::Other(ISO_8859_3),
        b"UNOH" => Charset::Other(ISO_8859_4),
        b"UNOI" => Charset::Other(ISO_8859_6),
        b"UNOJ" => Charset::Other(ISO_8859_8),
        b"UNOW" | b"UNOY" => Charset::Other(UTF_8),
        _ => return None,
    })
}

/// The EDIFACT envelope rules, applied one segment at a time: UNH..UNT messages in one UNB..UNZ,
/// either all in UNG..UNE groups or none, each trailer's count and reference checked, control
/// references unique per level.
pub(super) struct Envelopes<'a> {
    unb: Segment<'a>,
    group_numbers: Unique<'a>,
    message_numbers: Unique<'a>,
    groups: usize,
    ungrouped_messages: usize,
    /// The open UNG and the messages seen in it.
    group: Option<(Segment<'a>, usize)>,
    /// A message is open (its segments are the walk's set).
    in_message: bool,
}

impl<'a> Envelopes<'a> {
    pub(super) fn new(ic: &Interchange<'a>) -> Result<Envelopes<'a>, EdiError> {
        let unb = ic.header;
        if charset(unb.component(1, 1)).is_none() {
            return Err(unb.error(
                Some("UNB01".into()),
                format!("unsupported syntax identifier {:?}", String::from_utf8_lossy(unb.component(1, 1))),
            ));
        }
        Ok(Envelopes {
            unb,
            group_numbers: Unique::new(ic),
            message_numbers: Unique::new(ic),
            groups: 0,
            ungrouped_messages: 0,
            group: None,
            in_message: false,
        })
    }

    /// Reads `segment` (`next` is the one after it), adding it to `set` when it belongs to a message.
    pub(super) fn step(
        &mut self,
        segment: Segment<'a>,
        set: &mut Vec<Segment<'a>>,
        next: Option<&Segment<'a>>,
    ) -> Result<Step, EdiError> {
        match segment.tag() {
            b"UNB" => return Err(segment.error(None, "UNB inside an interchange: envelopes must not nest")),
            b"UNG" => {
                if self.group.is_some() || self.in_message {
                    return Err(segment.error(None, "UNG before the previous group or message was closed"));
                }
                if self.ungrouped_messages > 0 {
                    return Err(
                        segment.error(None, "an interchange has either groups or bare messages, not both")
                    );
                }
                self.group_numbers.check(&segment, 5)?;
                self.message_numbers.clear();
                self.group = Some((segment, 0));
                self.groups += 1;
            }
            b"UNH" => {
                if self.in_message {
                    return Err(segment.error(None, "UNH before the previous message's UNT"));
                }
                match self.group.as_mut() {
                    Some((_, messages)) => *messages += 1,
                    None if self.groups > 0 => {
                        return Err(segment
                            .error(None, "an interchange has either groups or bare messages, not both"));
                    }
                    None => self.ungrouped_messages += 1,
                }
                self.message_numbers.check(&segment, 1)?;
                self.in_message = true;
                set.clear();
                set.push(segment);
            }
            b"UNT" => {
                if !self.in_message {
                    return Err(segment.error(None, "UNT without a matching UNH"));
                }
                self.in_message = false;
                set.push(segment);
                expect_count(&segment, 1, "segments (UNH to UNT)", set.len())?;
                expect_reference(&segment, 2, set[0].element(1))?;
                return Ok(Step::Document);
            }
            b"UNE" => {
                if self.in_message {
                    let unh = set[0].position;
                    return Err(
                        segment.error(None, format!("UNE before the UNT of the UNH at segment {unh}"))
                    );
                }
                let Some((ung, messages)) = self.group.take() else {
                    return Err(segment.error(None, "UNE without a matching UNG"));
                };
                expect_count(&segment, 1, "messages", messages)?;
                expect_reference(&segment, 2, ung.element(5))?;
            }
            b"UNZ" => {
                if self.in_message || self.group.is_some() {
                    return Err(segment.error(None, "UNZ before the open message or group was closed"));
                }
                if self.groups > 0 {
                    expect_count(&segment, 1, "groups", self.groups)?;
                } else {
                    expect_count(&segment, 1, "messages", self.ungrouped_messages)?;
                }
                expect_reference(&segment, 2, self.unb.element(5))?;
                trailing_data(&segment, next)?;
                return Ok(Step::End);
            }
            tag if !self.in_message => {
                return Err(segment.error(
                    None,
                    format!("segment {} outside a message (UNH..UNT)", String::from_utf8_lossy(tag)),
                ));
            }
            _ => set.push(segment),
        }
        Ok(Step::Read)
    }
}

/// The message type that carries an invoice.
pub(super) const INVOICE: &str = "INVOIC";

/// The message `message`, its invoice mapped when it is one and `invoices` asks for it.
pub(super) fn document(
    ic: &Interchange<'_>,
    message: &[Segment<'_>],
    invoices: bool,
) -> Result<Document, EdiError> {
    let unh = &message[0];
    let kind = ic.text(unh, unh.component(2, 1), 2)?;
    let control_number = ic.text(unh, unh.element(1), 1)?;
    let (invoice, warnings) = if kind == INVOICE && invoices {
        let (invoice, warnings) = invoice::from_invoic(ic, message, &control_number)?;
        (Some(std::sync::Arc::new(invoice)), warnings)
    } else {
        (None, Vec::new())
    };
    Ok(Document { control_number, kind, position: unh.position, invoice, warnings })
}

#[cfg(test)]
mod tests {
    use super::super::read;

    const INVOIC: &str = "UNA:+.? 'UNB+UNOC:3+SENDER:14+RECEIVER:14+260317:1015+77'\
UNH+1+INVOIC:D:96A:UN'BGM+380+INV-1+9'DTM+137:20260317:102'NAD+SU+S1::9++Caf\u{e9} ?+ Co'CUX+2:EUR:4'\
LIN+1++P1:EN'QTY+47:2'MOA+203:10.00'PRI+AAA:5.00'UNS+S'MOA+77:10.00'UNT+12+1'UNZ+1+77'";

    fn latin1(text: &str) -> Vec<u8> {
        text.chars().map(|c| u8::try_from(u32::from(c)).unwrap()).collect()
    }

    #[test]
    fn reads_una_unb_and_unescapes_names_in_the_declared_charset() {
        let bytes = latin1(INVOIC);
        let ic = read(&bytes).unwrap();
        assert_eq!(ic.envelope.sender.id, "SENDER");
        assert_eq!(ic.envelope.sender.qualifier, "14");
        assert_eq!(ic.envelope.control_number, "77");
        let docs = ic.documents().unwrap();
        let invoice = docs[0].invoice.as_ref().unwrap();
        assert_eq!(invoice.seller.as_ref().unwrap().name.as_deref(), Some("Café + Co"));
        assert_eq!(invoice.total.to_string(), "10.00");
    }

    #[test]
    fn groups_are_counted_in_unz() {
        let grouped = INVOIC
            .replace("UNH+1", "UNG+INVOIC+SENDER:14+RECEIVER:14+260317:1015+5+UN+D:96A'UNH+1")
            .replace("UNZ+1+77'", "UNE+1+5'UNZ+1+77'");
        let ic = read(&latin1(&grouped)).unwrap().documents().unwrap();
        assert_eq!(ic.len(), 1);
        let bad = grouped.replace("UNE+1+5", "UNE+1+6");
        let err = read(&latin1(&bad)).unwrap().documents().unwrap_err();
        assert_eq!(err.element.as_deref(), Some("UNE02"));
    }

    #[test]
    fn envelope_errors_are_positioned() {
        let cases = [
            ("UNT+12+1", "UNT+11+1", 13, Some("UNT01")),
            ("UNT+12+1", "UNT+12+2", 13, Some("UNT02")),
            ("UNZ+1+77", "UNZ+2+77", 14, Some("UNZ01")),
            ("UNZ+1+77", "UNZ+1+78", 14, Some("UNZ02")),
            ("UNZ+1+77'", "", 13, None),
        ];
        for (from, to, position, element) in cases {
            let err = read(&latin1(&INVOIC.replace(from, to))).unwrap().documents().unwrap_err();
            assert_eq!(err.segment_position, Some(position), "{to}: {err:?}");
            assert_eq!(err.element.as_deref(), element, "{to}: {err:?}");
        }
    }

    /// The seller name decoded from raw name bytes under a syntax identifier.
    fn seller_name(syntax: &str, name: &[u8]) -> Result<Option<String>, crate::edi::EdiError> {
        let bytes = [
            INVOIC.replace("UNOC", syntax).split("Caf").next().unwrap().as_bytes(),
            name,
            INVOIC.split("Co'").nth(1).map(|rest| format!("'{rest}")).unwrap().as_bytes(),
        ]
        .concat();
        let docs = read(&bytes)?.documents()?;
        Ok(docs[0].invoice.as_ref().unwrap().seller.as_ref().unwrap().name.clone())
    }

    #[test]
    fn text_is_decoded_per_syntax_identifier() {
        let cases: [(&str, &[u8], &str); 8] = [
            ("UNOA", b"ACME", "ACME"),
            ("UNOC", b"M\xfcller", "Müller"),
            ("UNOD", b"\xa3\xf3d\xbc", "Łódź"),
            ("UNOE", b"\xb6\xd8\xe0", "Жир"),
            ("UNOF", b"\xd9\xe1", "Ωα"),
            ("UNOW", "Zürich ?+ 東京".as_bytes(), "Zürich + 東京"),
            ("UNOY", "Ελλάδα".as_bytes(), "Ελλάδα"),
            ("UNOJ", b"\xf9\xec\xe5\xed", "שלום"),
        ];
        for (syntax, raw, expected) in cases {
            assert_eq!(seller_name(syntax, raw).unwrap().as_deref(), Some(expected), "{syntax}");
        }
    }

    #[test]
    fn bytes_outside_the_charset_are_positioned_errors() {
        for (syntax, raw) in [("UNOA", &b"M\xfcller"[..]), ("UNOB", b"\x80"), ("UNOW", b"M\xfcller")] {
            let err = seller_name(syntax, raw).unwrap_err();
            assert_eq!(err.segment.as_deref(), Some("NAD"), "{syntax}");
            assert_eq!(err.segment_position, Some(5), "{syntax}");
            assert_eq!(err.element.as_deref(), Some("NAD04"), "{syntax}");
        }
    }

    #[test]
    fn repeated_message_references_are_refused() {
        let twice = INVOIC.replace("UNZ+1+77'", "").to_owned()
            + &INVOIC[INVOIC.find("UNH").unwrap()..].replace("UNZ+1+77'", "UNZ+2+77'");
        let err = read(&latin1(&twice)).unwrap().documents().unwrap_err();
        assert_eq!((err.segment_position, err.element.as_deref()), (Some(14), Some("UNH01")));
    }

    #[test]
    fn unknown_charset_is_invalid_not_malformed() {
        let bytes = latin1(&INVOIC.replace("UNOC", "UNOX"));
        let ic = read(&bytes).unwrap();
        assert_eq!(ic.documents().unwrap_err().element.as_deref(), Some("UNB01"));
    }
}
