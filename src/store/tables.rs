//! One description per table a delivery writes (`inbox`, `payloads`, `documents`, `invoices`,
//! `invoice_lines`, `acks`, `deliveries`, `outbox`): its columns in order, each with the array type PostgreSQL binds
//! it as and the cast into the column, and how a row binds them. Both engines' statements are made
//! from it: a multi-row `VALUES` binds rows ([`Bind::push`], either engine: SQLite's writes and the
//! background audit trail); PostgreSQL's claim binds one array per column ([`Arrays`]) and
//! `unnest`s them, its `$n` numbered from the description ([`unnest`]), so that no statement keeps
//! a hand-written order of positional parameters; a large delivery's rows are streamed with `COPY`
//! ([`super::copy::CopyRow`]). A new column is one line here (and its migration).

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::query_builder::Separated;
use sqlx::{Database, Postgres, Sqlite};
use uuid::Uuid;

/// One column: its name, the PostgreSQL array type its values are bound as, and the cast of an
/// element into the column's own type (empty when the array's element type is the column's).
pub(super) struct Column {
    pub name: &'static str,
    pub array: &'static str,
    pub cast: &'static str,
}

/// A PostgreSQL query that binds arrays.
pub(super) type PgQuery<'q, O> = QueryAs<'q, Postgres, O, PgArguments>;

/// A table a delivery writes rows into.
pub(super) trait Table {
    const NAME: &'static str;
    const COLUMNS: &'static [Column];
}

/// Binds a row into one engine's multi-row `VALUES`, column by column.
pub(super) trait Bind<DB: Database> {
    fn push(&self, row: Separated<'_, DB, &'static str>);
}

/// Rows as one array per column, each row naming the delivery it belongs to (bound first, as the
/// `delivery` column of [`unnest`]): a statement writes only the claimed deliveries' rows.
pub(super) trait Arrays<'a>: Default {
    type Row;
    fn add(&mut self, delivery: Uuid, row: Self::Row);
    fn bind<'q, O>(self, query: PgQuery<'q, O>) -> PgQuery<'q, O>
    where
        'a: 'q;
}

/// How many `$n` the arrays of a table with `columns` take (its columns and the delivery's id).
pub(super) const fn params(columns: &[Column]) -> usize {
    columns.len() + 1
}

