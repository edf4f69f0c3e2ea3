//! Invoice mapping: an X12 810 transaction set or an EDIFACT INVOIC message becomes one [`Invoice`],
//! booked as the document says it: its kind, every party by role, each line's price with its kind
//! and basis, every product id, allowances and charges at header and line level, the tax breakdown
//! per rate, and warnings wherever the stated figures do not reconcile ([`reconcile`]).
//!
//! Amounts are exact decimals. X12 TDS01 and SAC05 are N2 (two implied decimals); EDIFACT amounts use
//! the decimal mark declared in the UNA. Anything required for booking that is missing is a positioned
//! error. The segment-by-segment mappings are in [`x12`] and [`edifact`].

mod compare;
mod edifact;
mod reader;
mod reconcile;
mod sources;
mod x12;

use std::borrow::Cow;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use compare::Difference;
pub(super) use edifact::from_invoic;
pub use sources::{InvoiceSources, LineSources};
pub(super) use x12::from_810;

/// Text the model keeps in two places (a line's first product id is also its `product_id`):
/// shared rather than copied.
pub type Shared = std::sync::Arc<str>;

/// A value from a code list (a currency, a unit, a qualifier): the common codes are
/// [`reader::COMMON_CODES`] entries, borrowed rather than allocated for every invoice.
pub type Code = Cow<'static, str>;

/// The accounting view of one invoice document.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Invoice {
    /// What the document is (BIG07 / BGM 1001): a credit note is never booked as an invoice.
    pub kind: DocumentKind,
    /// BIG02 / BGM 1004.
    #[schema(example = "INV-1042")]
    pub number: String,
    /// BIG01 / DTM 137 (or 3).
    pub issue_date: NaiveDate,
    /// BIG04 / RFF+ON.
    pub purchase_order: Option<String>,
    /// The earlier invoice a credit note, debit note or corrected invoice names, as stated: X12
    /// REF*OI (original invoice number), else REF*IV / EDIFACT RFF+OI (previous invoice number),
    /// else RFF+IV, in the header. None on an invoice (whose REF*IV restates its own number).
    #[schema(example = json!(null))]
    pub original_invoice: Option<String>,
    /// ISO 4217 code: CUR02 / CUX (or the currency of an MOA); null when the document names none.
    #[schema(value_type = Option<String>, example = "USD")]
    pub currency: Option<Code>,
    /// TDS01 / MOA 77 (or 86, 39, 9, 128, 79), as an exact decimal string.
    #[schema(value_type = String, example = "8000.00")]
    pub total: Decimal,
    /// The total tax: the TXI amounts and tax SACs / MOA 176 (else the tax groups' MOA 124).
    #[schema(value_type = Option<String>, example = "13.78")]
    pub tax_total: Option<Decimal>,
    /// The tax rate (percent) when all tax is at one rate; otherwise see `taxes`.
    #[schema(value_type = Option<String>, example = "19")]
    pub tax_rate: Option<Decimal>,
    /// The tax breakdown, one entry per tax type, category and rate.
    pub taxes: Vec<Tax>,
    /// The selling party: X12 N1 SE, else VN, else SU / EDIFACT NAD SE, else SU, else II; when the
    /// document names none, the payee.
    pub seller: Option<Party>,
    /// The buying party: N1 / NAD BY; when the document names none, the invoicee.
    pub buyer: Option<Party>,
    /// Who the invoice is addressed to: N1 BT / NAD IV.
    pub invoicee: Option<Party>,
    /// Who is to be paid: N1 RI, else RE, else PE / NAD PE.
    pub payee: Option<Party>,
    /// Where the goods went: N1 ST / NAD DP, else ST.
    pub ship_to: Option<Party>,
    pub lines: Vec<InvoiceLine>,
    /// Allowances and charges on the whole invoice (X12 SAC outside the lines / EDIFACT ALC before
    /// the first LIN). Tax SACs are in `taxes`.
    pub allowances_charges: Vec<AllowanceCharge>,
    /// The payment terms: one entry per X12 ITD / EDIFACT PAT group.
    pub payment_terms: Vec<PaymentTerms>,
    /// Every total the document states, as stated: X12 TDS01–TDS04 / the summary's MOA outside
    /// its tax and allowance groups (77, 79, 86, 9, 39, 125, 128, 129, 176, …).
    pub stated_totals: Vec<StatedTotal>,
    /// Where the invoice's values were read.
    pub sources: InvoiceSources,
}

