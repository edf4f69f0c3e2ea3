//! Invoices: the rows a delivery books (built before its transaction) and reading them back with
//! their lines and accounting state, one statement per page.

use std::borrow::Cow;
use std::collections::HashMap;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::filter::Conditions;
use super::tables::{InvoiceRow, LineRow};
use super::{Store, StoreError};
use crate::edi::Warning;
use crate::edi::invoice::{DocumentKind, Invoice, InvoiceLine, Party, PriceKind};
use crate::inbox::outbox::{AccountingState, AccountingStatus};
use crate::inbox::resource::{InvoiceResource, Page};
use crate::inbox::{BusinessKey, Delivery, DuplicateOf, Earlier, StoredDocument};

/// Filters of `GET /v1/invoices`.
#[derive(Debug, Default)]
pub struct InvoiceFilter {
    pub interchange_id: Option<Uuid>,
    pub number: Option<String>,
    pub accounting_status: Option<AccountingStatus>,
    /// Only the invoices of this export.
    pub export_id: Option<Uuid>,
    pub cursor: Option<Uuid>,
    pub limit: u32,
}

/// The document an invoice was booked from, and what its interchange's answer warned about it.
pub struct InvoiceFindings {
    /// ST02 / UNH 0062.
    pub document: String,
    /// The position of its ST / UNH segment.
    pub position: i32,
    pub warnings: Vec<Warning>,
}

impl Store {
    /// [`InvoiceFindings`] of an invoice: read from its document's row and its interchange's stored
    /// answer, whose warnings stay there even when its lists are read from rows.
    pub async fn invoice_findings(&self, invoice_id: Uuid) -> Result<Option<InvoiceFindings>, StoreError> {
        const SQL: &str = "SELECT d.control_number, d.position, x.response_body FROM invoices i \
            JOIN documents d ON d.id = i.document_id JOIN inbox x ON x.id = d.inbox_id WHERE i.id = $1";
        #[derive(serde::Deserialize)]
        struct Answer {
            #[serde(default)]
            warnings: Vec<Warning>,
        }
        let row: Option<(String, i32, String)> =
            on_pool!(self, pool => sqlx::query_as(SQL).bind(invoice_id).fetch_optional(pool).await?);
        let Some((document, position, answer)) = row else { return Ok(None) };
        let answer: Answer = serde_json::from_str(&answer)
            .map_err(|e| StoreError::Corrupt(format!("a stored answer: {e}")))?;
        let warnings = answer.warnings.into_iter().filter(|warning| warning.document == document).collect();
        Ok(Some(InvoiceFindings { document, position, warnings }))
    }

    /// The invoices booked (not duplicates) under each of `keys`, every revision, each with its
    /// interchange and when that was received: what a delivery whose booking found a key taken is
    /// checked against (only then: it is rare). The keys are looked up 500 at a time; the invoices
    /// are read a page of their interchange at a time where many come from one (a large
    /// interchange sent again), one by one otherwise.
    pub async fn booked_invoices(
        &self,
        keys: &[BusinessKey],
    ) -> Result<HashMap<BusinessKey, Vec<Earlier>>, StoreError> {
        /// Invoices of one interchange from which its pages are read rather than each invoice.
        const PAGED: usize = 16;
        let mut found: Vec<BookedRow> = Vec::new();
        for chunk in keys.chunks(super::rows::CHUNK_ROWS) {
            let rows: Vec<BookedRow> = on_pool!(self, pool => {
                let mut query = sqlx::QueryBuilder::new(
                    "SELECT i.id, i.business_key, i.revision, x.id AS interchange_id, x.received_at FROM invoices i \
                     JOIN inbox x ON x.id = i.inbox_id WHERE i.duplicate_of IS NULL AND i.business_key IN (",
                );
                let mut listed = query.separated(", ");
                for key in chunk {
                    listed.push_bind(key.as_str());
                }
                query.push(")");
                query.build_query_as().fetch_all(pool).await?
            });
            found.extend(rows);
        }
        let mut by_interchange: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for row in &found {
            by_interchange.entry(row.interchange_id).or_default().push(row.id);
        }
        let mut invoices: HashMap<Uuid, std::sync::Arc<Invoice>> = HashMap::new();
        for (interchange_id, ids) in by_interchange {
            if ids.len() < PAGED {
                for id in ids {
                    invoices.extend(self.invoice(id).await?.map(|resource| (id, resource.invoice)));
                }
                continue;
            }
            let mut filter = InvoiceFilter {
                interchange_id: Some(interchange_id),
                limit: 500,
                ..InvoiceFilter::default()
            };
            loop {
                let page = self.load_invoices(&filter, None).await?;
                filter.cursor = page.last().map(|resource| resource.id);
                let full = page.len() == 500;
                invoices.extend(page.into_iter().map(|resource| (resource.id, resource.invoice)));
                if !full {
                    break;
                }
            }
        }
        let mut booked: HashMap<BusinessKey, Vec<Earlier>> = HashMap::new();
        for row in found {
            let Some(invoice) = invoices.get(&row.id) else { continue };
            booked.entry(BusinessKey::stored(row.business_key)).or_default().push(Earlier {
                invoice_id: row.id,
                interchange_id: row.interchange_id,
                received_at: row.received_at,
                revision: row.revision,
                invoice: std::sync::Arc::clone(invoice),
            });
        }
        Ok(booked)
    }