/// `$first::uuid[], $…::type[], …`: the arrays of `columns` bound from `$first` on, after the
/// deliveries' ids.
pub(super) fn arrays(columns: &[Column], first: usize) -> String {
    std::iter::once("uuid")
        .chain(columns.iter().map(|c| c.array))
        .enumerate()
        .map(|(n, array)| format!("${}::{array}[]", first + n))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `unnest(…) AS alias (delivery, column, …)`: the [`arrays`] of `columns` as rows.
pub(super) fn unnest(columns: &[Column], first: usize, alias: &str) -> String {
    format!("unnest({}) AS {alias} (delivery, {})", arrays(columns, first), names(columns))
}

/// The columns' names, comma-separated.
pub(super) fn names(columns: &[Column]) -> String {
    columns.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
}

/// `INSERT INTO table (columns) `: the start of a table's insert.
pub(super) fn insert<T: Table>() -> String {
    format!("INSERT INTO {} ({}) ", T::NAME, names(T::COLUMNS))
}

/// `column = alias.column, …` for every `inbox` column but the key (source, message_id): what
/// replacing a rejected attempt's row with a corrected resend sets.
pub(super) fn inbox_replaced_from(alias: &str) -> String {
    InboxRow::COLUMNS
        .iter()
        .filter(|c| !matches!(c.name, "source" | "message_id"))
        .map(|c| format!("{0} = {alias}.{0}", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `alias.column::cast, …`: the columns as the table takes them.
pub(super) fn select(columns: &[Column], alias: &str) -> String {
    columns
        .iter()
        .map(|c| {
            if c.cast.is_empty() {
                format!("{alias}.{}", c.name)
            } else {
                format!("{alias}.{}::{}", c.name, c.cast)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `$n` a column of a table's arrays bound from `$first` is bound as.
pub(super) fn param(columns: &[Column], first: usize, name: &str) -> String {
    let at = columns.iter().position(|c| c.name == name).unwrap_or_default();
    format!("${}", first + 1 + at)
}

macro_rules! table {
    ($(#[$doc:meta])* $row:ident, $arrays:ident, $table:literal {
        $($field:ident: $ty:ty = $array:literal $(as $cast:literal)?),+ $(,)?
    }) => {
        $(#[$doc])*
        pub(super) struct $row<'a> {
            $(pub $field: $ty,)+
        }

        impl Table for $row<'_> {
            const NAME: &'static str = $table;
            const COLUMNS: &'static [Column] =
                &[$(Column { name: stringify!($field), array: $array, cast: table!(@cast $($cast)?) }),+];
        }

        impl Bind<Sqlite> for $row<'_> {
            fn push(&self, mut row: Separated<'_, Sqlite, &'static str>) {
                $(row.push_bind(&self.$field);)+
            }
        }

        impl Bind<Postgres> for $row<'_> {
            fn push(&self, mut row: Separated<'_, Postgres, &'static str>) {
                $(row.push_bind(&self.$field);)+
            }
        }

        impl super::copy::CopyRow for $row<'_> {
            fn write_line(&self, out: &mut Vec<u8>) {
                $(super::copy::CopyText::write(&self.$field, out); out.push(b'\t');)+
                out.pop();
                out.push(b'\n');
            }
        }

        /// The rows of
        #[doc = $table]
        /// as one array per column.
        #[derive(Default)]
        pub(super) struct $arrays<'a> {
            delivery: Vec<Uuid>,
            $($field: Vec<$ty>,)+
        }

        impl<'a> Arrays<'a> for $arrays<'a> {
            type Row = $row<'a>;

            fn add(&mut self, delivery: Uuid, row: $row<'a>) {
                self.delivery.push(delivery);
                $(self.$field.push(row.$field);)+
            }

            fn bind<'q, O>(self, query: PgQuery<'q, O>) -> PgQuery<'q, O>
            where
                'a: 'q,
            {
                query.bind(self.delivery)$(.bind(self.$field))+
            }
        }
    };
    (@cast) => { "" };
    (@cast $cast:literal) => { $cast };
}

table! {
    /// An `inbox` row: the key claimed, the envelope and the stored answer.
    InboxRow, InboxArrays, "inbox" {
        id: Uuid = "uuid",
        source: &'a str = "text",
        message_id: &'a str = "text",
        standard: &'static str = "text",
        sender_qualifier: &'a str = "text",
        sender_id: &'a str = "text",
        receiver_qualifier: &'a str = "text",
        receiver_id: &'a str = "text",
        control_number: &'a str = "text",
        payload_sha256: &'a str = "text",
        content_type: Option<&'a str> = "text",
        status: &'static str = "text",
        response_body: &'a str = "text",
        lists_from_rows: bool = "bool",
        received_at: DateTime<Utc> = "timestamptz",
        processed_at: DateTime<Utc> = "timestamptz",
    }
}

table! {
    /// A `payloads` row: an interchange's body as received, kept until the retention drops its day
    /// (on PostgreSQL, the table is partitioned by day of `received_at`).
    PayloadRow, PayloadArrays, "payloads" {
        inbox_id: Uuid = "uuid",
        received_at: DateTime<Utc> = "timestamptz",
        body: &'a [u8] = "bytea",
    }
}

table! {
    /// A `documents` row: one transaction set or message of an interchange.
    DocumentRow, DocumentArrays, "documents" {
        id: Uuid = "uuid",
        inbox_id: Uuid = "uuid",
        position: i32 = "int4",
        doc_type: &'a str = "text",
        control_number: &'a str = "text",
    }
}

table! {
    /// An `invoices` row: dates and decimals as text, which PostgreSQL casts and SQLite keeps.
    InvoiceRow, InvoiceArrays, "invoices" {
        id: Uuid = "uuid",
        inbox_id: Uuid = "uuid",
        document_id: Uuid = "uuid",
        number: &'a str = "text",
        issue_date: String = "text" as "date",
        purchase_order: Option<&'a str> = "text",
        currency: Option<&'a str> = "text",
        total: String = "text" as "numeric",
        tax_total: Option<String> = "text" as "numeric",
        tax_rate: Option<String> = "text" as "numeric",
        seller_name: Option<&'a str> = "text",
        seller_qualifier: Option<&'a str> = "text",
        seller_id: Option<&'a str> = "text",
        buyer_name: Option<&'a str> = "text",
        buyer_qualifier: Option<&'a str> = "text",
        buyer_id: Option<&'a str> = "text",
        allowances_charges: String = "text" as "jsonb",
        kind: &'static str = "text",
        taxes: String = "text" as "jsonb",
        payment_terms: String = "text" as "jsonb",
        stated_totals: String = "text" as "jsonb",
        invoicee_name: Option<&'a str> = "text",
        invoicee_qualifier: Option<&'a str> = "text",
        invoicee_id: Option<&'a str> = "text",
        payee_name: Option<&'a str> = "text",
        payee_qualifier: Option<&'a str> = "text",
        payee_id: Option<&'a str> = "text",
        ship_to_name: Option<&'a str> = "text",
        ship_to_qualifier: Option<&'a str> = "text",
        ship_to_id: Option<&'a str> = "text",
        sources: String = "text" as "jsonb",
        business_key: &'a str = "text",
        revision: i32 = "int4",
        duplicate_of: Option<Uuid> = "uuid",
        replaces: Option<Uuid> = "uuid",
        original_invoice: Option<&'a str> = "text",
        original_invoice_id: Option<Uuid> = "uuid",
    }
}

table! {
    /// An `invoice_lines` row.
    LineRow, LineArrays, "invoice_lines" {
        invoice_id: Uuid = "uuid",
        line_number: i32 = "int4",
        quantity: String = "text" as "numeric",
        unit: Option<&'a str> = "text",
        unit_price: Option<String> = "text" as "numeric",
        product_id: Option<&'a str> = "text",
        description: Option<&'a str> = "text",
        amount: String = "text" as "numeric",
        price_kind: Option<&'static str> = "text",
        price_basis: Option<String> = "text" as "numeric",
        product_ids: String = "text" as "jsonb",
        allowances_charges: String = "text" as "jsonb",
        sources: String = "text" as "jsonb",
    }
}

table! {
    /// An `acks` row. PostgreSQL allocates its control number in the statement (and writes it into
    /// the body in place of [`crate::edi::ack::CONTROL_NUMBER`]); SQLite binds both.
    AckRow, AckArrays, "acks" {
        inbox_id: Uuid = "uuid",
        control_number: i64 = "int8",
        body: Cow<'a, str> = "text",
        created_at: DateTime<Utc> = "timestamptz",
    }
}

table! {
    /// A `deliveries` row: one attempt on a key, with what the request's headers and transport
    /// told. `transport_reused`: its transport id came before with another key.
    DeliveryRow, DeliveryArrays, "deliveries" {
        id: Uuid = "uuid",
        inbox_id: Option<Uuid> = "uuid",
        partner_id: Option<&'a str> = "text",
        source: &'a str = "text",
        message_id: &'a str = "text",
        outcome: &'static str = "text",
        status: i32 = "int4",
        request_id: Option<&'a str> = "text",
        remote_addr: Option<&'a str> = "text",
        user_agent: Option<&'a str> = "text",
        content_type: Option<&'a str> = "text",
        body_bytes: i64 = "int8",
        received_at: DateTime<Utc> = "timestamptz",
        door: &'static str = "text",
        transport_id: Option<&'a str> = "text",
        transport: Option<String> = "text",
        transport_reused: bool = "bool",
    }
}

table! {
    /// An `outbox` row: one invoice to hand to accounting.
    OutboxRow, OutboxArrays, "outbox" {
        id: Uuid = "uuid",
        invoice_id: Uuid = "uuid",
        destination: &'static str = "text",
        idempotency_key: &'a str = "text",
        payload: &'a str = "text",
        status: &'static str = "text",
        next_attempt_at: DateTime<Utc> = "timestamptz",
        created_at: DateTime<Utc> = "timestamptz",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_made_from_the_description() {
        let columns = DocumentRow::COLUMNS;
        assert_eq!(
            unnest(columns, 7, "d"),
            "unnest($7::uuid[], $8::uuid[], $9::uuid[], $10::int4[], $11::text[], $12::text[]) \
             AS d (delivery, id, inbox_id, position, doc_type, control_number)"
        );
        assert_eq!(params(columns), 6);
        assert_eq!(param(columns, 7, "doc_type"), "$11");
        assert_eq!(select(&InvoiceRow::COLUMNS[4..6], "i"), "i.issue_date::date, i.purchase_order");
        assert_eq!(names(AckRow::COLUMNS), "inbox_id, control_number, body, created_at");
    }
}
