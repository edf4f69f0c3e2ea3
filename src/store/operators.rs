//! Named operators and the console's sessions: the rows behind signing in, signing out and
//! disabling an operator, and the key that MACs session cookies. A session is found by the SHA-256
//! of its cookie's id, never by the id itself.

use chrono::{DateTime, Utc};

use super::{Store, StoreError};
use crate::operators::{Operator, OperatorName, Role};

const COLUMNS: &str =
    "name, role, created_at, password_changed_at, disabled_at, failed_sign_ins, locked_until";

/// Signs out an operator's live sessions (`$1` its name, `$2` the time).
const END_SESSIONS: &str =
    "UPDATE console_sessions SET signed_out_at = $2 WHERE operator = $1 AND signed_out_at IS NULL";

/// A console session as stored.
pub struct ConsoleSession {
    /// Who signed in: an operator, or nobody by name (the admin or viewer token).
    pub operator: Option<OperatorName>,
    pub role: Role,
    /// The operator's name, or the digest of the token the session was opened with.
    pub credential: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Where a sign-in's wrong passwords are counted: on the operator's name, or, from a browser that
/// signed in under the name before, on that device alone.
pub enum Guesses<'a> {
    Name(&'a OperatorName),
    /// The SHA-256 (hex) of the device cookie's random id, and the operator it signed in as.
    Device {
        id_sha256: &'a str,
        operator: &'a OperatorName,
    },
}

/// The wrong passwords in a row counted so far, and the lock they earned.
#[derive(sqlx::FromRow)]
pub struct Counted {
    pub failed_sign_ins: i32,
    pub locked_until: Option<DateTime<Utc>>,
}

impl Guesses<'_> {
    /// The table, its key column and the column naming the operator.
    fn columns(&self) -> (&'static str, &'static str, &'static str) {
        match self {
            Guesses::Name(_) => ("operators", "name", "name"),
            Guesses::Device { .. } => ("console_devices", "id_sha256", "operator"),
        }
    }

    fn key(&self) -> &str {
        match self {
            Guesses::Name(name) => name.as_str(),
            Guesses::Device { id_sha256, .. } => id_sha256,
        }
    }

