//! The whole answer of a large interchange, read again: its stored answer leaves its documents and
//! invoices out (they are in their own rows, and would double a 20,000-invoice interchange's
//! storage), so a replay or a read lists them from their rows and writes them in place.

use std::collections::HashMap;

use uuid::Uuid;

use super::invoices::InvoiceFilter;
use super::{Store, StoreError};
use crate::inbox::resource::{DocumentResource, with_lists};

/// A `documents` row with the id of the invoice booked from it.
#[derive(sqlx::FromRow)]
struct ListedDocument {
    doc_type: String,
    control_number: String,
    position: i32,
    invoice_id: Option<Uuid>,
}

impl Store {
    /// Interchange `id`'s answer as first given: `stored` itself, or when its lists are read from
    /// rows, `stored` with its documents (in the order of the interchange) and invoices (in the
    /// order of their documents) written in.
    pub async fn whole_answer(
        &self,
        id: Uuid,
        stored: String,
        lists_from_rows: bool,
    ) -> Result<String, StoreError> {
        const DOCUMENTS: &str = "SELECT d.doc_type, d.control_number, d.position, i.id AS invoice_id \
            FROM documents d LEFT JOIN invoices i ON i.document_id = d.id \
            WHERE d.inbox_id = $1 ORDER BY d.position";
        if !lists_from_rows {
            return Ok(stored);
        }
        let rows: Vec<ListedDocument> =
            on_pool!(self, pool => sqlx::query_as(DOCUMENTS).bind(id).fetch_all(pool).await?);
        let filter = InvoiceFilter { interchange_id: Some(id), limit: u32::MAX, ..InvoiceFilter::default() };
        let mut invoices = self.load_invoices(&filter, None).await?;
        let documents = rows
            .into_iter()
            .map(|row| {
                Ok(DocumentResource {
                    kind: row.doc_type,
                    control_number: row.control_number,
                    position: usize::try_from(row.position)
                        .map_err(|_| StoreError::Corrupt(format!("document position {}", row.position)))?,
                    invoice_id: row.invoice_id,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let order: HashMap<Uuid, usize> =
            documents.iter().filter_map(|d| d.invoice_id).enumerate().map(|(at, id)| (id, at)).collect();
        invoices.sort_by_key(|invoice| order.get(&invoice.id).copied());
        // An interchange's answer tells nothing of accounting: it is the same bytes on every replay.
        invoices.iter_mut().for_each(|invoice| invoice.accounting = None);
        with_lists(&stored, &documents, &invoices)
            .ok_or_else(|| StoreError::Corrupt(format!("interchange {id}: its stored answer has no lists")))
    }
}
