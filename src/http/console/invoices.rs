//! `/console/invoices/{id}`: one booked invoice as an accountant checks it: its header, parties, tax
//! breakdown, allowances and charges, payment terms, the totals the document states, its lines, the
//! warnings its interchange gave about it, where it stands with the accounting API, and where else
//! it arrived (the invoice it duplicates, or its copies; the invoice it replaces). Every value
//! read from the interchange names the segment it came from (its position, as a 422 numbers them);
//! a value the service computed names none.

use axum::extract::{Query, State};
use axum::response::Response;
use maud::{Markup, html};

use super::session::Session;
use super::{Failure, Notice, PageId, Tab, page, when};
use crate::edi::invoice::{AllowanceCharge, Party};
use crate::http::ApiContext;
use crate::http::problem::ApiError;

pub async fn detail(
    State(ctx): State<ApiContext>,
    session: Session,
    Query(notice): Query<Notice>,
    PageId(id): PageId,
) -> Result<Response, Failure> {
    let (resource, findings, copies) =
        tokio::try_join!(ctx.store.invoice(id), ctx.store.invoice_findings(id), ctx.store.copies_of(id))?;
    let resource = resource.ok_or(ApiError::NotFound)?;
    let invoice = &resource.invoice;
    let sources = &invoice.sources;
    let parties = [
        ("Seller", &invoice.seller, sources.seller),
        ("Buyer", &invoice.buyer, sources.buyer),
        ("Invoicee", &invoice.invoicee, sources.invoicee),
        ("Payee", &invoice.payee, sources.payee),
        ("Ship to", &invoice.ship_to, sources.ship_to),
    ];
    let currency = invoice.currency.as_deref().unwrap_or("(currency unknown)");
    let content = html! {
        h1 { (invoice.kind.as_str().replace('_', " ")) " " span.mono { (invoice.number) } }
        p {
            a href={ "/console/interchanges/" (resource.interchange_id) } { "Its interchange" } " · "
            a href={ "/console/interchanges/" (resource.interchange_id) "/payload" } download { "Download the payload" }
        }
        @if let Some(earlier) = &resource.duplicate_of {
            p #duplicate-of.warning {
                "A duplicate, not booked: the same invoice was booked as "
                a.mono href={ "/console/invoices/" (earlier.invoice_id) } { (earlier.invoice_id) }
                " (" a href={ "/console/interchanges/" (earlier.interchange_id) } { "its interchange" } ", received "
                (when(earlier.received_at)) ")."
            }
        }
        @if let Some(replaced) = resource.replaces {
            p #replaces { "Replaces " a.mono href={ "/console/invoices/" (replaced) } { (replaced) } "." }
        }
        @if let Some(number) = &invoice.original_invoice {
            p #original-invoice {
                "Names invoice " span.mono { (number) } " as its original"
                @if let Some(original) = resource.original_invoice_id {
                    ": booked as " a.mono href={ "/console/invoices/" (original) } { (original) } "."
                } @else { " (not booked from this seller when it arrived)." }
            }
        }
        @if !copies.is_empty() {
            h2 { "Also arrived in" }
            ul #copies { @for (copy, interchange, received_at) in &copies {
                li {
                    a.mono href={ "/console/invoices/" (copy) } { (copy) } ", interchange "
                    a.mono href={ "/console/interchanges/" (interchange) } { (interchange) } ", received " (when(*received_at))
                }
            } }
        }
        table #header {
            thead { tr { th { "Field" } th { "Value" } th.num { "Segment" } } }
            tbody {
                (row("Number", &invoice.number, sources.number))
                (row("Issue date", &invoice.issue_date.to_string(), sources.issue_date))
                (row("Purchase order", invoice.purchase_order.as_deref().unwrap_or("—"), sources.purchase_order))
                (row("Currency", currency, sources.currency))
                (row("Total", &invoice.total.to_string(), sources.total))
                (row("Tax total", &invoice.tax_total.map(|t| t.to_string()).unwrap_or("—".into()), sources.tax_total))
                (row("Tax rate (%)", &invoice.tax_rate.map(|t| t.to_string()).unwrap_or("—".into()), None))
                @if let Some(found) = &findings {
                    (row("Document", &found.document, usize::try_from(found.position).ok()))
                }
                @if let Some(state) = &resource.accounting {
                    tr { th { "Accounting" } td class={ "status-" (state.status.as_str()) } {
                        (state.status.as_str()) @if let Some(error) = &state.last_error { " — " (error) }
                    } td {} }
                }
            }
        }
        @if let Some(found) = findings.as_ref().filter(|found| !found.warnings.is_empty()) {
            h2 { "Warnings" }
            ul #warnings { @for warning in &found.warnings {
                li { (warning.message) @if let Some(at) = warning.segment_position { " (segment " (at) ")" } }
            } }
        }
        h2 { "Parties" }
        table #parties {
            thead { tr { th { "Role" } th { "Name" } th { "Qualifier" } th { "Id" } th.num { "Segment" } } }
            tbody { @for (role, party, at) in parties { @if let Some(party) = party { (party_row(role, party, at)) } } }
        }
        h2 { "Taxes" }
        table #taxes {
            thead { tr { th { "Type" } th { "Category" } th.num { "Rate (%)" } th.num { "Taxable" } th.num { "Amount" } th.num { "Segment" } } }
            tbody { @for tax in &invoice.taxes { tr {
                td { (text(tax.tax_type.as_deref())) } td { (text(tax.category.as_deref())) }
                td.num { (number(tax.rate)) } td.num { (number(tax.taxable_amount)) } td.num { (number(tax.amount)) }
                td.num { (segment(tax.segment)) }
            } } }
        }
        @if invoice.taxes.is_empty() { p.muted { "The document states no tax." } }
        h2 { "Allowances and charges" }
        (allowances(&invoice.allowances_charges, "allowances"))
        h2 { "Payment terms" }
        table #terms {
            thead { tr { th { "Type" } th { "Basis" } th.num { "Discount %" } th { "Discount due" } th.num { "Discount days" } th { "Net due" } th.num { "Net days" } th.num { "Discount amount" } th { "Description" } th.num { "Segment" } } }
            tbody { @for terms in &invoice.payment_terms { tr {
                td { (text(terms.terms_type.as_deref())) } td { (text(terms.basis.as_deref())) }
                td.num { (number(terms.discount_percent)) }
                td { (text(terms.discount_due_date.map(|d| d.to_string()).as_deref())) }
                td.num { (text(terms.discount_days.map(|d| d.to_string()).as_deref())) }
                td { (text(terms.net_due_date.map(|d| d.to_string()).as_deref())) }
                td.num { (text(terms.net_days.map(|d| d.to_string()).as_deref())) }
                td.num { (number(terms.discount_amount)) } td { (text(terms.description.as_deref())) }
                td.num { (segment(terms.segment)) }
            } } }
        }
        h2 { "Totals as stated" }
        table #stated {
            thead { tr { th { "Code" } th.num { "Amount" } th.num { "Segment" } } }
            tbody { @for stated in &invoice.stated_totals { tr {
                td.mono { (stated.code.as_ref()) } td.num { (stated.amount) } td.num { (segment(stated.segment)) }
            } } }
        }
        h2 { "Lines" }
        table #lines {
            thead { tr { th.num { "#" } th { "Product ids" } th { "Description" } th.num { "Quantity" } th { "Unit" } th.num { "Unit price" } th.num { "Amount" } th { "Allowances and charges" } th { "Segments" } } }
            tbody { @for line in &invoice.lines { tr {
                td.num { (line.number) }
                td.mono { @for product in &line.product_ids { (text(product.qualifier.as_deref())) ":" (product.id.as_ref()) " " } }
                td { (text(line.description.as_deref())) }
                td.num { (line.quantity) }
                td { (text(line.unit.as_deref())) }
                td.num {
                    (number(line.unit_price))
                    @if let Some(kind) = line.price_kind { " " (kind.as_str()) }
                    @if let Some(basis) = line.price_basis { " per " (basis) }
                }
                td.num { (line.amount) }
                td { (allowances(&line.allowances_charges, "")) }
                td.mono {
                    "line " (segment(line.sources.line)) ", quantity " (segment(line.sources.quantity))
                    ", price " (segment(line.sources.unit_price)) ", amount " (segment(line.sources.amount))
                    ", description " (segment(line.sources.description))
                }
            } } }
        }
    };
    Ok(page(&format!("Invoice {}", invoice.number), Tab::Interchanges, &session, &notice, content))
}

