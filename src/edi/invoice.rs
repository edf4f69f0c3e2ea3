//! Invoice mapping: an X12 810 transaction set or an EDIFACT INVOIC message becomes one [`Invoice`].
//!
//! Amounts are exact decimals. X12 TDS01 and SAC05 are N2 (two implied decimals); EDIFACT amounts use
//! the decimal mark declared in the UNA. Parties and lines are read the way trading partners use these
//! segments in practice; anything required for booking that is missing is a positioned error.

use std::str::FromStr;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::syntax::{Fields, Segment};
use super::{EdiError, ErrorKind, Interchange, Warning};

/// The accounting view of one invoice document.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Invoice {
    /// BIG02 / BGM 1004.
    #[schema(example = "INV-1042")]
    pub number: String,
    /// BIG01 / DTM 137.
    pub issue_date: NaiveDate,
    /// BIG04 / RFF+ON.
    pub purchase_order: Option<String>,
    /// ISO 4217 code: CUR02 (USD when an 810 has no CUR) / CUX.
    #[schema(example = "USD")]
    pub currency: String,
    /// TDS01 / MOA 77 (or 86), as an exact decimal string.
    #[schema(value_type = String, example = "8000.00")]
    pub total: Decimal,
    /// TXI02 / MOA 124.
    #[schema(value_type = Option<String>, example = "13.78")]
    pub tax_total: Option<Decimal>,
    /// TXI03 / TAX rate (percent).
    #[schema(value_type = Option<String>, example = "19")]
    pub tax_rate: Option<Decimal>,
    pub seller: Option<Party>,
    pub buyer: Option<Party>,
    pub lines: Vec<InvoiceLine>,
    /// X12 SAC allowances and charges.
    pub allowances_charges: Vec<AllowanceCharge>,
}

/// A trading party named in the invoice (N1 / NAD).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Party {
    pub name: Option<String>,
    /// N103 identification code qualifier / NAD code list agency.
    pub qualifier: Option<String>,
    pub id: Option<String>,
}

/// One invoice line (IT1 + PID / LIN + IMD + QTY + PRI + MOA 203).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct InvoiceLine {
    /// 1-based position of the line in the invoice.
    pub number: u32,
    #[schema(value_type = String, example = "500")]
    pub quantity: Decimal,
    pub unit: Option<String>,
    #[schema(value_type = Option<String>, example = "12.50")]
    pub unit_price: Option<Decimal>,
    pub product_id: Option<String>,
    pub description: Option<String>,
    /// MOA 203, or quantity × unit price.
    #[schema(value_type = String, example = "6250.00")]
    pub amount: Decimal,
}

/// An X12 SAC allowance or charge at invoice level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AllowanceCharge {
    /// `allowance` or `charge`.
    pub kind: String,
    /// SAC02 service, promotion, allowance or charge code.
    pub code: Option<String>,
    #[schema(value_type = String, example = "27.99")]
    pub amount: Decimal,
}

/// Reads typed values out of one document's segments.
struct Reader<'i, 'a> {
    ic: &'i Interchange<'a>,
}

impl Reader<'_, '_> {
    fn text(&self, segment: &Segment<'_>, raw: &[u8], element: usize) -> Result<Option<String>, EdiError> {
        let text = self.ic.text(segment, raw, element)?;
        Ok(Some(text).filter(|t| !t.is_empty()))
    }

    fn element(&self, segment: &Fields<'_, '_>, n: usize) -> Result<Option<String>, EdiError> {
        self.text(segment, segment.element(n), n)
    }

    fn component(&self, segment: &Fields<'_, '_>, n: usize, c: usize) -> Result<Option<String>, EdiError> {
        self.text(segment, segment.component(n, c), n)
    }

    fn required(
        &self,
        segment: &Segment<'_>,
        value: Option<String>,
        n: usize,
        what: &str,
    ) -> Result<String, EdiError> {
        value.ok_or_else(|| {
            segment
                .error(
                    Some(segment.element_name(n)),
                    format!("{} ({what}) is required", segment.element_name(n)),
                )
                .with_kind(ErrorKind::Missing)
        })
    }