/// Payment terms (X12 ITD / EDIFACT PAT with its DTM, PCD and MOA).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct PaymentTerms {
    /// ITD01 terms type / PAT 4279 (`1` basic, `22` discount, …).
    #[schema(example = "01")]
    pub terms_type: Option<String>,
    /// ITD02 basis date / PAT 2475 the time the periods count from (`3` / `5`: the invoice date).
    #[schema(example = "3")]
    pub basis: Option<String>,
    /// ITD03 / PCD 12 discount percent.
    #[schema(value_type = Option<String>, example = "2")]
    pub discount_percent: Option<Decimal>,
    /// ITD04 / DTM 12.
    pub discount_due_date: Option<NaiveDate>,
    /// ITD05 / PAT 2152 of a discount (type 22) group.
    pub discount_days: Option<u32>,
    /// ITD06 / DTM 13.
    pub net_due_date: Option<NaiveDate>,
    /// ITD07 / PAT 2152 of any other group.
    pub net_days: Option<u32>,
    /// ITD08 / MOA 52.
    #[schema(value_type = Option<String>, example = "7.62")]
    pub discount_amount: Option<Decimal>,
    /// ITD12.
    pub description: Option<String>,
    /// The position of its ITD / PAT segment.
    pub segment: Option<usize>,
}

/// A total as the document states it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatedTotal {
    /// `TDS01` … `TDS04` / the MOA qualifier (code list 5025).
    #[schema(value_type = String, example = "TDS01")]
    pub code: Code,
    #[schema(value_type = String, example = "381.60")]
    pub amount: Decimal,
    /// The position of its TDS / MOA segment.
    #[serde(default)]
    pub segment: Option<usize>,
}

text_enum! {
    /// What an invoice document is, from X12 BIG07 or EDIFACT BGM 1001.
    DocumentKind {
        /// BIG07 absent, `DI` or another code / BGM 380 and the other invoice codes.
        Invoice = "invoice",
        /// BIG07 `CR`, `CN` / BGM 381, 261, 262, 396.
        CreditNote = "credit_note",
        /// BIG07 `DR`, `DC` / BGM 383.
        DebitNote = "debit_note",
        /// BIG07 `CO` / BGM 384.
        CorrectedInvoice = "corrected_invoice",
    }
}

/// A trading party named in the invoice (N1 / NAD).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Party {
    pub name: Option<String>,
    /// N103 identification code qualifier / NAD code list agency.
    #[schema(value_type = Option<String>)]
    pub qualifier: Option<Code>,
    pub id: Option<String>,
}

/// The tax of one type, category and rate: X12 TXI or a tax SAC / EDIFACT TAX with its MOA.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct Tax {
    /// TXI01 or the SAC02 code / TAX C241 (`VAT`, `GST`, …).
    #[schema(example = "VAT")]
    #[schema(value_type = Option<String>)]
    pub tax_type: Option<Code>,
    /// TXI06 exemption code / TAX 5305 category (`S` standard, `Z` zero, `E` exempt, …).
    #[schema(example = "S")]
    #[schema(value_type = Option<String>)]
    pub category: Option<Code>,
    /// Percent: TXI03 or SAC07 / TAX C243 rate.
    #[schema(value_type = Option<String>, example = "19")]
    pub rate: Option<Decimal>,
    /// The amount the rate applies to: TXI08 / MOA 125.
    #[schema(value_type = Option<String>, example = "2650.00")]
    pub taxable_amount: Option<Decimal>,
    /// TXI02 or SAC05 / MOA 124 (or 150).
    #[schema(value_type = Option<String>, example = "503.50")]
    pub amount: Option<Decimal>,
    /// The position of its TXI, SAC / TAX segment (the first, when several of one rate are added up).
    pub segment: Option<usize>,
}

