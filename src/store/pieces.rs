//! A large payload written into SQLite a piece at a time: its row inserted with a `zeroblob` of its
//! length (which SQLite writes without allocating it), then its bytes written into that blob with
//! SQLite's incremental blob I/O, [`PIECE_BYTES`] at a time. Bound as a parameter instead, a 6.6 MB
//! body was copied three times over (into sqlx's arguments, by `sqlite3_bind_blob`, into the
//! record SQLite builds), 20 MB held at once for one delivery.

use std::ffi::{CStr, c_int, c_void};
use std::ptr::{self, NonNull};

use libsqlite3_sys::{
    SQLITE_OK, sqlite3, sqlite3_blob, sqlite3_blob_close, sqlite3_blob_open, sqlite3_blob_write,
    sqlite3_errmsg,
};
use sqlx::SqliteConnection;

use super::tables::PayloadRow;

/// Payloads from this size on are written a piece at a time.
pub(super) const PIECEWISE_BYTES: usize = 1024 * 1024;

/// Bytes written into the blob at a time.
const PIECE_BYTES: usize = 256 * 1024;

/// Writes `row` into `payloads` on `conn` (in its open transaction), its body a piece at a time.
pub(super) async fn write_piecewise(
    conn: &mut SqliteConnection,
    row: &PayloadRow<'_>,
) -> Result<(), sqlx::Error> {
    let length = i64::try_from(row.body.len()).map_err(|_| too_large())?;
    let rowid: i64 = sqlx::query_scalar(
        "INSERT INTO payloads (inbox_id, received_at, body) VALUES ($1, $2, zeroblob($3)) RETURNING rowid",
    )
    .bind(row.inbox_id)
    .bind(row.received_at)
    .bind(length)
    .fetch_one(&mut *conn)
    .await?;
    let mut handle = conn.lock_handle().await?;
    write_blob(handle.as_raw_handle(), rowid, row.body)
}

/// Writes `body` into the `body` of row `rowid` of `payloads`, which holds a blob of its length.
fn write_blob(db: NonNull<sqlite3>, rowid: i64, body: &[u8]) -> Result<(), sqlx::Error> {
    let db = db.as_ptr();
    let mut blob: *mut sqlite3_blob = ptr::null_mut();
    // SAFETY: `db` is the open connection, locked for this thread while its handle is held; the
    // names are NUL-terminated; `blob` is written by SQLite and closed below on every path.
    let opened = unsafe {
        sqlite3_blob_open(db, c"main".as_ptr(), c"payloads".as_ptr(), c"body".as_ptr(), rowid, 1, &mut blob)
    };
    if opened != SQLITE_OK {
        // SAFETY: a failed open leaves no blob to close (SQLite sets it to NULL).
        return Err(failure(db, "sqlite3_blob_open"));
    }
    let mut written = Ok(());
    for (n, piece) in body.chunks(PIECE_BYTES).enumerate() {
        let (Ok(length), Ok(offset)) = (c_int::try_from(piece.len()), c_int::try_from(n * PIECE_BYTES))
        else {
            written = Err(too_large());
            break;
        };
        // SAFETY: `piece` is valid for `length` bytes, and the blob holds `offset + length` bytes.
        let rc = unsafe { sqlite3_blob_write(blob, piece.as_ptr().cast::<c_void>(), length, offset) };
        if rc != SQLITE_OK {
            written = Err(failure(db, "sqlite3_blob_write"));
            break;
        }
    }
    // SAFETY: `blob` was opened above and is closed once.
    let closed = unsafe { sqlite3_blob_close(blob) };
    written?;
    if closed != SQLITE_OK {
        return Err(failure(db, "sqlite3_blob_close"));
    }
    Ok(())
}

/// The connection's last error, named after the call that failed.
fn failure(db: *mut sqlite3, call: &str) -> sqlx::Error {
    // SAFETY: `db` is open; SQLite returns a NUL-terminated message it owns until the next call.
    let message = unsafe { CStr::from_ptr(sqlite3_errmsg(db)) }.to_string_lossy().into_owned();
    sqlx::Error::Protocol(format!("{call}: {message}"))
}

fn too_large() -> sqlx::Error {
    sqlx::Error::Protocol("a payload larger than SQLite's blob offsets (2 GiB)".into())
}