    /// A decimal in the interchange's notation; `implied` decimals for X12 N-type elements.
    fn decimal(
        &self,
        segment: &Segment<'_>,
        value: Option<String>,
        n: usize,
        implied: Option<u32>,
    ) -> Result<Option<Decimal>, EdiError> {
        let Some(text) = value else { return Ok(None) };
        let invalid = || {
            segment
                .error(
                    Some(segment.element_name(n)),
                    format!(
                        "{} must be a {}number, found {text:?}",
                        segment.element_name(n),
                        if implied.is_some() { "whole " } else { "" }
                    ),
                )
                .with_kind(ErrorKind::Invalid)
        };
        let normalized = if self.ic.decimal_mark == b'.' {
            text.clone()
        } else {
            text.replace(char::from(self.ic.decimal_mark), ".")
        };
        let plain = normalized.strip_prefix('-').unwrap_or(&normalized);
        let well_formed = !plain.is_empty()
            && plain.bytes().all(|b| b.is_ascii_digit() || (b == b'.' && implied.is_none()))
            && plain.bytes().filter(|&b| b == b'.').count() <= 1
            && plain != ".";
        if !well_formed {
            return Err(invalid());
        }
        let mut value = Decimal::from_str(&normalized).map_err(|_| invalid())?;
        if let Some(scale) = implied {
            value.set_scale(scale).map_err(|_| invalid())?;
        }
        Ok(Some(value))
    }

    /// The date in element `n`, written as `format` says (EDIFACT code list 2379: 102 CCYYMMDD, 203
    /// CCYYMMDDHHMM, 204 CCYYMMDDHHMMSS; X12 dates are 102): every digit it must have, no more.
    fn date(
        &self,
        segment: &Segment<'_>,
        value: Option<String>,
        n: usize,
        format: &[u8],
    ) -> Result<Option<NaiveDate>, EdiError> {
        let Some(text) = value else { return Ok(None) };
        let element = segment.element_name(n);
        let invalid =
            |message: String| segment.error(Some(element.clone()), message).with_kind(ErrorKind::InvalidDate);
        let pattern = match format {
            b"" | b"102" => "CCYYMMDD",
            b"203" => "CCYYMMDDHHMM",
            b"204" => "CCYYMMDDHHMMSS",
            other => {
                return Err(invalid(format!(
                    "date format {:?} is not read (102 CCYYMMDD, 203 CCYYMMDDHHMM or 204 CCYYMMDDHHMMSS)",
                    String::from_utf8_lossy(other)
                )));
            }
        };
        // Every layout is completed to seconds, so that one parse checks the date and any time.
        let complete = format!("{text}{}", &"000000"[..14usize.saturating_sub(text.len()).min(6)]);
        let read = (text.len() == pattern.len() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| chrono::NaiveDateTime::parse_from_str(&complete, "%Y%m%d%H%M%S").ok())
            .flatten()
            .map(|at| at.date());
        read.map(Some).ok_or_else(|| invalid(format!("{element} must be a date {pattern}, found {text:?}")))
    }
}

fn missing(header: &Segment<'_>, message: &str) -> EdiError {
    header.error(None, message).with_kind(ErrorKind::Missing)
}