/// One invoice line (IT1 + PID + SAC / LIN + PIA + IMD + QTY + PRI + MOA 203 + ALC).
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct InvoiceLine {
    /// 1-based position of the line in the invoice.
    pub number: u32,
    #[schema(value_type = String, example = "500")]
    pub quantity: Decimal,
    #[schema(value_type = Option<String>)]
    pub unit: Option<Code>,
    /// IT104 / the PRI price read first in the order AAA, INV, CAL, AAB.
    #[schema(value_type = Option<String>, example = "12.50")]
    pub unit_price: Option<Decimal>,
    /// What `unit_price` is (EDIFACT PRI 5125); null for an X12 IT104.
    pub price_kind: Option<PriceKind>,
    /// How many units `unit_price` is for (PRI 5284; IT105 `HP` 100, `TP` 1000); null for one.
    #[schema(value_type = Option<String>, example = "100")]
    pub price_basis: Option<Decimal>,
    /// The first of `product_ids`.
    #[schema(value_type = Option<String>)]
    pub product_id: Option<Shared>,
    /// Every product id the line carries: IT106–IT125 pairs / LIN and PIA.
    pub product_ids: Vec<ProductId>,
    pub description: Option<String>,
    /// MOA 203, or quantity × unit price ÷ basis (less allowances and plus charges when the price
    /// is gross).
    #[schema(value_type = String, example = "6250.00")]
    pub amount: Decimal,
    /// The line's allowances and charges (SAC within the IT1 loop / ALC after the LIN).
    pub allowances_charges: Vec<AllowanceCharge>,
    /// Where the line's values were read.
    pub sources: LineSources,
}

text_enum! {
    /// What a line's unit price is (EDIFACT code list 5125).
    PriceKind {
        /// AAA: calculation net, allowances and charges applied.
        Net = "net",
        /// INV: the invoice price.
        Invoice = "invoice",
        /// CAL: the calculation price.
        Calculation = "calculation",
        /// AAB: calculation gross, before the line's allowances and charges.
        Gross = "gross",
    }
}

impl PriceKind {
    /// The kind a PRI qualifier names, with its rank among a line's prices (0 is preferred).
    fn of_qualifier(qualifier: &[u8]) -> Option<(PriceKind, u8)> {
        match qualifier {
            b"AAA" => Some((PriceKind::Net, 0)),
            b"INV" => Some((PriceKind::Invoice, 1)),
            b"CAL" => Some((PriceKind::Calculation, 2)),
            b"AAB" => Some((PriceKind::Gross, 3)),
            _ => None,
        }
    }
}

/// A product id and what kind of id it is (IT106 qualifier `VP`, `BP`, `UP`, … / C212 7143 `EN`,
/// `SA`, `IN`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProductId {
    #[schema(value_type = Option<String>, example = "BP")]
    pub qualifier: Option<Code>,
    #[schema(value_type = String, example = "4006381333931")]
    pub id: Shared,
}

/// An allowance or a charge (X12 SAC / EDIFACT ALC).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AllowanceCharge {
    pub kind: AllowanceOrCharge,
    /// SAC02 code / ALC 7161 special service (else 5189 reason).
    #[schema(example = "D240")]
    pub code: Option<String>,
    /// SAC05 / MOA 8, 204, 23 or 131; null when only a percentage is stated.
    #[schema(value_type = Option<String>, example = "27.99")]
    pub amount: Option<Decimal>,
    /// SAC07 / PCD percent.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "10")]
    pub percentage: Option<Decimal>,
    /// The position of its SAC / ALC segment.
    #[serde(default)]
    pub segment: Option<usize>,
}

/// Whether an allowance or charge lowers or raises the amount (SAC01 / ALC 5463: `A` or `C`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AllowanceOrCharge {
    Allowance,
    Charge,
}

impl AllowanceOrCharge {
    fn of_code(code: &[u8]) -> Option<AllowanceOrCharge> {
        match code {
            b"A" => Some(AllowanceOrCharge::Allowance),
            b"C" => Some(AllowanceOrCharge::Charge),
            _ => None,
        }
    }
}

