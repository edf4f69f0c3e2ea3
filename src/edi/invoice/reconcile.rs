//! Reconciliation: the figures a document states against what its parts add up to. A disagreement
//! is a warning naming both figures; neither value is ever picked silently over the other.

use rust_decimal::{Decimal, RoundingStrategy};

use super::{Invoice, InvoiceLine, PriceKind, shown, sum};
use crate::edi::Warning;

/// `computed` agrees with `stated` when it rounds to it at the stated amount's scale.
fn agrees(stated: Decimal, computed: Option<Decimal>) -> bool {
    computed.is_some_and(|c| {
        c.round_dp_with_strategy(stated.scale(), RoundingStrategy::MidpointAwayFromZero) == stated
    })
}

/// `amount` with the line's allowances and charges applied (a percentage taken of `amount`).
fn with_charges(line: &InvoiceLine, amount: Decimal) -> Option<Decimal> {
    line.allowances_charges.iter().try_fold(amount, |total, ac| total.checked_add(ac.signed(amount)?))
}

/// A gross line amount less the line's allowances and plus its charges (beyond range: unchanged).
pub(super) fn net_of_charges(line: &InvoiceLine, gross: Decimal) -> Decimal {
    with_charges(line, gross).unwrap_or(gross)
}

/// What the lines add up to; `with_their_charges`: their own allowances and charges included (X12,
/// where IT104 is the price before the line's SACs).
pub(super) fn lines_total(invoice: &Invoice, with_their_charges: bool) -> Option<Decimal> {
    invoice.lines.iter().try_fold(Decimal::ZERO, |total, line| {
        let amount = if with_their_charges { with_charges(line, line.amount)? } else { line.amount };
        total.checked_add(amount)
    })
}

/// Lines, plus the invoice's charges less its allowances (a percentage taken of the lines), plus
/// the total tax.
fn expected_total(invoice: &Invoice, lines: Option<Decimal>) -> Option<Decimal> {
    let lines = lines?;
    let charges = invoice.allowances_charges.iter().map(|ac| ac.signed(lines)).collect::<Option<Vec<_>>>()?;
    sum(std::iter::once(lines).chain(charges).chain(invoice.tax_total))
}

/// The 810's TDS01 against its lines (with their SACs), the invoice's SACs and its tax.
pub(super) fn x12_total(invoice: &Invoice, position: usize, document: &str) -> Option<Warning> {
    let computed = expected_total(invoice, lines_total(invoice, true));
    let parts = "the lines plus charges less allowances and tax";
    stated("TDS01 total", (invoice.total, position), parts, computed, document)
}

/// The INVOIC's stated total (MOA `qualifier`) against what it is the sum of: MOA 79 the lines,
/// any other the lines plus charges less allowances plus tax; `net` stands for the lines of a
/// document that has none.
pub(super) fn invoic_total(
    invoice: &Invoice,
    qualifier: &str,
    position: usize,
    document: &str,
    net: Option<Decimal>,
) -> Option<Warning> {
    let lines = net.or_else(|| lines_total(invoice, false));
    let (computed, parts) = if qualifier == "79" {
        (lines, "the sum of the lines")
    } else {
        (expected_total(invoice, lines), "the lines plus charges less allowances plus tax")
    };
    stated(format_args!("MOA {qualifier} total"), (invoice.total, position), parts, computed, document)
}

/// A line's stated amount (MOA 203) against quantity × price ÷ basis (`computed`), less its
/// allowances and plus its charges when the price is gross; `None` when they agree or no price is
/// stated.
pub(super) fn line_amount(line: &InvoiceLine, computed: Decimal) -> Option<String> {
    line.unit_price?;
    let gross = line.price_kind == Some(PriceKind::Gross);
    let computed = if gross { with_charges(line, computed) } else { Some(computed) };
    (!agrees(line.amount, computed)).then(|| {
        format!(
            "line {} amount {} differs from quantity × {} price ÷ basis{} ({})",
            line.number,
            line.amount,
            line.price_kind.map_or("unit", PriceKind::as_str),
            if gross { " with its allowances and charges" } else { "" },
            shown(computed)
        )
    })
}

/// Two figures for one amount: the stated one (`what`, with the position of the segment stating
/// it) and the sum of its `parts`.
pub(super) fn stated(
    what: impl std::fmt::Display,
    (stated, position): (Decimal, usize),
    parts: &str,
    computed: Option<Decimal>,
    document: &str,
) -> Option<Warning> {
    (!agrees(stated, computed)).then(|| Warning {
        mismatch: true,
        document: document.to_owned(),
        segment_position: Some(position),
        message: format!("{what} {stated} differs from {parts} ({})", shown(computed)),
    })
}