/// Maps an 810 transaction set (ST..SE inclusive).
pub(super) fn from_810(
    ic: &Interchange<'_>,
    set: &[Segment<'_>],
    control_number: &str,
) -> Result<(Invoice, Vec<Warning>), EdiError> {
    let r = Reader { ic };
    let st = &set[0];
    let (mut number, mut issue_date, mut purchase_order, mut currency, mut total) =
        (None, None, None, None, None);
    let (mut tax_total, mut tax_rate) = (None, None);
    let (mut seller, mut remit_to, mut buyer, mut bill_to) = (None, None, None, None);
    let mut lines: Vec<InvoiceLine> = Vec::new();
    let mut allowances_charges = Vec::new();
    let mut total_position = None;
    for segment in &set[1..set.len() - 1] {
        let s = &Fields::new(segment);
        match s.tag() {
            b"BIG" => {
                issue_date =
                    r.date(s, Some(r.required(s, r.element(s, 1)?, 1, "invoice date")?), 1, b"102")?;
                number = Some(r.required(s, r.element(s, 2)?, 2, "invoice number")?);
                purchase_order = r.element(s, 4)?;
            }
            b"CUR" => currency = r.element(s, 2)?,
            b"N1" => {
                let party =
                    Party { name: r.element(s, 2)?, qualifier: r.element(s, 3)?, id: r.element(s, 4)? };
                match s.element(1) {
                    b"SE" => seller = Some(party),
                    b"RE" => remit_to = Some(party),
                    b"BY" => buyer = Some(party),
                    b"BT" => bill_to = Some(party),
                    _ => {}
                }
            }
            b"IT1" => {
                let quantity =
                    r.decimal(s, Some(r.required(s, r.element(s, 2)?, 2, "quantity invoiced")?), 2, None)?;
                let unit_price =
                    r.decimal(s, Some(r.required(s, r.element(s, 4)?, 4, "unit price")?), 4, None)?;
                let (quantity, unit_price) = (quantity.unwrap_or_default(), unit_price.unwrap_or_default());
                let amount = line_amount(s, quantity, unit_price)?;
                lines.push(InvoiceLine {
                    number: line_number(&lines),
                    quantity,
                    unit: r.element(s, 3)?,
                    unit_price: Some(unit_price),
                    product_id: r.element(s, 7)?,
                    description: None,
                    amount,
                });
            }
            b"PID" => {
                if let Some(line) = lines.last_mut().filter(|line| line.description.is_none()) {
                    line.description = r.element(s, 5)?;
                }
            }
            b"TDS" => {
                let stated = r.required(s, r.element(s, 1)?, 1, "total invoice amount")?;
                total = r.decimal(s, Some(stated), 1, Some(2))?;
                total_position = Some(s.position);
            }
            b"TXI" => {
                tax_total = r.decimal(s, r.element(s, 2)?, 2, None)?.or(tax_total);
                tax_rate = r.decimal(s, r.element(s, 3)?, 3, None)?.or(tax_rate);
            }
            b"SAC" => {
                let kind = match s.element(1) {
                    b"A" => "allowance",
                    b"C" => "charge",
                    _ => continue,
                };
                if let Some(amount) = r.decimal(s, r.element(s, 5)?, 5, Some(2))? {
                    allowances_charges.push(AllowanceCharge {
                        kind: kind.to_owned(),
                        code: r.element(s, 2)?,
                        amount,
                    });
                }
            }
            _ => {}
        }
    }
    let currency_stated = currency.is_some();
    let invoice = Invoice {
        number: number.ok_or_else(|| missing(st, "the 810 has no BIG segment (invoice number and date)"))?,
        issue_date: issue_date
            .ok_or_else(|| missing(st, "the 810 has no BIG segment (invoice number and date)"))?,
        purchase_order,
        currency: currency.unwrap_or_else(|| "USD".to_owned()),
        total: total.ok_or_else(|| missing(st, "the 810 has no TDS segment (total invoice amount)"))?,
        tax_total,
        tax_rate,
        seller: seller.or(remit_to),
        buyer: buyer.or(bill_to),
        lines,
        allowances_charges,
    };
    // TDS01 is the lines plus charges less allowances (plus tax, when TXI states it).
    let adjustments = invoice
        .allowances_charges
        .iter()
        .map(|ac| if ac.kind == "allowance" { -ac.amount } else { ac.amount });
    let computed =
        sum(invoice.lines.iter().map(|line| line.amount).chain(adjustments).chain(invoice.tax_total));
    let mut warnings = Vec::new();
    if !currency_stated {
        warnings.push(Warning {
            document: control_number.to_owned(),
            segment_position: Some(st.position),
            message: "the 810 names no currency (no CUR segment): its amounts are booked as USD".to_owned(),
        });
    }
    if computed != Some(invoice.total) {
        warnings.push(Warning {
            document: control_number.to_owned(),
            segment_position: total_position,
            message: format!(
                "TDS01 total {} differs from the lines plus charges less allowances and tax ({})",
                invoice.total,
                shown(computed)
            ),
        });
    }
    Ok((invoice, warnings))
}

/// The amounts an INVOIC's total is read from, first found first (code list 5025): 77 invoice
/// amount, 86 message total, 39 invoice total amount, 9 amount due, 128 total amount, 79 line items
/// total.
const TOTAL_QUALIFIERS: [&[u8]; 6] = [b"77", b"86", b"39", b"9", b"128", b"79"];

/// The invoice total among the summary's amounts; when none of [`TOTAL_QUALIFIERS`] is there, the
/// error names the qualifiers that are.
fn invoice_total(unh: &Segment<'_>, summary: &[(&[u8], Option<Decimal>)]) -> Result<Decimal, EdiError> {
    let stated =
        |qualifier: &&[u8]| summary.iter().find(|(found, _)| found == qualifier).and_then(|(_, a)| *a);
    if let Some(total) = TOTAL_QUALIFIERS.iter().find_map(stated) {
        return Ok(total);
    }
    let found: Vec<String> =
        summary.iter().map(|(q, _)| format!("MOA {}", String::from_utf8_lossy(q))).collect();
    let found = if found.is_empty() { "no MOA".to_owned() } else { found.join(", ") };
    Err(missing(
        unh,
        &format!("the INVOIC has no invoice total (MOA 77, 86, 39, 9, 128 or 79 after UNS); it has {found}"),
    ))
}

/// Maps an INVOIC message (UNH..UNT inclusive).
pub(super) fn from_invoic(
    ic: &Interchange<'_>,
    message: &[Segment<'_>],
    control_number: &str,
) -> Result<(Invoice, Vec<Warning>), EdiError> {
    let r = Reader { ic };
    let unh = &message[0];
    let (mut number, mut issue_date, mut purchase_order, mut currency) = (None, None, None, None);
    let (mut invoice_date, mut invoice_amount, mut tax_total, mut tax_rate) = (None, None, None, None);
    // Every amount of the summary section (after UNS), by qualifier, for the invoice total.
    let mut summary_amounts: Vec<(&[u8], Option<Decimal>)> = Vec::new();
    let (mut seller, mut invoicer, mut buyer, mut invoicee) = (None, None, None, None);
    let mut lines: Vec<InvoiceLine> = Vec::new();
    let mut summary = false;
    // The LIN of each line, to locate an error found once the message is read.
    let mut line_segments: Vec<Segment<'_>> = Vec::new();
    // (amount, segment position) of MOA 79 line items total and 77 invoice amount; MOA 125 taxable amount.
    let (mut lines_moa, mut taxable_moa) = (None, None);
    for segment in &message[1..message.len() - 1] {
        let s = &Fields::new(segment);
        match s.tag() {
            b"BGM" => number = Some(r.required(s, r.component(s, 2, 1)?, 2, "document number")?),
            b"DTM" if matches!(s.component(1, 1), b"137" | b"3") => {
                let stated = r.required(s, r.component(s, 1, 2)?, 1, "document date")?;
                let date = r.date(s, Some(stated), 1, s.component(1, 3))?;
                if s.component(1, 1) == b"137" { issue_date = date } else { invoice_date = date }
            }
            b"RFF" if s.component(1, 1) == b"ON" => purchase_order = r.component(s, 1, 2)?,
            b"CUX" => currency = r.component(s, 1, 2)?,
            b"NAD" => {
                let name_element = if s.element(4).is_empty() { 3 } else { 4 };
                let name_parts =
                    (1..=5).map(|c| r.component(s, name_element, c)).collect::<Result<Vec<_>, _>>()?;
                let name = Some(name_parts.into_iter().flatten().collect::<Vec<_>>().join(" "))
                    .filter(|n| !n.is_empty());
                let party = Party { name, qualifier: r.component(s, 2, 3)?, id: r.component(s, 2, 1)? };
                match s.element(1) {
                    b"SU" => seller = Some(party),
                    b"II" => invoicer = Some(party),
                    b"BY" => buyer = Some(party),
                    b"IV" => invoicee = Some(party),
                    _ => {}
                }
            }
            b"LIN" => {
                line_segments.push(*segment);
                lines.push(InvoiceLine {
                    number: line_number(&lines),
                    quantity: Decimal::ZERO,
                    unit: None,
                    unit_price: None,
                    product_id: r.component(s, 3, 1)?,
                    description: None,
                    amount: Decimal::ZERO,
                })
            }
            b"IMD" if !summary => {
                if let Some(line) = lines.last_mut().filter(|line| line.description.is_none()) {
                    line.description = r.component(s, 3, 4)?;
                }
            }
            b"QTY" if !summary && s.component(1, 1) == b"47" => {
                if let Some(line) = lines.last_mut() {
                    line.quantity = r.decimal(s, r.component(s, 1, 2)?, 1, None)?.unwrap_or_default();
                    line.unit = r.component(s, 1, 3)?;
                }
            }
            b"PRI" if !summary && matches!(s.component(1, 1), b"AAA" | b"AAB") => {
                if let Some(line) = lines.last_mut().filter(|line| line.unit_price.is_none()) {
                    line.unit_price = r.decimal(s, r.component(s, 1, 2)?, 1, None)?;
                }
            }
            b"MOA" => {
                let amount = r.decimal(s, r.component(s, 1, 2)?, 1, None)?;
                if currency.is_none() {
                    currency = r.component(s, 1, 3)?;
                }
                if summary {
                    summary_amounts.push((s.component(1, 1), amount));
                }
                match (summary, s.component(1, 1)) {
                    (false, b"203") => {
                        if let Some(line) = lines.last_mut() {
                            line.amount = amount.unwrap_or_default();
                        }
                    }
                    (true, b"77") => invoice_amount = amount.map(|a| (a, s.position)),
                    (true, b"79") => lines_moa = amount.map(|a| (a, s.position)),
                    (true, b"125") => taxable_moa = amount,
                    (true, b"124") => tax_total = amount,
                    _ => {}
                }
            }
            b"TAX" if s.component(1, 1) == b"7" => {
                tax_rate = r.decimal(s, r.component(s, 5, 4)?, 5, None)?.or(tax_rate)
            }
            b"UNS" => summary = true,
            _ => {}
        }
    }
    for (line, lin) in lines.iter_mut().zip(&line_segments) {
        if line.amount.is_zero() {
            line.amount = line_amount(lin, line.quantity, line.unit_price.unwrap_or_default())?;
        }
    }
    let invoice = Invoice {
        number: number.ok_or_else(|| missing(unh, "the INVOIC has no BGM segment (document number)"))?,
        issue_date: issue_date.or(invoice_date).ok_or_else(|| {
            missing(unh, "the INVOIC has no DTM+137 (document date) or DTM+3 (invoice date) segment")
        })?,
        purchase_order,
        currency: currency.ok_or_else(|| missing(unh, "the INVOIC names no currency (CUX or MOA)"))?,
        total: invoice_total(unh, &summary_amounts)?,
        tax_total,
        tax_rate,
        seller: seller.or(invoicer),
        buyer: buyer.or(invoicee),
        lines,
        allowances_charges: Vec::new(),
    };
    let mut warnings = Vec::new();
    let mut warn = |segment_position: Option<usize>, message: String| {
        warnings.push(Warning { document: control_number.to_owned(), segment_position, message });
    };
    let lines_total = sum(invoice.lines.iter().map(|line| line.amount));
    if let Some((stated, position)) = lines_moa
        && Some(stated) != lines_total
    {
        let message =
            format!("MOA 79 line total {stated} differs from the sum of the lines ({})", shown(lines_total));
        warn(Some(position), message);
    }
    if let (Some((stated, position)), Some(taxable), Some(tax)) =
        (invoice_amount, taxable_moa, invoice.tax_total)
        && taxable.checked_add(tax) != Some(stated)
    {
        let message = format!(
            "MOA 77 total {stated} differs from MOA 125 plus MOA 124 ({})",
            shown(taxable.checked_add(tax))
        );
        warn(Some(position), message);
    }
    Ok((invoice, warnings))
}

/// Quantity × unit price, refused where it leaves the range of an exact amount (28 digits).
fn line_amount(segment: &Segment<'_>, quantity: Decimal, unit_price: Decimal) -> Result<Decimal, EdiError> {
    quantity.checked_mul(unit_price).ok_or_else(|| {
        segment
            .error(
                None,
                format!("quantity {quantity} × unit price {unit_price} is beyond the range of an amount"),
            )
            .with_kind(ErrorKind::Invalid)
    })
}

/// An exact sum, or `None` when it leaves the range of an amount.
fn sum(amounts: impl IntoIterator<Item = Decimal>) -> Option<Decimal> {
    amounts.into_iter().try_fold(Decimal::ZERO, |total, amount| total.checked_add(amount))
}

fn shown(amount: Option<Decimal>) -> String {
    amount.map_or_else(|| "beyond the range of an amount".to_owned(), |amount| amount.to_string())
}

fn line_number(lines: &[InvoiceLine]) -> u32 {
    u32::try_from(lines.len() + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "invoice_tests.rs"]
mod tests;