fn row(field: &str, value: &str, at: Option<usize>) -> Markup {
    html! { tr { th { (field) } td.mono { (value) } td.num { (segment(at)) } } }
}

fn party_row(role: &str, party: &Party, at: Option<usize>) -> Markup {
    html! { tr {
        th { (role) } td { (text(party.name.as_deref())) } td.mono { (text(party.qualifier.as_deref())) }
        td.mono { (text(party.id.as_deref())) } td.num { (segment(at)) }
    } }
}

fn allowances(entries: &[AllowanceCharge], id: &str) -> Markup {
    if entries.is_empty() {
        return html! { p.muted { "None." } };
    }
    html! {
        table id=[(!id.is_empty()).then_some(id)] {
            thead { tr { th { "Kind" } th { "Code" } th.num { "Amount" } th.num { "Percent" } th.num { "Segment" } } }
            tbody { @for entry in entries { tr {
                td { (format!("{:?}", entry.kind).to_lowercase()) } td.mono { (text(entry.code.as_deref())) }
                td.num { (number(entry.amount)) } td.num { (number(entry.percentage)) } td.num { (segment(entry.segment)) }
            } } }
        }
    }
}

fn text(value: Option<&str>) -> &str {
    value.unwrap_or("—")
}

fn number(value: Option<rust_decimal::Decimal>) -> String {
    value.map_or_else(|| "—".to_owned(), |value| value.to_string())
}

/// A segment position; `—` for a value the document does not state or the service worked out.
fn segment(at: Option<usize>) -> String {
    at.map_or_else(|| "—".to_owned(), |at| at.to_string())
}
