//! The accounting export's SQL. An export first assigns invoices to itself, in one transaction,
//! under a file name chosen before the file exists; an invoice is assigned at most once (primary
//! key), so concurrent exports take disjoint invoices. An export whose file was never confirmed
//! (`writing`) is written again, with the same name and content, by the next run into the same
//! directory (`target`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{InvoiceFilter, Store, StoreError};
use crate::inbox::resource::InvoiceResource;

/// An export whose invoices are assigned.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Export {
    pub id: Uuid,
    pub file_name: String,
    pub invoices: i32,
}

/// A finished export, as the manifest lists it.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct FinishedExport {
    pub file_name: String,
    pub invoices: i32,
    pub lines: Option<i32>,
    pub sha256: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Exports into `target` started and never finished (a crash between assigning and
    /// confirming), oldest first.
    pub async fn unfinished_exports(&self, target: &str) -> Result<Vec<Export>, StoreError> {
        const SQL: &str = "SELECT id, file_name, invoices FROM exports WHERE target = $1 AND status = 'writing' \
            ORDER BY id";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(target).fetch_all(pool).await?))
    }

    /// Assigns up to `max` booked invoices (a duplicate is never exported) that no export holds yet (oldest first) to a new export into
    /// `target` named by `file_name(id)`; `None` when there is nothing left to export.
    pub async fn start_export(
        &self,
        target: &str,
        max: u32,
        now: DateTime<Utc>,
        file_name: impl Fn(Uuid) -> String,
    ) -> Result<Option<Export>, StoreError> {
        const CREATE: &str = "INSERT INTO exports (id, target, file_name, status, invoices, created_at) \
            VALUES ($1, $4, $2, 'writing', 0, $3)";
        const ASSIGN: &str = "INSERT INTO exported_invoices (invoice_id, export_id) \
            SELECT id, $1 FROM invoices i WHERE i.duplicate_of IS NULL AND NOT EXISTS \
                (SELECT 1 FROM exported_invoices e WHERE e.invoice_id = i.id) \
            ORDER BY id LIMIT $2 ON CONFLICT (invoice_id) DO NOTHING";
        const COUNT: &str = "UPDATE exports SET invoices = $2 WHERE id = $1";
        let id = Uuid::now_v7();
        let export = Export { id, file_name: file_name(id), invoices: 0 };
        in_write_transaction!(&self.db, tx => {
            sqlx::query(CREATE)
                .bind(export.id)
                .bind(&export.file_name)
                .bind(now)
                .bind(target)
                .execute(&mut *tx)
                .await?;
            let assigned = sqlx::query(ASSIGN)
                .bind(export.id)
                .bind(i64::from(max))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if assigned == 0 {
                tx.rollback().await?;
                return Ok(None);
            }
            let invoices = i32::try_from(assigned).unwrap_or(i32::MAX);
            sqlx::query(COUNT).bind(export.id).bind(invoices).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(Some(Export { invoices, ..export }))
        })
    }

    /// The invoices of an export with their lines, oldest first.
    pub async fn export_invoices(&self, export: &Export) -> Result<Vec<InvoiceResource>, StoreError> {
        let filter = InvoiceFilter {
            export_id: Some(export.id),
            limit: u32::try_from(export.invoices).unwrap_or(0),
            ..InvoiceFilter::default()
        };
        let mut invoices = self.load_invoices(&filter, None).await?;
        invoices.reverse();
        Ok(invoices)
    }

    /// Confirms that an export's file is in place.
    pub async fn finish_export(
        &self,
        export: &Export,
        lines: usize,
        sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        const SQL: &str =
            "UPDATE exports SET status = 'done', lines = $2, sha256 = $3, completed_at = $4 WHERE id = $1";
        let lines = i32::try_from(lines).unwrap_or(i32::MAX);
        on_pool!(self, pool => sqlx::query(SQL).bind(export.id).bind(lines).bind(sha256).bind(now)
            .execute(pool).await?.rows_affected());
        Ok(())
    }

    /// Every finished export into `target`, oldest first.
    pub async fn finished_exports(&self, target: &str) -> Result<Vec<FinishedExport>, StoreError> {
        const SQL: &str = "SELECT file_name, invoices, lines, sha256, created_at, completed_at FROM exports \
            WHERE target = $1 AND status = 'done' ORDER BY id";
        Ok(on_pool!(self, pool => sqlx::query_as(SQL).bind(target).fetch_all(pool).await?))
    }
}
