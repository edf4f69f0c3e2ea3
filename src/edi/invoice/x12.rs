//! The 810 mapping, segment by segment: BIG (date, number, order, BIG07 kind), CUR, the N1 loop by
//! role, IT1 (quantity, unit, price and its IT105 basis, every IT106–IT125 product id pair), PID,
//! SAC (within an IT1 loop the line's, elsewhere the invoice's; tax codes are tax), TXI (header
//! or line by position), TDS.

use rust_decimal::Decimal;

use super::reader::{OriginalInvoice, Reader, line_amount, missing};
use super::{
    AllowanceCharge, AllowanceOrCharge, DocumentKind, Invoice, InvoiceLine, InvoiceSources, LineSources,
    Parties, Party, PaymentTerms, ProductId, Role, StatedTotal, Tax, line_number, merged, reconcile,
    single_rate, tax_sum,
};
use crate::edi::syntax::{Fields, Segment};
use crate::edi::{EdiError, Interchange, Warning};

/// The role an N101 code names, and its rank among the codes of that role (0 is preferred): the
/// seller is SE, else VN, else SU; the payee RI, else RE, else PE.
fn role_of(code: &[u8]) -> Option<(Role, usize)> {
    Some(match code {
        b"SE" => (Role::Seller, 0),
        b"VN" => (Role::Seller, 1),
        b"SU" => (Role::Seller, 2),
        b"BY" => (Role::Buyer, 0),
        b"BT" => (Role::Invoicee, 0),
        b"RI" => (Role::Payee, 0),
        b"RE" => (Role::Payee, 1),
        b"PE" => (Role::Payee, 2),
        b"ST" => (Role::ShipTo, 0),
        _ => return None,
    })
}

/// SAC02 codes that are a tax, not a charge (code list 1300): D360 Goods and Services Tax, and the
/// H650–H850 "Tax - …" codes.
fn is_tax_code(code: &[u8]) -> bool {
    code == b"D360"
        || (code.len() == 4
            && code[0] == b'H'
            && std::str::from_utf8(&code[1..])
                .ok()
                .and_then(|n| n.parse::<u16>().ok())
                .is_some_and(|n| (650..=850).contains(&n)))
}

/// The longest invoice or order number an 810 states (BIG02 and BIG04, elements 76 and 324: AN 1/22).
const MAX_REFERENCE: usize = 22;
/// The longest REF02 reference identification read (element 127: AN 1/50 in 5010).
const MAX_REF: usize = 50;

/// BIG07 (code list 640).
fn kind_of(code: &[u8]) -> DocumentKind {
    match code {
        b"CR" | b"CN" => DocumentKind::CreditNote,
        b"DR" | b"DC" => DocumentKind::DebitNote,
        b"CO" => DocumentKind::CorrectedInvoice,
        _ => DocumentKind::Invoice,
    }
}

/// IT105 (code list 639): how many units IT104 is for.
fn basis_of(code: &[u8]) -> Option<Decimal> {
    match code {
        b"HP" => Some(Decimal::ONE_HUNDRED),
        b"TP" => Some(Decimal::ONE_THOUSAND),
        _ => None,
    }
}