    /// The copies of invoice `id` that arrived again (its duplicates), oldest first: each copy's
    /// id, its interchange and when that was received.
    pub async fn copies_of(&self, id: Uuid) -> Result<Vec<(Uuid, Uuid, DateTime<Utc>)>, StoreError> {
        const SQL: &str = "SELECT i.id, x.id, x.received_at FROM invoices i JOIN inbox x ON x.id = i.inbox_id \
            WHERE i.duplicate_of = $1 ORDER BY i.id";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(id).fetch_all(pool).await?))
    }

    pub async fn invoice(&self, id: Uuid) -> Result<Option<InvoiceResource>, StoreError> {
        let filter = InvoiceFilter { cursor: None, limit: 1, ..InvoiceFilter::default() };
        let invoices = self.load_invoices(&filter, Some(id)).await?;
        Ok(invoices.into_iter().next())
    }

    /// Newest first, keyset-paginated on the time-ordered id; each invoice with its lines.
    pub async fn invoices(&self, filter: &InvoiceFilter) -> Result<Page<InvoiceResource>, StoreError> {
        let items = self.load_invoices(filter, None).await?;
        Ok(Page::new(items, filter.limit, |item| item.id))
    }

    /// The requested page of invoices with their lines, read by one statement (one snapshot: an
    /// invoice committing meanwhile cannot shift the lines of another).
    pub(super) async fn load_invoices(
        &self,
        filter: &InvoiceFilter,
        id: Option<Uuid>,
    ) -> Result<Vec<InvoiceResource>, StoreError> {
        const SELECT: &str = "SELECT i.id, i.inbox_id, i.number, CAST(i.issue_date AS TEXT) AS issue_date, \
            i.purchase_order, i.currency, CAST(i.total AS TEXT) AS total, CAST(i.tax_total AS TEXT) AS tax_total, \
            CAST(i.tax_rate AS TEXT) AS tax_rate, i.seller_name, i.seller_qualifier, i.seller_id, i.buyer_name, \
            i.buyer_qualifier, i.buyer_id, CAST(i.allowances_charges AS TEXT) AS allowances_charges, \
            i.kind, CAST(i.taxes AS TEXT) AS taxes, CAST(i.payment_terms AS TEXT) AS payment_terms, \
            CAST(i.stated_totals AS TEXT) AS stated_totals, i.invoicee_name, i.invoicee_qualifier, i.invoicee_id, \
            i.payee_name, i.payee_qualifier, i.payee_id, i.ship_to_name, i.ship_to_qualifier, i.ship_to_id, \
            CAST(i.sources AS TEXT) AS sources, i.duplicate_of, i.replaces, i.original_invoice, \
            i.original_invoice_id, \
            e.inbox_id AS duplicate_interchange_id, ex.received_at AS duplicate_received_at, \
            l.line_number, CAST(l.quantity AS TEXT) AS quantity, l.unit, CAST(l.unit_price AS TEXT) AS unit_price, \
            l.product_id, l.description, CAST(l.amount AS TEXT) AS amount, l.price_kind, \
            CAST(l.price_basis AS TEXT) AS price_basis, CAST(l.product_ids AS TEXT) AS product_ids, \
            CAST(l.allowances_charges AS TEXT) AS line_allowances_charges, \
            CAST(l.sources AS TEXT) AS line_sources, \
            o.status AS accounting_status, o.reference AS accounting_reference, \
            o.attempts AS accounting_attempts, o.last_error AS accounting_last_error \
            FROM (SELECT * FROM invoices";
        const JOINED: &str = ") AS i \
            LEFT JOIN invoice_lines l ON l.invoice_id = i.id \
            LEFT JOIN outbox o ON o.invoice_id = i.id \
            LEFT JOIN invoices e ON e.id = i.duplicate_of LEFT JOIN inbox ex ON ex.id = e.inbox_id \
            ORDER BY i.id DESC, l.line_number";
        let conditions = Conditions::default()
            .and("id = ", id)
            .and("inbox_id = ", filter.interchange_id)
            .and("number = ", filter.number.as_deref())
            .and("id < ", filter.cursor)
            .and_within(
                "id IN (SELECT invoice_id FROM outbox WHERE status = ",
                filter.accounting_status.map(AccountingStatus::as_str),
                ")",
            )
            .and_within(
                "id IN (SELECT invoice_id FROM exported_invoices WHERE export_id = ",
                filter.export_id,
                ")",
            );
        let rows: Vec<InvoiceLineRow> = on_pool!(self, pool => conditions
            .list(&[SELECT], "id DESC", Some(filter.limit)).push(JOINED).build_query_as().fetch_all(pool).await?);
        let mut invoices: Vec<InvoiceResource> = Vec::new();
        for row in rows {
            let line = row.line.into_line()?;
            match invoices.last_mut() {
                Some(last) if last.id == row.invoice.id => {
                    std::sync::Arc::make_mut(&mut last.invoice).lines.extend(line)
                }
                _ => {
                    let mut invoice = row.invoice.into_resource(line.into_iter().collect())?;
                    invoice.accounting = row.accounting.into_state()?;
                    invoices.push(invoice);
                }
            }
        }
        Ok(invoices)
    }
}

