//! The INVOIC mapping, segment by segment: BGM (kind and number), DTM 137/3, RFF+ON, CUX, NAD by
//! role, LIN + PIA (product ids), IMD, QTY 47, PRI (the preferred kind and its basis), MOA 203, and
//! the groups a segment opens: TAX with its MOA 124/150/125, ALC with its MOA 8/204/23/131 and PCD.
//! A group is the header's before the first LIN, a line's after its LIN, the summary's after UNS;
//! the summary's ALC groups repeat what the header and lines state and are not booked again.

use rust_decimal::Decimal;

use super::reader::{OriginalInvoice, Reader, code_of, line_amount, missing};
use super::{
    AllowanceCharge, AllowanceOrCharge, DocumentKind, Invoice, InvoiceLine, InvoiceSources, LineSources,
    Parties, Party, PaymentTerms, PriceKind, ProductId, Role, StatedTotal, Tax, merged, reconcile,
    single_rate, tax_sum,
};
use crate::edi::syntax::{Fields, Segment};
use crate::edi::{EdiError, Interchange, Warning};

/// The role a NAD 3035 code names, and its rank among the codes of that role (0 is preferred): the
/// seller is SE, else SU, else II; the ship-to DP, else ST.
fn role_of(code: &[u8]) -> Option<(Role, usize)> {
    Some(match code {
        b"SE" => (Role::Seller, 0),
        b"SU" => (Role::Seller, 1),
        b"II" => (Role::Seller, 2),
        b"BY" => (Role::Buyer, 0),
        b"IV" => (Role::Invoicee, 0),
        b"PE" => (Role::Payee, 0),
        b"DP" => (Role::ShipTo, 0),
        b"ST" => (Role::ShipTo, 1),
        _ => return None,
    })
}

/// The amounts an INVOIC's total is read from, first found first (code list 5025): 77 invoice
/// amount, 86 message total, 39 invoice total amount, 9 amount due, 128 total amount, 79 line items
/// total.
const TOTAL_QUALIFIERS: [&[u8]; 6] = [b"77", b"86", b"39", b"9", b"128", b"79"];

/// An allowance's or charge's amount, in order of preference: 8 allowance or charge amount, 204
/// allowance amount, 23 charge amount, 131 total charges/allowances.
const CHARGE_QUALIFIERS: [&[u8]; 4] = [b"8", b"204", b"23", b"131"];

/// BGM 1001 (code list 1001).
fn kind_of(code: &[u8]) -> DocumentKind {
    match code {
        b"381" | b"261" | b"262" | b"396" => DocumentKind::CreditNote,
        b"383" => DocumentKind::DebitNote,
        b"384" => DocumentKind::CorrectedInvoice,
        _ => DocumentKind::Invoice,
    }
}

/// Where the segments being read are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Header,
    Line,
    /// A LIN that is a sub-line of another (C829 5495 `1`: the content of a pack, its quantity in
    /// consumer units): not an invoice line, and nothing in it is booked.
    SubLine,
    Summary,
}

/// The segment group a TAX or ALC opened, which the MOA and PCD after it belong to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    None,
    Tax,
    /// An ALC; `false` when it is not booked (a summary's, or one neither allowance nor charge).
    Charge(bool),
    /// A PAT, whose DTM 12/13, PCD and MOA 52 are its dates, percent and discount.
    Terms,
}

/// The segments that stay inside an open group; any other closes it.
fn inside_group(tag: &[u8]) -> bool {
    matches!(tag, b"MOA" | b"PCD" | b"ALI" | b"DTM" | b"QTY" | b"RNG" | b"RTE" | b"LOC" | b"RFF")
}

/// One line as it is read: its stated amount and preferred price apart until the line is complete.
struct LineRead<'a> {
    line: InvoiceLine,
    lin: Segment<'a>,
    stated: Option<(Decimal, usize)>,
    taxes: Vec<Tax>,
    /// The rank of the IMD the description was taken from ([`description_rank`]).
    description_rank: u8,
    /// The rank of the PRI the price was taken from ([`PriceKind::of_qualifier`]).
    price_rank: u8,
}

