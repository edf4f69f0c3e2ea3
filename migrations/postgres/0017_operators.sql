-- Named operators of the console (issue 34): each signs in with a name and a password (kept as an
-- Argon2id hash), as an `operator` (every button) or a `viewer` (read only). Failed sign-ins are
-- counted on the row, so that a name is throttled on every replica and across restarts.
CREATE TABLE operators (
    name                text PRIMARY KEY,
    role                text NOT NULL CHECK (role IN ('operator', 'viewer')),
    password_hash       text NOT NULL,
    created_at          timestamptz NOT NULL,
    password_changed_at timestamptz NOT NULL,
    disabled_at         timestamptz,
    failed_sign_ins     integer NOT NULL DEFAULT 0,
    locked_until        timestamptz
);

-- Console sessions, kept here so that signing out and disabling an operator end a session on every
-- replica at once and after a restart. The cookie holds a random id (and a MAC of it with
-- `console_keys`), the table its SHA-256 only. `credential` is the operator's name, or, for a session
-- opened with the admin or viewer token, a digest of that token: changing the token ends it.
CREATE TABLE console_sessions (
    id_sha256     bytea PRIMARY KEY,
    operator      text REFERENCES operators (name),
    role          text NOT NULL CHECK (role IN ('operator', 'viewer')),
    credential    text NOT NULL,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    signed_out_at timestamptz
);
CREATE INDEX console_sessions_operator ON console_sessions (operator) WHERE signed_out_at IS NULL;
CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);

-- The key that MACs the session cookies, the same on every replica: a forged cookie is refused
-- without a query.
CREATE TABLE console_keys (
    id  integer PRIMARY KEY CHECK (id = 1),
    key bytea NOT NULL
);