/// An invoice booked under a business key, as the lookup of keys reads it.
#[derive(sqlx::FromRow)]
struct BookedRow {
    id: Uuid,
    business_key: String,
    revision: i32,
    interchange_id: Uuid,
    received_at: DateTime<Utc>,
}

/// An `invoices` row as read: dates and decimals as text.
#[derive(sqlx::FromRow)]
pub(super) struct StoredInvoice {
    pub(super) id: Uuid,
    pub(super) inbox_id: Uuid,
    pub(super) number: String,
    pub(super) issue_date: String,
    pub(super) purchase_order: Option<String>,
    pub(super) currency: Option<String>,
    pub(super) total: String,
    pub(super) tax_total: Option<String>,
    pub(super) tax_rate: Option<String>,
    pub(super) seller_name: Option<String>,
    pub(super) seller_qualifier: Option<String>,
    pub(super) seller_id: Option<String>,
    pub(super) buyer_name: Option<String>,
    pub(super) buyer_qualifier: Option<String>,
    pub(super) buyer_id: Option<String>,
    pub(super) allowances_charges: String,
    #[sqlx(try_from = "String")]
    pub(super) kind: DocumentKind,
    pub(super) taxes: String,
    pub(super) payment_terms: String,
    pub(super) stated_totals: String,
    pub(super) invoicee_name: Option<String>,
    pub(super) invoicee_qualifier: Option<String>,
    pub(super) invoicee_id: Option<String>,
    pub(super) payee_name: Option<String>,
    pub(super) payee_qualifier: Option<String>,
    pub(super) payee_id: Option<String>,
    pub(super) ship_to_name: Option<String>,
    pub(super) ship_to_qualifier: Option<String>,
    pub(super) ship_to_id: Option<String>,
    pub(super) sources: String,
    pub(super) duplicate_of: Option<Uuid>,
    pub(super) replaces: Option<Uuid>,
    pub(super) original_invoice: Option<String>,
    pub(super) original_invoice_id: Option<Uuid>,
    /// The interchange of the invoice it duplicates, and when that was received.
    pub(super) duplicate_interchange_id: Option<Uuid>,
    pub(super) duplicate_received_at: Option<DateTime<Utc>>,
}

fn decimal(text: &str) -> Result<Decimal, StoreError> {
    Decimal::from_str(text).map_err(|e| StoreError::Corrupt(format!("decimal {text:?}: {e}")))
}

/// A JSON column's value (`what` names it in the error).
fn json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// The JSON a column keeps of `value`.
fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".into())
}

fn party(name: Option<String>, qualifier: Option<String>, id: Option<String>) -> Option<Party> {
    let qualifier = qualifier.map(Cow::Owned);
    (name.is_some() || qualifier.is_some() || id.is_some()).then_some(Party { name, qualifier, id })
}

