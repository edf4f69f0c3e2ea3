-- Devices an operator signed in from (see the PostgreSQL migration): a browser's own count of
-- wrong passwords, so that a stranger's guesses under the name cannot keep the operator out.
CREATE TABLE console_devices (
    id_sha256       TEXT PRIMARY KEY,
    operator        TEXT NOT NULL REFERENCES operators (name),
    failed_sign_ins INTEGER NOT NULL DEFAULT 0,
    locked_until    TEXT,
    expires_at      TEXT NOT NULL
);
CREATE INDEX console_devices_expires_at ON console_devices (expires_at);
