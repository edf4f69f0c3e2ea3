//! Walking an interchange's documents: its envelopes checked segment by segment as they are read
//! (by the rules of [`x12::Envelopes`] or [`edifact::Envelopes`]), each document mapped when its
//! trailer arrives and handed out before the next one is read. An interchange of any size holds
//! one document's segments and mapping at a time; what spans documents is small: the control numbers
//! and invoice numbers seen, and the first figure that does not reconcile.

use std::collections::HashMap;
use std::iter::Peekable;

use super::syntax::Segment;
use super::{
    AllSegments, Document, EdiError, ErrorKind, Interchange, Warning, edifact, require_terminated, x12,
};

/// What a segment did to the walk.
pub(super) enum Step {
    /// It was read into the open document or envelope.
    Read,
    /// It closed a document, whose segments are the walk's set now.
    Document,
    /// It closed the interchange.
    End,
}

/// The envelope rules of the interchange's standard.
enum Rules<'a> {
    X12(x12::Envelopes<'a>),
    Edifact(edifact::Envelopes<'a>),
}

/// The documents of an interchange, validated and mapped one at a time (see the module). Yields
/// each document, or the first error and nothing after it. For a partner whose invoices must
/// reconcile, the first figure that does not is the error after the last document: every other
/// error comes first, as when the whole interchange was read at once.
pub struct Documents<'a> {
    interchange: Interchange<'a>,
    segments: Peekable<AllSegments<'a>>,
    rules: Rules<'a>,
    /// The segments of the open document.
    set: Vec<Segment<'a>>,
    /// The last segment read.
    last: Segment<'a>,
    /// Each invoice number seen, with the control number of the first document that has it: a
    /// second invoice with the same number is booked with a warning naming the first (a resend
    /// inside one file or a partner's numbering error, for a person to judge).
    numbers: HashMap<String, String>,
    /// The first figure that does not reconcile, when such a figure is an error.
    mismatch: Option<EdiError>,
    /// Documents handed out so far.
    handed: usize,
    ended: bool,
    /// Invoices are mapped (see [`Documents::outlines`]).
    invoices: bool,
}

impl<'a> Documents<'a> {
    pub(super) fn new(interchange: Interchange<'a>) -> Result<Documents<'a>, EdiError> {
        let rules = match interchange.envelope.standard {
            super::Standard::X12 => Rules::X12(x12::Envelopes::new(&interchange)?),
            super::Standard::Edifact => Rules::Edifact(edifact::Envelopes::new(&interchange)?),
        };
        let mut segments = interchange.segments().peekable();
        // The header is the rules' own.
        let last = segments.next().unwrap_or(interchange.header);
        Ok(Documents {
            interchange,
            segments,
            rules,
            set: Vec::new(),
            last,
            numbers: HashMap::new(),
            mismatch: None,
            handed: 0,
            ended: false,
            invoices: true,
        })
    }

    /// The documents without their invoices mapped: each one's kind, control number and position
    /// (and the envelope still checked), for a walk that needs no more.
    pub fn outlines(mut self) -> Documents<'a> {
        self.invoices = false;
        self
    }

    /// Reads segments up to the end of the next document (mapped) or of the interchange (`None`).
    fn advance(&mut self) -> Result<Option<Document>, EdiError> {
        while let Some(segment) = self.segments.next() {
            require_terminated(&segment)?;
            let next = self.segments.peek();
            let step = match &mut self.rules {
                Rules::X12(rules) => rules.step(segment, &mut self.set, next),
                Rules::Edifact(rules) => rules.step(segment, &mut self.set, next),
            }?;
            self.last = segment;
            match step {
                Step::Read => {}
                Step::Document => return self.document().map(Some),
                Step::End => return Ok(None),
            }
        }
        let trailer = match self.rules {
            Rules::X12(_) => "IEA",
            Rules::Edifact(_) => "UNZ",
        };
        Err(self.last.error(None, format!("the interchange ends before its {trailer} trailer")))
    }

    /// The document whose segments were just read, mapped, with what spans documents noted.
    fn document(&mut self) -> Result<Document, EdiError> {
        let ic = &self.interchange;
        let mut document = match self.rules {
            Rules::X12(_) => x12::document(ic, &self.set, self.invoices),
            Rules::Edifact(_) => edifact::document(ic, &self.set, self.invoices),
        }?;
        if let Some(invoice) = &document.invoice {
            match self.numbers.get(&invoice.number) {
                Some(first) => document.warnings.push(Warning {
                    mismatch: false,
                    document: document.control_number.clone(),
                    segment_position: Some(document.position),
                    message: format!(
                        "invoice number {} is also the number of document {first} in this interchange",
                        invoice.number
                    ),
                }),
                None => {
                    self.numbers.insert(invoice.number.clone(), document.control_number.clone());
                }
            }
        }
        if ic.refuse_mismatches
            && self.mismatch.is_none()
            && let Some(mismatch) = document.warnings.iter().find(|w| w.mismatch)
        {
            let at = self.set.iter().find(|s| Some(s.position) == mismatch.segment_position);
            let message = format!("{} (the partner's invoices must reconcile)", mismatch.message);
            self.mismatch =
                Some(at.unwrap_or(&ic.header).error(None, message).with_kind(ErrorKind::Mismatch));
        }
        if ic.byte_order_mark && self.handed == 0 {
            document.warnings.push(Warning {
                mismatch: false,
                document: document.control_number.clone(),
                segment_position: None,
                message:
                    "the body starts with a UTF-8 byte order mark, which EDI does not use; it was ignored \
                          (the payload is kept as received)"
                        .to_owned(),
            });
        }
        self.handed += 1;
        Ok(document)
    }
}

impl Iterator for Documents<'_> {
    type Item = Result<Document, EdiError>;

    fn next(&mut self) -> Option<Result<Document, EdiError>> {
        if self.ended {
            return None;
        }
        match self.advance() {
            Ok(Some(document)) => Some(Ok(document)),
            Ok(None) => {
                self.ended = true;
                self.mismatch.take().map(Err)
            }
            Err(error) => {
                self.ended = true;
                Some(Err(error))
            }
        }
    }
}