impl StoredInvoice {
    fn into_resource(self, lines: Vec<InvoiceLine>) -> Result<InvoiceResource, StoreError> {
        Ok(InvoiceResource {
            id: self.id,
            interchange_id: self.inbox_id,
            duplicate_of: self
                .duplicate_of
                .zip(self.duplicate_interchange_id)
                .zip(self.duplicate_received_at)
                .map(|((invoice_id, interchange_id), received_at)| DuplicateOf {
                    invoice_id,
                    interchange_id,
                    received_at,
                }),
            replaces: self.replaces,
            original_invoice_id: self.original_invoice_id,
            accounting: None,
            invoice: std::sync::Arc::new(Invoice {
                kind: self.kind,
                number: self.number,
                issue_date: NaiveDate::from_str(&self.issue_date)
                    .map_err(|e| StoreError::Corrupt(format!("issue_date: {e}")))?,
                purchase_order: self.purchase_order,
                original_invoice: self.original_invoice,
                currency: self.currency.map(Cow::Owned),
                total: decimal(&self.total)?,
                tax_total: self.tax_total.as_deref().map(decimal).transpose()?,
                tax_rate: self.tax_rate.as_deref().map(decimal).transpose()?,
                taxes: json(&self.taxes, "taxes")?,
                seller: party(self.seller_name, self.seller_qualifier, self.seller_id),
                buyer: party(self.buyer_name, self.buyer_qualifier, self.buyer_id),
                invoicee: party(self.invoicee_name, self.invoicee_qualifier, self.invoicee_id),
                payee: party(self.payee_name, self.payee_qualifier, self.payee_id),
                ship_to: party(self.ship_to_name, self.ship_to_qualifier, self.ship_to_id),
                lines,
                allowances_charges: json(&self.allowances_charges, "allowances_charges")?,
                payment_terms: json(&self.payment_terms, "payment_terms")?,
                stated_totals: json(&self.stated_totals, "stated_totals")?,
                sources: json(&self.sources, "sources")?,
            }),
        })
    }
}

/// An invoice with one of its lines, as the invoice listing reads them (no line: an invoice without
/// lines, which the LEFT JOIN still returns).
#[derive(sqlx::FromRow)]
struct InvoiceLineRow {
    #[sqlx(flatten)]
    invoice: StoredInvoice,
    #[sqlx(flatten)]
    line: JoinedLine,
    #[sqlx(flatten)]
    accounting: JoinedAccounting,
}

/// The invoice's outbox message, when it has one.
#[derive(sqlx::FromRow)]
struct JoinedAccounting {
    accounting_status: Option<String>,
    accounting_reference: Option<String>,
    accounting_attempts: Option<i32>,
    accounting_last_error: Option<String>,
}

impl JoinedAccounting {
    fn into_state(self) -> Result<Option<AccountingState>, StoreError> {
        let Some(status) = self.accounting_status else { return Ok(None) };
        Ok(Some(AccountingState {
            status: AccountingStatus::try_from(status).map_err(StoreError::Corrupt)?,
            reference: self.accounting_reference,
            attempts: self.accounting_attempts.unwrap_or_default(),
            last_error: self.accounting_last_error,
        }))
    }
}

#[derive(sqlx::FromRow)]
struct JoinedLine {
    line_number: Option<i32>,
    quantity: Option<String>,
    unit: Option<String>,
    unit_price: Option<String>,
    product_id: Option<String>,
    description: Option<String>,
    amount: Option<String>,
    #[sqlx(try_from = "Option<String>")]
    price_kind: StoredPriceKind,
    price_basis: Option<String>,
    product_ids: Option<String>,
    line_allowances_charges: Option<String>,
    line_sources: Option<String>,
}

/// A joined line's `price_kind`, read once into the enum (none without a line or a kind).
struct StoredPriceKind(Option<PriceKind>);

impl TryFrom<Option<String>> for StoredPriceKind {
    type Error = String;

    fn try_from(text: Option<String>) -> Result<StoredPriceKind, String> {
        text.map(PriceKind::try_from).transpose().map(StoredPriceKind)
    }
}

impl JoinedLine {
    fn into_line(self) -> Result<Option<InvoiceLine>, StoreError> {
        let (Some(number), Some(quantity), Some(amount)) = (self.line_number, self.quantity, self.amount)
        else {
            return Ok(None);
        };
        Ok(Some(InvoiceLine {
            number: u32::try_from(number).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            quantity: decimal(&quantity)?,
            unit: self.unit.map(Cow::Owned),
            unit_price: self.unit_price.as_deref().map(decimal).transpose()?,
            price_kind: self.price_kind.0,
            price_basis: self.price_basis.as_deref().map(decimal).transpose()?,
            product_id: self.product_id.map(Into::into),
            product_ids: json(self.product_ids.as_deref().unwrap_or("[]"), "product_ids")?,
            description: self.description,
            amount: decimal(&amount)?,
            allowances_charges: json(
                self.line_allowances_charges.as_deref().unwrap_or("[]"),
                "allowances_charges",
            )?,
            sources: json(self.line_sources.as_deref().unwrap_or("{}"), "sources")?,
        }))
    }
}