/// How well an IMD's item characteristic (7081) names the item, 0 the best: none (a general
/// description), then 050 (the title, as the book trade's EDItEUR codes use it), then any other
/// (an author, a colour, a size).
fn description_rank(characteristic: &[u8]) -> u8 {
    match characteristic {
        b"" => 0,
        b"050" => 1,
        _ => 2,
    }
}

/// The longest document number (BGM 1004, an..35) and reference (RFF 1154, an..70) read.
const MAX_DOCUMENT_NUMBER: usize = 35;
const MAX_REFERENCE: usize = 70;

/// Maps an INVOIC message (UNH..UNT inclusive).
pub(in crate::edi) fn from_invoic(
    ic: &Interchange<'_>,
    message: &[Segment<'_>],
    control_number: &str,
) -> Result<(Invoice, Vec<Warning>), EdiError> {
    let r = Reader { ic };
    let unh = &message[0];
    let (mut kind, mut number, mut issue_date, mut invoice_date) = (DocumentKind::Invoice, None, None, None);
    let (mut purchase_order, mut currency) = (None, None);
    let mut original = OriginalInvoice::default();
    let mut parties = Parties::default();
    // The summary's amounts outside any group (SG48), by qualifier, with their positions.
    let mut summary_amounts: Vec<(&[u8], Option<Decimal>, usize)> = Vec::new();
    let (mut header_taxes, mut summary_taxes) = (Vec::new(), Vec::new());
    let mut allowances_charges = Vec::new();
    // The summary's allowances and charges: most repeat the header's or the lines' as totals.
    let mut summary_charges = Vec::new();
    let mut payment_terms: Vec<PaymentTerms> = Vec::new();
    let mut lines: Vec<LineRead<'_>> = Vec::new();
    let (mut section, mut group) = (Section::Header, Group::None);
    let mut uns = false;
    let mut sources = InvoiceSources::default();
    // The position of a DTM+3 (the invoice date), used when there is no DTM+137.
    let mut invoice_date_at = None;
    for segment in &message[1..message.len() - 1] {
        let s = &Fields::new(segment);
        if !inside_group(s.tag()) {
            group = Group::None;
        }
        match s.tag() {
            b"BGM" => {
                kind = kind_of(s.component(1, 1));
                let stated = r.bounded(s, r.component(s, 2, 1)?, 2, MAX_DOCUMENT_NUMBER)?;
                number = Some(r.required(s, stated, 2, "document number")?);
                sources.number = Some(s.position);
            }
            b"DTM" if group == Group::Terms => {
                let date = r.date(s, r.component(s, 1, 2)?, 1, s.component(1, 3))?;
                if let Some(terms) = payment_terms.last_mut() {
                    match s.component(1, 1) {
                        b"12" => terms.discount_due_date = date,
                        b"13" => terms.net_due_date = date,
                        _ => {}
                    }
                }
            }
            b"DTM" if group == Group::None && matches!(s.component(1, 1), b"137" | b"3") => {
                let stated = r.required(s, r.component(s, 1, 2)?, 1, "document date")?;
                let date = r.date(s, Some(stated), 1, s.component(1, 3))?;
                if s.component(1, 1) == b"137" {
                    (issue_date, sources.issue_date) = (date, Some(s.position))
                } else {
                    (invoice_date, invoice_date_at) = (date, Some(s.position))
                }
            }
            // The invoice's order is the header's: an RFF+ON after a LIN names that line's order.
            b"RFF" if group == Group::None && section == Section::Header && s.component(1, 1) == b"ON" => {
                purchase_order = r.bounded(s, r.component(s, 1, 2)?, 1, MAX_REFERENCE)?;
                sources.purchase_order = Some(s.position).filter(|_| purchase_order.is_some());
            }
            b"RFF"
                if group == Group::None
                    && section == Section::Header
                    && original.wants(s.component(1, 1)) =>
            {
                let stated = r.bounded(s, r.component(s, 1, 2)?, 1, MAX_REFERENCE)?;
                original.take(s.component(1, 1), stated, s.position);
            }
            b"CUX" if currency.is_none() => {
                currency = r.code_in(s, 1, 2)?;
                sources.currency = Some(s.position).filter(|_| currency.is_some());
            }
            b"NAD" => {
                let Some(role) = role_of(s.element(1)) else { continue };
                let name_element = if s.element(4).is_empty() { 3 } else { 4 };
                // The name's components joined with spaces (most names have one).
                let mut name: Option<String> = None;
                for c in 1..=5 {
                    if let Some(part) = r.component(s, name_element, c)? {
                        match &mut name {
                            Some(name) => {
                                name.push(' ');
                                name.push_str(&part);
                            }
                            None => name = Some(part),
                        }
                    }
                }
                let party = Party { name, qualifier: r.code_in(s, 2, 3)?, id: r.component(s, 2, 1)? };
                parties.offer(role, party, s.position);
            }
            b"LIN" if s.component(4, 1) == b"1" => section = Section::SubLine,
            b"LIN" => {
                section = Section::Line;
                let product_ids: Vec<ProductId> = r
                    .shared_in(s, 3, 1)?
                    .map(|id| Ok::<_, EdiError>(ProductId { qualifier: r.code_in(s, 3, 2)?, id }))
                    .transpose()?
                    .into_iter()
                    .collect();
                lines.push(LineRead {
                    line: InvoiceLine {
                        number: u32::try_from(lines.len() + 1).unwrap_or(u32::MAX),
                        quantity: Decimal::ZERO,
                        unit: None,
                        unit_price: None,
                        price_kind: None,
                        price_basis: None,
                        product_id: product_ids.first().map(|p| p.id.clone()),
                        product_ids,
                        description: None,
                        amount: Decimal::ZERO,
                        allowances_charges: Vec::new(),
                        sources: LineSources { line: Some(s.position), ..LineSources::default() },
                    },
                    lin: *segment,
                    stated: None,
                    taxes: Vec::new(),
                    description_rank: u8::MAX,
                    price_rank: u8::MAX,
                });
            }
            b"PIA" if section == Section::Line => {
                if let Some(read) = lines.last_mut() {
                    for n in 2..=6 {
                        if let Some(id) = r.shared_in(s, n, 1)? {
                            let qualifier = r.code_in(s, n, 2)?;
                            read.line.product_id.get_or_insert_with(|| id.clone());
                            read.line.product_ids.push(ProductId { qualifier, id });
                        }
                    }
                }
            }
            b"IMD" if section == Section::Line => {
                let rank = description_rank(s.element(2));
                if let Some(read) = lines.last_mut().filter(|read| rank < read.description_rank)
                    && let Some(description) = r.component(s, 3, 4)?
                {
                    (read.line.description, read.description_rank) = (Some(description), rank);
                    read.line.sources.description = Some(s.position);
                }
            }
            b"QTY" if section == Section::Line && group == Group::None && s.component(1, 1) == b"47" => {
                if let Some(read) = lines.last_mut() {
                    read.line.quantity = r.component_decimal(s, 1, 2)?.unwrap_or_default();
                    read.line.unit = r.code_in(s, 1, 3)?;
                    read.line.sources.quantity = Some(s.position);
                }
            }
            b"PRI" if section == Section::Line => {
                let Some((price_kind, rank)) = PriceKind::of_qualifier(s.component(1, 1)) else { continue };
                if let Some(read) = lines.last_mut().filter(|read| rank < read.price_rank) {
                    read.line.unit_price = r.component_decimal(s, 1, 2)?;
                    (read.line.price_kind, read.price_rank) = (Some(price_kind), rank);
                    read.line.price_basis = r.component_decimal(s, 1, 5)?;
                    read.line.sources.unit_price = Some(s.position);
                }
            }
            b"TAX" if s.component(1, 1) == b"7" => {
                group = Group::Tax;
                let tax = Tax {
                    tax_type: r.code_in(s, 2, 1)?,
                    category: r.code_at(s, 6)?,
                    rate: r.component_decimal(s, 5, 4)?,
                    segment: Some(s.position),
                    ..Tax::default()
                };
                match (section, lines.last_mut()) {
                    (Section::Line, Some(read)) => read.taxes.push(tax),
                    (Section::Summary, _) => summary_taxes.push(tax),
                    (Section::Header, _) => header_taxes.push(tax),
                    _ => {}
                }
            }
            b"ALC" => {
                let indicator = AllowanceOrCharge::of_code(s.element(1));
                let booked = section != Section::SubLine;
                group = Group::Charge(indicator.is_some() && booked);
                let Some(indicator) = indicator.filter(|_| booked) else { continue };
                let code = r.component(s, 5, 1)?.or(r.component(s, 2, 2)?);
                let charge = AllowanceCharge {
                    kind: indicator,
                    code,
                    amount: None,
                    percentage: None,
                    segment: Some(s.position),
                };
                match (section, lines.last_mut()) {
                    (Section::Line, Some(read)) => read.line.allowances_charges.push(charge),
                    (Section::Summary, _) => summary_charges.push(charge),
                    _ => allowances_charges.push(charge),
                }
            }
            b"PAT" => {
                group = Group::Terms;
                let days = match s.component(3, 3) {
                    b"" | b"D" => r.count(s, s.component(3, 4), 3)?,
                    _ => None,
                };
                let discount = s.element(1) == b"22";
                payment_terms.push(PaymentTerms {
                    terms_type: r.element(s, 1)?,
                    basis: r.component(s, 3, 1)?,
                    discount_days: days.filter(|_| discount),
                    net_days: days.filter(|_| !discount),
                    segment: Some(s.position),
                    ..PaymentTerms::default()
                });
            }
            b"PCD" if group == Group::Terms => {
                if let Some(terms) = payment_terms.last_mut() {
                    terms.discount_percent = r.component_decimal(s, 1, 2)?;
                }
            }
            b"PCD" if group == Group::Charge(true) => {
                let percentage = r.component_decimal(s, 1, 2)?;
                let held = (&mut allowances_charges[..], &mut summary_charges[..]);
                if let Some(charge) = open_charge(section, &mut lines, held) {
                    charge.percentage = charge.percentage.or(percentage);
                }
            }
            b"MOA" => {
                let qualifier = s.component(1, 1);
                let amount = r.component_decimal(s, 1, 2)?;
                if currency.is_none() {
                    currency = r.code_in(s, 1, 3)?;
                    sources.currency = Some(s.position).filter(|_| currency.is_some());
                }
                match group {
                    Group::Tax => {
                        let tax = match section {
                            Section::Line => lines.last_mut().and_then(|read| read.taxes.last_mut()),
                            Section::Summary => summary_taxes.last_mut(),
                            Section::Header => header_taxes.last_mut(),
                            Section::SubLine => None,
                        };
                        match (qualifier, tax) {
                            // The message's total tax, stated inside the summary's tax group.
                            (b"176", _) if section == Section::Summary => {
                                summary_amounts.push((qualifier, amount, s.position));
                            }
                            (b"124" | b"150", Some(tax)) => tax.amount = tax.amount.or(amount),
                            (b"125", Some(tax)) => tax.taxable_amount = tax.taxable_amount.or(amount),
                            _ => {}
                        }
                    }
                    Group::Charge(booked) => {
                        let rank = CHARGE_QUALIFIERS.iter().position(|q| *q == qualifier);
                        if let (true, Some(_)) = (booked, rank)
                            && let Some(charge) = open_charge(
                                section,
                                &mut lines,
                                (&mut allowances_charges[..], &mut summary_charges[..]),
                            )
                        {
                            charge.amount = charge.amount.or(amount);
                        }
                    }
                    Group::Terms => {
                        if let (b"52", Some(terms)) = (qualifier, payment_terms.last_mut()) {
                            terms.discount_amount = amount;
                        }
                    }
                    Group::None => match section {
                        Section::Line if qualifier == b"203" => {
                            if let Some(read) = lines.last_mut() {
                                read.stated = amount.map(|a| (a, s.position));
                            }
                        }
                        Section::Summary => summary_amounts.push((qualifier, amount, s.position)),
                        _ => {}
                    },
                }
            }
            b"UNS" => {
                (section, uns) = (Section::Summary, true);
            }
            _ => {}
        }
    }
    let mut warnings = Vec::new();
    let mut warn = |segment_position: Option<usize>, message: String| {
        warnings.push(Warning {
            document: control_number.to_owned(),
            segment_position,
            message,
            mismatch: true,
        });
    };
    let mut booked_lines = Vec::with_capacity(lines.len());
    let mut line_taxes = Vec::new();
    for LineRead { mut line, lin, stated, taxes, .. } in lines {
        let price = line.unit_price.unwrap_or_default();
        let computed = line_amount(&lin, line.quantity, price, line.price_basis)?;
        match stated {
            Some((amount, position)) => {
                (line.amount, line.sources.amount) = (amount, Some(position));
                if let Some(message) = reconcile::line_amount(&line, computed) {
                    warn(Some(position), message);
                }
            }
            None => {
                line.amount = if line.price_kind == Some(PriceKind::Gross) {
                    reconcile::net_of_charges(&line, computed)
                } else {
                    computed
                };
            }
        }
        line_taxes.extend(taxes);
        booked_lines.push(line);
    }
    for charge in summary_charges {
        if !repeats(&charge, &allowances_charges, &booked_lines) {
            allowances_charges.push(charge);
        }
    }
    let stated = |qualifier: &[u8]| {
        summary_amounts.iter().find(|(q, ..)| *q == qualifier).and_then(|(_, a, p)| Some(((*a)?, *p)))
    };
    let Some((total_qualifier, (total, total_position))) =
        TOTAL_QUALIFIERS.iter().find_map(|q| Some((*q, stated(q)?)))
    else {
        return Err(no_total(unh, uns, &summary_amounts));
    };
    // The summary's tax groups; else the lines'; else the header's: one entry per type, category
    // and rate (a rate's amount and taxable amount may stand in groups of their own).
    let mut taxes = merged(
        [summary_taxes, line_taxes, header_taxes].into_iter().find(|t| !t.is_empty()).unwrap_or_default(),
    );
    let (moa_176, moa_124, moa_125) = (stated(b"176"), stated(b"124"), stated(b"125"));
    if let [tax] = taxes.as_mut_slice() {
        tax.amount = tax.amount.or(moa_124.or(moa_176).map(|(a, _)| a));
        tax.taxable_amount = tax.taxable_amount.or(moa_125.map(|(a, _)| a));
    }
    let breakdown = tax_sum(&taxes);
    let stated_tax_total = moa_176.or(moa_124);
    let tax_total = stated_tax_total.map(|(a, _)| a).or(breakdown);
    (sources.total, sources.tax_total) = (Some(total_position), stated_tax_total.map(|(_, p)| p));
    if issue_date.is_none() {
        sources.issue_date = invoice_date_at;
    }
    let stated_tax =
        moa_176.map(|(a, p)| ("MOA 176 total tax", a, p)).or(moa_124.map(|(a, p)| ("MOA 124 tax", a, p)));
    if let (Some((what, stated_tax, position)), Some(breakdown)) = (stated_tax, breakdown)
        && taxes.len() > 1
        && let Some(warning) = reconcile::stated(
            what,
            (stated_tax, position),
            "the tax groups' MOA 124",
            Some(breakdown),
            control_number,
        )
    {
        warnings.push(warning);
    }
    let ([seller, buyer, invoicee, payee, ship_to], found_at) = parties.book();
    [sources.seller, sources.buyer, sources.invoicee, sources.payee, sources.ship_to] = found_at;
    let (original_invoice, named_at) = original.of(kind);
    sources.original_invoice = named_at;
    let invoice = Invoice {
        kind,
        number: number.ok_or_else(|| missing(unh, "the INVOIC has no BGM segment (document number)"))?,
        issue_date: issue_date.or(invoice_date).ok_or_else(|| {
            missing(unh, "the INVOIC has no DTM+137 (document date) or DTM+3 (invoice date) segment")
        })?,
        purchase_order,
        original_invoice,
        currency,
        total,
        tax_total,
        tax_rate: single_rate(&taxes),
        taxes,
        seller,
        buyer,
        invoicee,
        payee,
        ship_to,
        lines: booked_lines,
        allowances_charges,
        payment_terms,
        stated_totals: summary_amounts
            .iter()
            .filter_map(|(code, amount, at)| {
                Some(StatedTotal { code: code_of(code), amount: (*amount)?, segment: Some(*at) })
            })
            .collect(),
        sources,
    };
    if invoice.currency.is_none() {
        warnings.push(Warning {
            mismatch: false,
            document: control_number.to_owned(),
            segment_position: Some(unh.position),
            message:
                "the INVOIC names no currency (no CUX, no MOA with one): its currency is booked as unknown"
                    .to_owned(),
        });
    }
    let total_qualifier = String::from_utf8_lossy(total_qualifier);
    if let Some(lines_stated) = stated(b"79").filter(|_| total_qualifier != "79" && !invoice.lines.is_empty())
    {
        let computed = reconcile::lines_total(&invoice, false);
        let parts = "the sum of the lines";
        warnings.extend(reconcile::stated(
            "MOA 79 line total",
            lines_stated,
            parts,
            computed,
            control_number,
        ));
    }
    // A document without lines (a summary of others) states its net amount instead.
    let net = (invoice.lines.is_empty()).then(|| stated(b"79").or(moa_125).map(|(a, _)| a)).flatten();
    warnings.extend(reconcile::invoic_total(&invoice, &total_qualifier, total_position, control_number, net));
    Ok((invoice, warnings))
}

/// The allowance or charge the open ALC group added (the header's or the current line's).
fn open_charge<'l>(
    section: Section,
    lines: &'l mut [LineRead<'_>],
    (header, summary): (&'l mut [AllowanceCharge], &'l mut [AllowanceCharge]),
) -> Option<&'l mut AllowanceCharge> {
    match section {
        Section::Line => lines.last_mut()?.line.allowances_charges.last_mut(),
        Section::Header => header.last_mut(),
        Section::Summary => summary.last_mut(),
        Section::SubLine => None,
    }
}

