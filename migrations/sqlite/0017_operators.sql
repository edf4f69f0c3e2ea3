-- Named operators of the console (issue 34): each signs in with a name and a password (kept as an
-- Argon2id hash), as an `operator` (every button) or a `viewer` (read only). Failed sign-ins are
-- counted on the row, so that a name is throttled across restarts.
CREATE TABLE operators (
    name                TEXT PRIMARY KEY,
    role                TEXT NOT NULL CHECK (role IN ('operator', 'viewer')),
    password_hash       TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    password_changed_at TEXT NOT NULL,
    disabled_at         TEXT,
    failed_sign_ins     INTEGER NOT NULL DEFAULT 0,
    locked_until        TEXT
);

-- Console sessions (see the PostgreSQL migration): signing out and disabling an operator end a
-- session at once and after a restart. The table holds the SHA-256 of the cookie's random id.
CREATE TABLE console_sessions (
    id_sha256     BLOB PRIMARY KEY,
    operator      TEXT REFERENCES operators (name),
    role          TEXT NOT NULL CHECK (role IN ('operator', 'viewer')),
    credential    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    signed_out_at TEXT
);
CREATE INDEX console_sessions_operator ON console_sessions (operator) WHERE signed_out_at IS NULL;
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);

-- The key that MACs the session cookies: a forged cookie is refused without a query.
CREATE TABLE console_keys (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL
);