/// The `invoices` rows of a small delivery (a large one's are walked).
pub(super) fn invoice_rows(delivery: &Delivery) -> impl Iterator<Item = InvoiceRow<'_>> {
    delivery.held_documents().iter().filter_map(|stored| invoice_row(delivery.id(), stored))
}

/// The `invoices` row of one of the documents of delivery `inbox_id`, when it is an invoice.
pub(super) fn invoice_row(inbox_id: Uuid, stored: &StoredDocument) -> Option<InvoiceRow<'_>> {
    fn field(party: &Option<Party>, get: fn(&Party) -> Option<&str>) -> Option<&str> {
        party.as_ref().and_then(get)
    }
    let invoice = stored.document.invoice.as_deref()?;
    let booking = stored.booking.as_ref()?;
    Some(InvoiceRow {
        id: stored.invoice_id?,
        inbox_id,
        document_id: stored.id,
        number: &invoice.number,
        issue_date: invoice.issue_date.to_string(),
        purchase_order: invoice.purchase_order.as_deref(),
        currency: invoice.currency.as_deref(),
        total: invoice.total.to_string(),
        tax_total: invoice.tax_total.map(|d| d.to_string()),
        tax_rate: invoice.tax_rate.map(|d| d.to_string()),
        seller_name: field(&invoice.seller, |p| p.name.as_deref()),
        seller_qualifier: field(&invoice.seller, |p| p.qualifier.as_deref()),
        seller_id: field(&invoice.seller, |p| p.id.as_deref()),
        buyer_name: field(&invoice.buyer, |p| p.name.as_deref()),
        buyer_qualifier: field(&invoice.buyer, |p| p.qualifier.as_deref()),
        buyer_id: field(&invoice.buyer, |p| p.id.as_deref()),
        allowances_charges: to_json(&invoice.allowances_charges),
        kind: invoice.kind.as_str(),
        taxes: to_json(&invoice.taxes),
        payment_terms: to_json(&invoice.payment_terms),
        stated_totals: to_json(&invoice.stated_totals),
        invoicee_name: field(&invoice.invoicee, |p| p.name.as_deref()),
        invoicee_qualifier: field(&invoice.invoicee, |p| p.qualifier.as_deref()),
        invoicee_id: field(&invoice.invoicee, |p| p.id.as_deref()),
        payee_name: field(&invoice.payee, |p| p.name.as_deref()),
        payee_qualifier: field(&invoice.payee, |p| p.qualifier.as_deref()),
        payee_id: field(&invoice.payee, |p| p.id.as_deref()),
        ship_to_name: field(&invoice.ship_to, |p| p.name.as_deref()),
        ship_to_qualifier: field(&invoice.ship_to, |p| p.qualifier.as_deref()),
        ship_to_id: field(&invoice.ship_to, |p| p.id.as_deref()),
        sources: to_json(&invoice.sources),
        business_key: booking.key.as_str(),
        revision: booking.mark.revision,
        duplicate_of: booking.mark.duplicate_of.as_ref().map(|earlier| earlier.invoice_id),
        replaces: booking.mark.replaces,
        original_invoice: invoice.original_invoice.as_deref(),
        original_invoice_id: booking.mark.original_invoice_id,
    })
}

/// The `invoice_lines` rows of a small delivery (a large one's are walked).
pub(super) fn line_rows(delivery: &Delivery) -> impl Iterator<Item = LineRow<'_>> {
    delivery.held_documents().iter().flat_map(lines_of)
}

/// The `invoice_lines` rows of one of a delivery's documents (none unless it is an invoice).
pub(super) fn lines_of(stored: &StoredDocument) -> impl Iterator<Item = LineRow<'_>> {
    let invoice = stored.invoice_id.zip(stored.document.invoice.as_deref());
    invoice.into_iter().flat_map(|(id, invoice)| {
        invoice.lines.iter().map(move |line| LineRow {
            invoice_id: id,
            line_number: i32::try_from(line.number).unwrap_or(i32::MAX),
            quantity: line.quantity.to_string(),
            unit: line.unit.as_deref(),
            unit_price: line.unit_price.map(|d| d.to_string()),
            product_id: line.product_id.as_deref(),
            description: line.description.as_deref(),
            amount: line.amount.to_string(),
            price_kind: line.price_kind.map(PriceKind::as_str),
            price_basis: line.price_basis.map(|d| d.to_string()),
            product_ids: to_json(&line.product_ids),
            allowances_charges: to_json(&line.allowances_charges),
            sources: to_json(&line.sources),
        })
    })
}