    /// The operator whose sign-ins these are.
    pub fn operator(&self) -> &OperatorName {
        match self {
            Guesses::Name(name) | Guesses::Device { operator: name, .. } => name,
        }
    }
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    operator: Option<String>,
    #[sqlx(try_from = "String")]
    role: Role,
    credential: String,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl Store {
    /// Registers an operator and returns it; `None` when the name is taken.
    pub async fn add_operator(
        &self,
        name: &OperatorName,
        role: Role,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Operator>, StoreError> {
        let sql = format!(
            "INSERT INTO operators (name, role, password_hash, created_at, password_changed_at) \
             VALUES ($1, $2, $3, $4, $4) ON CONFLICT (name) DO NOTHING RETURNING {COLUMNS}"
        );
        Ok(on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(name.as_str()).bind(role.as_str()).bind(password_hash).bind(now)
            .fetch_optional(pool).await?))
    }

    /// Every operator, by name.
    pub async fn operators(&self) -> Result<Vec<Operator>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM operators ORDER BY name");
        Ok(on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await?))
    }

    /// An operator with its password hash, for checking a sign-in.
    pub async fn operator_with_hash(
        &self,
        name: &OperatorName,
    ) -> Result<Option<(Operator, String)>, StoreError> {
        let sql = format!("SELECT {COLUMNS}, password_hash FROM operators WHERE name = $1");
        let row: Option<(String, Operator)> = on_pool!(self, pool => {
            use sqlx::Row;
            let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(name.as_str()).fetch_optional(pool).await?;
            match row {
                Some(row) => Some((row.try_get("password_hash")?, sqlx::FromRow::from_row(&row)?)),
                None => None,
            }
        });
        Ok(row.map(|(hash, operator)| (operator, hash)))
    }

    /// Disables (`Some`) or enables (`None`) an operator; disabling also ends its sessions, in the
    /// same transaction. `None` when there is no such operator.
    pub async fn set_operator_disabled(
        &self,
        name: &OperatorName,
        disabled_at: Option<DateTime<Utc>>,
    ) -> Result<Option<Operator>, StoreError> {
        let sql = format!("UPDATE operators SET disabled_at = $2 WHERE name = $1 RETURNING {COLUMNS}");
        Ok(on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let changed: Option<Operator> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(name.as_str()).bind(disabled_at).fetch_optional(&mut *tx).await?;
            if let (Some(_), Some(now)) = (&changed, disabled_at) {
                sqlx::query(END_SESSIONS).bind(name.as_str()).bind(now).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            changed
        }))
    }

    /// Gives an operator a new password hash, clears its failed sign-ins and ends its sessions, in
    /// one transaction; `None` when there is no such operator.
    pub async fn set_operator_password(
        &self,
        name: &OperatorName,
        password_hash: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Operator>, StoreError> {
        let sql = format!(
            "UPDATE operators SET password_hash = $2, password_changed_at = $3, failed_sign_ins = 0, \
             locked_until = NULL WHERE name = $1 RETURNING {COLUMNS}"
        );
        Ok(on_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let changed: Option<Operator> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(name.as_str()).bind(password_hash).bind(now).fetch_optional(&mut *tx).await?;
            if changed.is_some() {
                sqlx::query(END_SESSIONS).bind(name.as_str()).bind(now).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            changed
        }))
    }

    /// The wrong passwords counted on `guesses` so far and the lock they earned; `None` when a
    /// device's row is gone (expired, or another operator's).
    pub async fn sign_in_guesses(&self, guesses: &Guesses<'_>) -> Result<Option<Counted>, StoreError> {
        let (table, key, operator) = guesses.columns();
        let sql =
            format!("SELECT failed_sign_ins, locked_until FROM {table} WHERE {key} = $1 AND {operator} = $2");
        Ok(on_pool!(self, pool => sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(guesses.key()).bind(guesses.operator().as_str()).fetch_optional(pool).await?))
    }

    /// Counts one more wrong password on `guesses`, before its password is checked, unless another
    /// sign-in counted one since `seen` was read (false: read it again). Compared and set in one
    /// statement, so that guesses sent at once are each counted, and each one past the lock is
    /// refused unchecked.
    pub async fn count_guess(
        &self,
        guesses: &Guesses<'_>,
        seen: i32,
        locked_until: Option<DateTime<Utc>>,
    ) -> Result<bool, StoreError> {
        let (table, key, _) = guesses.columns();
        let sql = format!(
            "UPDATE {table} SET failed_sign_ins = $3, locked_until = $4 WHERE {key} = $1 AND failed_sign_ins = $2"
        );
        let counted = on_pool!(self, pool => sqlx::query(sqlx::AssertSqlSafe(sql)).bind(guesses.key())
            .bind(seen).bind(seen.saturating_add(1)).bind(locked_until).execute(pool).await?.rows_affected());
        Ok(counted == 1)
    }

    /// Forgets the wrong passwords counted on `guesses` (after a right one).
    pub async fn forget_guesses(&self, guesses: &Guesses<'_>) -> Result<(), StoreError> {
        let (table, key, _) = guesses.columns();
        let sql = format!(
            "UPDATE {table} SET failed_sign_ins = 0, locked_until = NULL WHERE {key} = $1 AND failed_sign_ins > 0"
        );
        on_pool!(self, pool => sqlx::query(sqlx::AssertSqlSafe(sql)).bind(guesses.key()).execute(pool).await.map(|_| ())?);
        Ok(())
    }

    /// Keeps the device of this id digest (hex) for `operator` until `expires_at`, its guesses
    /// forgotten (a sign-in from it).
    pub async fn keep_console_device(
        &self,
        id_sha256: &str,
        operator: &OperatorName,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        const SQL: &str = "INSERT INTO console_devices (id_sha256, operator, expires_at) VALUES ($1, $2, $3) \
            ON CONFLICT (id_sha256) DO UPDATE SET failed_sign_ins = 0, locked_until = NULL, expires_at = $3";
        on_pool!(self, pool => sqlx::query(SQL).bind(id_sha256).bind(operator.as_str()).bind(expires_at)
            .execute(pool).await.map(|_| ())?);
        Ok(())
    }

    /// The key that MACs session cookies: the stored one, or `fresh` stored now if there is none
    /// yet (the first replica to start wins; every replica then reads the same).
    pub async fn console_key(&self, fresh: &[u8]) -> Result<Vec<u8>, StoreError> {
        const INSERT: &str = "INSERT INTO console_keys (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING";
        const SELECT: &str = "SELECT key FROM console_keys WHERE id = 1";
        Ok(on_pool!(self, pool => {
            sqlx::query(INSERT).bind(fresh).execute(pool).await?;
            sqlx::query_scalar(SELECT).fetch_one(pool).await?
        }))
    }

    /// Stores a new session.
    pub async fn open_console_session(
        &self,
        id_sha256: &[u8],
        session: &ConsoleSession,
    ) -> Result<(), StoreError> {
        const SQL: &str =
            "INSERT INTO console_sessions (id_sha256, operator, role, credential, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6)";
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(id_sha256).bind(session.operator.as_ref().map(OperatorName::as_str)).bind(session.role.as_str())
            .bind(&session.credential).bind(session.created_at).bind(session.expires_at)
            .execute(pool).await.map(|_| ())?);
        Ok(())
    }

    /// The session of this id digest if it is live at `now`: not expired, not signed out, and (for
    /// an operator's) its operator not disabled.
    pub async fn console_session(
        &self,
        id_sha256: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Option<ConsoleSession>, StoreError> {
        const SQL: &str = "SELECT s.operator, s.role, s.credential, s.created_at, s.expires_at
            FROM console_sessions s LEFT JOIN operators o ON o.name = s.operator
            WHERE s.id_sha256 = $1 AND s.expires_at > $2 AND s.signed_out_at IS NULL
              AND (s.operator IS NULL OR o.disabled_at IS NULL)";
        let row: Option<SessionRow> =
            on_pool!(self, pool => sqlx::query_as(SQL).bind(id_sha256).bind(now).fetch_optional(pool).await?);
        row.map(|row| {
            let operator = row.operator.map(|name| OperatorName::parse(&name)).transpose();
            Ok(ConsoleSession {
                operator: operator.map_err(StoreError::Corrupt)?,
                role: row.role,
                credential: row.credential,
                created_at: row.created_at,
                expires_at: row.expires_at,
            })
        })
        .transpose()
    }

    /// Moves a live session's expiry (sliding expiry).
    pub async fn extend_console_session(
        &self,
        id_sha256: &[u8],
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        const SQL: &str =
            "UPDATE console_sessions SET expires_at = $2 WHERE id_sha256 = $1 AND signed_out_at IS NULL";
        on_pool!(self, pool => sqlx::query(SQL).bind(id_sha256).bind(expires_at).execute(pool).await.map(|_| ())?);
        Ok(())
    }

    /// Ends a session on every replica.
    pub async fn sign_out_console_session(
        &self,
        id_sha256: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        const SQL: &str =
            "UPDATE console_sessions SET signed_out_at = $2 WHERE id_sha256 = $1 AND signed_out_at IS NULL";
        on_pool!(self, pool => sqlx::query(SQL).bind(id_sha256).bind(now).execute(pool).await.map(|_| ())?);
        Ok(())
    }
}