impl AllowanceCharge {
    /// The amount with its sign: an allowance lowers the total. `base` is what a percentage applies
    /// to when no amount is stated.
    fn signed(&self, base: Decimal) -> Option<Decimal> {
        let amount = match (self.amount, self.percentage) {
            (Some(amount), _) => amount,
            (None, Some(percentage)) => base.checked_mul(percentage)? / Decimal::ONE_HUNDRED,
            (None, None) => Decimal::ZERO,
        };
        Some(match self.kind {
            AllowanceOrCharge::Allowance => -amount,
            AllowanceOrCharge::Charge => amount,
        })
    }
}

/// The parties of a document as they are read: for each role, the best-ranked party found so far.
#[derive(Default)]
struct Parties {
    seller: Option<(usize, Found)>,
    buyer: Option<(usize, Found)>,
    invoicee: Option<(usize, Found)>,
    payee: Option<(usize, Found)>,
    ship_to: Option<(usize, Found)>,
}

/// A party and the position of the segment that named it.
type Found = (Party, usize);

/// A role of [`Parties`].
#[derive(Clone, Copy)]
enum Role {
    Seller,
    Buyer,
    Invoicee,
    Payee,
    ShipTo,
}

impl Parties {
    /// Offers `party`, named at `position`, for `role` at `rank` (0 is preferred): the first of the
    /// best rank is kept.
    fn offer(&mut self, (role, rank): (Role, usize), party: Party, position: usize) {
        let slot = match role {
            Role::Seller => &mut self.seller,
            Role::Buyer => &mut self.buyer,
            Role::Invoicee => &mut self.invoicee,
            Role::Payee => &mut self.payee,
            Role::ShipTo => &mut self.ship_to,
        };
        if slot.as_ref().is_none_or(|(kept, _)| rank < *kept) {
            *slot = Some((rank, (party, position)));
        }
    }

    /// The parties to book, (seller, buyer, invoicee, payee, ship-to), the seller falling back to
    /// the payee and the buyer to the invoicee; and the positions of the segments naming them.
    fn book(self) -> ([Option<Party>; 5], [Option<usize>; 5]) {
        let [seller, buyer, invoicee, payee, ship_to] =
            [self.seller, self.buyer, self.invoicee, self.payee, self.ship_to]
                .map(|slot| slot.map(|(_, f)| f));
        let found =
            [seller.or_else(|| payee.clone()), buyer.or_else(|| invoicee.clone()), invoicee, payee, ship_to];
        let positions = found.each_ref().map(|f| f.as_ref().map(|(_, position)| *position));
        (found.map(|f| f.map(|(party, _)| party)), positions)
    }
}

/// Taxes as one entry per tax type, category and rate, amounts added up (in place: most
/// documents have one entry or none).
fn merged(mut taxes: Vec<Tax>) -> Vec<Tax> {
    let add = |a: Option<Decimal>, b: Option<Decimal>| match (a, b) {
        (Some(a), Some(b)) => a.checked_add(b),
        (a, b) => a.or(b),
    };
    let mut at = 1;
    while at < taxes.len() {
        let tax = &taxes[at];
        let key = (&tax.tax_type, &tax.category, tax.rate);
        match taxes[..at].iter().position(|kept| (&kept.tax_type, &kept.category, kept.rate) == key) {
            Some(kept) => {
                let tax = taxes.remove(at);
                let kept = &mut taxes[kept];
                kept.amount = add(kept.amount, tax.amount);
                kept.taxable_amount = add(kept.taxable_amount, tax.taxable_amount);
            }
            None => at += 1,
        }
    }
    taxes
}

/// The sum of the taxes' amounts; `None` when none states one.
fn tax_sum(taxes: &[Tax]) -> Option<Decimal> {
    taxes
        .iter()
        .any(|tax| tax.amount.is_some())
        .then(|| sum(taxes.iter().filter_map(|tax| tax.amount)))
        .flatten()
}

/// The one rate all of `taxes` are at, if they are at one.
fn single_rate(taxes: &[Tax]) -> Option<Decimal> {
    let first = taxes.first()?.rate?;
    taxes.iter().all(|tax| tax.rate == Some(first)).then_some(first)
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
mod tests;
