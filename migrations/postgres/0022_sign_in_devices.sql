-- Devices an operator signed in from (issue 49): a browser that signed in under a name carries a
-- device cookie, and its wrong passwords count here, on its own row, instead of on the name. The
-- name's lock (five wrong passwords from anywhere) then holds only for browsers that never signed
-- in under it, so that a stranger's guesses cannot keep the operator out (OWASP's device cookies).
-- The row is found by the SHA-256 (hex) of the cookie's random id; it ends at `expires_at`, moved on at
-- each sign-in from the device, and is purged after it.
CREATE TABLE console_devices (
    id_sha256       text PRIMARY KEY,
    operator        text NOT NULL REFERENCES operators (name),
    failed_sign_ins integer NOT NULL DEFAULT 0,
    locked_until    timestamptz,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX console_devices_expires_at ON console_devices (expires_at);