/// Whether a summary allowance or charge repeats the header's or the lines' (a total of them): any
/// of the same kind, and of the same code when it states one. Only one stated nowhere else (a
/// freight charge stated only in the summary) is booked.
fn repeats(summary: &AllowanceCharge, header: &[AllowanceCharge], lines: &[InvoiceLine]) -> bool {
    let same = |booked: &AllowanceCharge| {
        booked.kind == summary.kind && (summary.code.is_none() || booked.code == summary.code)
    };
    header.iter().any(same) || lines.iter().flat_map(|line| &line.allowances_charges).any(same)
}

/// The INVOIC has no total: without a UNS, that is what is missing; with one, the error names the
/// amounts the summary has.
fn no_total(unh: &Segment<'_>, uns: bool, summary: &[(&[u8], Option<Decimal>, usize)]) -> EdiError {
    if !uns {
        return missing(
            unh,
            "the INVOIC has no UNS segment: its summary (the invoice total, MOA 77, 86, 39, 9, 128 or 79) is missing",
        );
    }
    let found: Vec<String> =
        summary.iter().map(|(q, ..)| format!("MOA {}", String::from_utf8_lossy(q))).collect();
    let found = if found.is_empty() { "no MOA".to_owned() } else { found.join(", ") };
    missing(
        unh,
        &format!("the INVOIC has no invoice total (MOA 77, 86, 39, 9, 128 or 79 after UNS); it has {found}"),
    )
}
