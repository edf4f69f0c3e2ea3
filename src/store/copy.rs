//! `COPY … FROM STDIN`: in PostgreSQL's text format, how each column value is written (escaped, or
//! `\N`), a row as one line, and a table's rows streamed in chunks of [`CHUNK_BYTES`]; a payload in
//! the binary format, its body as it is. So a large interchange's payload, documents, invoices and
//! lines reach the database without a statement, its parameters or its wire message holding all of
//! them at once.

use std::borrow::Cow;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::PgConnection;
use sqlx::postgres::PgCopyIn;
use uuid::Uuid;

use super::StoreError;
use super::tables::{self, PayloadRow, Table};

/// Bytes of rows sent to the server at a time.
const CHUNK_BYTES: usize = 256 * 1024;

/// A column value as the text format writes it.
pub(super) trait CopyText {
    fn write(&self, out: &mut Vec<u8>);
}

/// A row as one line of the text format: its columns in the table's order, tab-separated.
pub(super) trait CopyRow {
    fn write_line(&self, out: &mut Vec<u8>);
}

/// Text bytes with the format's four special bytes escaped (backslash, tab, newline, return). None
/// of them occurs inside a UTF-8 sequence, so text may be escaped in pieces cut anywhere.
fn escape(text: &[u8], out: &mut Vec<u8>) {
    for &byte in text {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            other => out.push(other),
        }
    }
}

impl CopyText for str {
    fn write(&self, out: &mut Vec<u8>) {
        escape(self.as_bytes(), out);
    }
}

impl CopyText for &str {
    fn write(&self, out: &mut Vec<u8>) {
        (**self).write(out);
    }
}

impl CopyText for String {
    fn write(&self, out: &mut Vec<u8>) {
        self.as_str().write(out);
    }
}

impl CopyText for Cow<'_, str> {
    fn write(&self, out: &mut Vec<u8>) {
        self.as_ref().write(out);
    }
}

/// How a `bytea` in hex starts (`\x`, its backslash escaped).
const BYTEA_PREFIX: &[u8] = b"\\\\x";

/// Bytes as the hex digits of a `bytea`.
fn hex(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        out.extend_from_slice(&[HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]]);
    }
}

impl CopyText for &[u8] {
    /// `bytea` in hex (`\x…`, its backslash escaped).
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(BYTEA_PREFIX);
        hex(self, out);
    }
}

impl CopyText for Uuid {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.hyphenated().encode_lower(&mut Uuid::encode_buffer()).as_bytes());
    }
}

impl CopyText for i32 {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.to_string().as_bytes());
    }
}

impl CopyText for i64 {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.to_string().as_bytes());
    }
}

impl CopyText for bool {
    fn write(&self, out: &mut Vec<u8>) {
        out.push(if *self { b't' } else { b'f' });
    }
}

impl CopyText for DateTime<Utc> {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.to_rfc3339_opts(SecondsFormat::Micros, true).as_bytes());
    }
}

impl<T: CopyText> CopyText for Option<T> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Some(value) => value.write(out),
            None => out.extend_from_slice(b"\\N"),
        }
    }
}

/// Streams into table `T`, with one `COPY` on the connection's open transaction, the rows `write`
/// writes of each of `items` (none or several lines each), as the items are taken; returns how many
/// rows the server wrote. A failure aborts the copy (the transaction then rolls back).
pub(super) async fn copy_rows<T: Table, I>(
    conn: &mut PgConnection,
    items: impl Iterator<Item = Result<I, StoreError>>,
    mut write: impl FnMut(&I, &mut Vec<u8>),
) -> Result<u64, StoreError> {
    let statement = format!("COPY {} ({}) FROM STDIN", T::NAME, tables::names(T::COLUMNS));
    let mut copy = conn.copy_in_raw(&statement).await?;
    let mut chunk = Vec::with_capacity(CHUNK_BYTES + 4096);
    let sent = async {
        for item in items {
            write(&item?, &mut chunk);
            if chunk.len() >= CHUNK_BYTES {
                copy.send(chunk.as_slice()).await?;
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            copy.send(chunk.as_slice()).await?;
        }
        Ok::<(), StoreError>(())
    }
    .await;
    finish(copy, sent).await
}

/// The binary format's signature, flags (none) and header extension (none).
const BINARY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// The binary format's end: a tuple of -1 fields.
const BINARY_TRAILER: &[u8] = &(-1_i16).to_be_bytes();

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 00:00:00 UTC).
const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// The payload row's binary format up to its body's bytes: the header, the tuple's field count, its
/// id and time, and the body's length. `None` for a body longer than a field holds (2 GiB).
fn payload_head(row: &PayloadRow<'_>) -> Option<Vec<u8>> {
    let micros = row.received_at.timestamp_micros() - POSTGRES_EPOCH_MICROS;
    let mut head = Vec::with_capacity(64);
    head.extend_from_slice(BINARY_HEADER);
    head.extend_from_slice(&3_i16.to_be_bytes());
    head.extend_from_slice(&16_i32.to_be_bytes());
    head.extend_from_slice(row.inbox_id.as_bytes());
    head.extend_from_slice(&8_i32.to_be_bytes());
    head.extend_from_slice(&micros.to_be_bytes());
    head.extend_from_slice(&i32::try_from(row.body.len()).ok()?.to_be_bytes());
    Some(head)
}