/// Maps an 810 transaction set (ST..SE inclusive).
pub(in crate::edi) fn from_810(
    ic: &Interchange<'_>,
    set: &[Segment<'_>],
    control_number: &str,
) -> Result<(Invoice, Vec<Warning>), EdiError> {
    let r = Reader { ic };
    let st = &set[0];
    let (mut kind, mut number, mut issue_date, mut purchase_order, mut currency, mut total) =
        (DocumentKind::Invoice, None, None, None, None, None);
    let mut parties = Parties::default();
    let mut lines: Vec<InvoiceLine> = Vec::new();
    let (mut allowances_charges, mut header_taxes, mut line_taxes) = (Vec::new(), Vec::new(), Vec::new());
    let mut total_position = None;
    let (mut payment_terms, mut stated_totals) = (Vec::new(), Vec::new());
    let mut sources = InvoiceSources::default();
    let mut original = OriginalInvoice::default();
    for segment in &set[1..set.len() - 1] {
        let s = &Fields::new(segment);
        // Within an IT1 loop until the TDS: a SAC or TXI there is the line's.
        let in_line = !lines.is_empty() && total.is_none();
        match s.tag() {
            b"BIG" => {
                issue_date =
                    r.date(s, Some(r.required(s, r.element(s, 1)?, 1, "invoice date")?), 1, b"102")?;
                let stated = r.bounded(s, r.element(s, 2)?, 2, MAX_REFERENCE)?;
                number = Some(r.required(s, stated, 2, "invoice number")?);
                purchase_order = r.bounded(s, r.element(s, 4)?, 4, MAX_REFERENCE)?;
                kind = kind_of(s.element(7));
                let big = Some(s.position);
                (sources.number, sources.issue_date) = (big, big);
                sources.purchase_order = big.filter(|_| purchase_order.is_some());
            }
            b"REF" if lines.is_empty() && original.wants(s.element(1)) => {
                original.take(s.element(1), r.bounded(s, r.element(s, 2)?, 2, MAX_REF)?, s.position);
            }
            b"CUR" => {
                currency = r.code_at(s, 2)?;
                sources.currency = Some(s.position).filter(|_| currency.is_some());
            }
            b"N1" => {
                if let Some(role) = role_of(s.element(1)) {
                    let party =
                        Party { name: r.element(s, 2)?, qualifier: r.code_at(s, 3)?, id: r.element(s, 4)? };
                    parties.offer(role, party, s.position);
                }
            }
            b"IT1" => {
                let quantity = r.required_decimal(s, 2, "quantity invoiced", None)?;
                let unit_price = r.required_decimal(s, 4, "unit price", None)?;
                let price_basis = basis_of(s.element(5));
                let mut product_ids = Vec::new();
                for pair in 0..10 {
                    if let Some(id) = r.shared_at(s, 7 + 2 * pair)? {
                        product_ids.push(ProductId { qualifier: r.code_at(s, 6 + 2 * pair)?, id });
                    }
                }
                lines.push(InvoiceLine {
                    number: line_number(&lines),
                    quantity,
                    unit: r.code_at(s, 3)?,
                    unit_price: Some(unit_price),
                    price_kind: None,
                    price_basis,
                    product_id: product_ids.first().map(|p| p.id.clone()),
                    product_ids,
                    description: None,
                    amount: line_amount(s, quantity, unit_price, price_basis)?,
                    allowances_charges: Vec::new(),
                    sources: LineSources {
                        line: Some(s.position),
                        quantity: Some(s.position),
                        unit_price: Some(s.position),
                        ..LineSources::default()
                    },
                });
            }
            b"PID" => {
                if let Some(line) = lines.last_mut().filter(|line| line.description.is_none()) {
                    line.description = r.element(s, 5)?;
                    line.sources.description = Some(s.position).filter(|_| line.description.is_some());
                }
            }
            b"TDS" => {
                total = Some(r.required_decimal(s, 1, "total invoice amount", Some(2))?);
                (total_position, sources.total) = (Some(s.position), Some(s.position));
                for (n, code) in [(1, "TDS01"), (2, "TDS02"), (3, "TDS03"), (4, "TDS04")] {
                    if let Some(amount) = r.decimal_at(s, n, Some(2))? {
                        stated_totals.push(StatedTotal {
                            code: code.into(),
                            amount,
                            segment: Some(s.position),
                        });
                    }
                }
            }
            b"ITD" => payment_terms.push(PaymentTerms {
                terms_type: r.element(s, 1)?,
                basis: r.element(s, 2)?,
                discount_percent: r.decimal_at(s, 3, None)?,
                discount_due_date: r.date(s, r.element(s, 4)?, 4, b"102")?,
                discount_days: r.count_at(s, 5)?,
                net_due_date: r.date(s, r.element(s, 6)?, 6, b"102")?,
                net_days: r.count_at(s, 7)?,
                discount_amount: r.decimal_at(s, 8, Some(2))?,
                description: r.element(s, 12)?,
                segment: Some(s.position),
            }),
            b"TXI" => {
                let tax = Tax {
                    tax_type: r.code_at(s, 1)?,
                    category: r.code_at(s, 6)?,
                    rate: r.decimal_at(s, 3, None)?,
                    taxable_amount: r.decimal_at(s, 8, None)?,
                    amount: r.decimal_at(s, 2, None)?,
                    segment: Some(s.position),
                };
                if in_line { line_taxes.push(tax) } else { header_taxes.push(tax) }
            }
            b"SAC" => {
                let Some(indicator) = AllowanceOrCharge::of_code(s.element(1)) else { continue };
                let (amount, percentage) = (r.decimal_at(s, 5, Some(2))?, r.decimal_at(s, 7, None)?);
                if is_tax_code(s.element(2)) {
                    let tax = Tax {
                        tax_type: r.code_at(s, 2)?,
                        rate: percentage,
                        amount,
                        segment: Some(s.position),
                        ..Tax::default()
                    };
                    if in_line {
                        line_taxes.push(tax)
                    } else {
                        header_taxes.push(tax)
                    }
                    continue;
                }
                let code = r.element(s, 2)?;
                let charge =
                    AllowanceCharge { kind: indicator, code, amount, percentage, segment: Some(s.position) };
                match lines.last_mut().filter(|_| in_line) {
                    Some(line) => line.allowances_charges.push(charge),
                    None => allowances_charges.push(charge),
                }
            }
            _ => {}
        }
    }
    // The invoice's taxes are its header's; the lines' only where the header states none.
    let taxes = if header_taxes.is_empty() { merged(line_taxes) } else { header_taxes };
    let ([seller, buyer, invoicee, payee, ship_to], found_at) = parties.book();
    [sources.seller, sources.buyer, sources.invoicee, sources.payee, sources.ship_to] = found_at;
    let (original_invoice, named_at) = original.of(kind);
    sources.original_invoice = named_at;
    let no_big = || missing(st, "the 810 has no BIG segment (invoice number and date)");
    let invoice = Invoice {
        kind,
        number: number.ok_or_else(no_big)?,
        issue_date: issue_date.ok_or_else(no_big)?,
        purchase_order,
        original_invoice,
        currency,
        total: total.ok_or_else(|| missing(st, "the 810 has no TDS segment (total invoice amount)"))?,
        tax_total: tax_sum(&taxes),
        tax_rate: single_rate(&taxes),
        taxes,
        seller,
        buyer,
        invoicee,
        payee,
        ship_to,
        lines,
        allowances_charges,
        payment_terms,
        stated_totals,
        sources,
    };
    let mut warnings = Vec::new();
    if invoice.currency.is_none() {
        warnings.push(Warning {
            mismatch: false,
            document: control_number.to_owned(),
            segment_position: Some(st.position),
            message: "the 810 names no currency (no CUR segment): its currency is booked as unknown"
                .to_owned(),
        });
    }
    warnings.extend(reconcile::x12_total(&invoice, total_position.unwrap_or(st.position), control_number));
    Ok((invoice, warnings))
}