/// Streams a delivery's payload row in the binary format: its body goes as it is, a piece of
/// [`CHUNK_BYTES`] at a time, never copied or encoded (the text format's hex doubled it on the wire
/// and cost the server its decoding).
pub(super) async fn copy_payload(conn: &mut PgConnection, row: &PayloadRow<'_>) -> Result<u64, sqlx::Error> {
    let Some(head) = payload_head(row) else {
        return Err(sqlx::Error::Protocol(format!(
            "a payload of {} bytes is longer than a field",
            row.body.len()
        )));
    };
    let statement = format!(
        "COPY {} ({}) FROM STDIN (FORMAT binary)",
        PayloadRow::NAME,
        tables::names(PayloadRow::COLUMNS)
    );
    let mut copy = conn.copy_in_raw(&statement).await?;
    let sent = async {
        copy.send(head).await?;
        for piece in row.body.chunks(CHUNK_BYTES) {
            copy.send(piece).await?;
        }
        copy.send(BINARY_TRAILER).await?;
        Ok::<(), sqlx::Error>(())
    }
    .await;
    finish(copy, sent).await
}

/// Ends a copy: finished when everything was sent, aborted otherwise (the transaction then rolls
/// back; the connection may be gone already, and the error that matters is the first one).
async fn finish<E: std::fmt::Display + From<sqlx::Error>>(
    copy: PgCopyIn<&mut PgConnection>,
    sent: Result<(), E>,
) -> Result<u64, E> {
    match sent {
        Ok(()) => Ok(copy.finish().await?),
        Err(error) => {
            let _ = copy.abort(error.to_string()).await;
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(value: &impl CopyText) -> String {
        let mut out = Vec::new();
        value.write(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn values_are_written_as_the_text_format_reads_them() {
        assert_eq!(written(&"a\\b\tc\nd\re ' \" |"), "a\\\\b\\tc\\nd\\re ' \" |");
        assert_eq!(written(&None::<&str>), "\\N");
        assert_eq!(written(&Some("\\N")), "\\\\N", "a text that reads \\N is not NULL");
        assert_eq!(written(&b"\x00\xff\n".as_slice()), "\\\\x00ff0a");
        assert_eq!(written(&-42_i32), "-42");
        assert_eq!(written(&true), "t");
        let at = DateTime::parse_from_rfc3339("2026-12-05T18:00:00.000001Z").unwrap().to_utc();
        assert_eq!(written(&at), "2026-12-05T18:00:00.000001Z");
        let id = Uuid::from_u128(0x0193_0000_0000_7000_8000_0000_0000_0001);
        assert_eq!(written(&id), "01930000-0000-7000-8000-000000000001");
    }

    #[test]
    fn the_payload_row_is_streamed_in_its_columns_order() {
        assert_eq!(tables::names(PayloadRow::COLUMNS), "inbox_id, received_at, body");
        let at = DateTime::parse_from_rfc3339("2000-01-01T00:00:01Z").unwrap().to_utc();
        let id = Uuid::from_u128(1);
        let head = payload_head(&PayloadRow { inbox_id: id, received_at: at, body: b"ISA*" }).unwrap();
        let mut expected = b"PGCOPY\n\xff\r\n\0".to_vec();
        expected.extend_from_slice(&[0; 8]); // no flags, no header extension
        expected.extend_from_slice(&[0, 3]); // three fields
        expected.extend_from_slice(&[0, 0, 0, 16]);
        expected.extend_from_slice(&[0; 15]);
        expected.push(1);
        expected.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 0, 0, 0x0f, 0x42, 0x40]); // a second after 2000
        expected.extend_from_slice(&[0, 0, 0, 4]); // the body's length; its bytes follow as they are
        assert_eq!(head, expected);
    }
}
