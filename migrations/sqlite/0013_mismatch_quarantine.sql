-- no-transaction
-- A partner's invoices whose stated figures do not reconcile can be held for an operator
-- (`on_mismatch = 'quarantine'`), with their own quarantine reason.
--
-- SQLite cannot change a CHECK constraint: `partners` and `quarantine` are rebuilt as SQLite's
-- ALTER TABLE documentation says, with foreign keys off (outside a transaction: the pragma is
-- ignored inside one) so that dropping the old `partners` deletes no identity or credential.
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE partners_rebuilt (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
    max_body_bytes      INTEGER,
    requests_per_minute INTEGER,
    validation          TEXT NOT NULL DEFAULT 'strict' CHECK (validation IN ('strict', 'lenient')),
    conflict_policy     TEXT NOT NULL DEFAULT 'reject' CHECK (conflict_policy IN ('reject', 'process', 'quarantine')),
    created_at          TEXT NOT NULL,
    bypass_documents    TEXT NOT NULL DEFAULT '[]',
    response            TEXT NOT NULL DEFAULT 'full' CHECK (response IN ('full', 'minimal')),
    as2_security        TEXT NOT NULL DEFAULT 'optional'
        CHECK (as2_security IN ('optional', 'signed', 'encrypted', 'signed-encrypted')),
    as2_certificates    TEXT NOT NULL DEFAULT '[]',
    as2_mdn_urls        TEXT NOT NULL DEFAULT '[]',
    on_mismatch         TEXT NOT NULL DEFAULT 'warn' CHECK (on_mismatch IN ('warn', 'reject', 'quarantine'))
);
INSERT INTO partners_rebuilt (id, name, status, max_body_bytes, requests_per_minute, validation,
    conflict_policy, created_at, bypass_documents, response, as2_security, as2_certificates,
    as2_mdn_urls, on_mismatch)
SELECT id, name, status, max_body_bytes, requests_per_minute, validation, conflict_policy, created_at,
    bypass_documents, response, as2_security, as2_certificates, as2_mdn_urls, on_mismatch
FROM partners;
DROP TABLE partners;
ALTER TABLE partners_rebuilt RENAME TO partners;

CREATE TABLE quarantine_rebuilt (
    id             BLOB PRIMARY KEY,
    partner_id     TEXT NOT NULL,
    source         TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    reason         TEXT NOT NULL CHECK (reason IN ('conflict', 'invalid', 'mismatch')),
    status         TEXT NOT NULL CHECK (status IN ('held', 'released', 'discarded')),
    payload        BLOB NOT NULL,
    content_type   TEXT,
    problem        TEXT NOT NULL,
    interchange_id BLOB NOT NULL,
    received_at    TEXT NOT NULL,
    resolved_at    TEXT,
    released_as    BLOB,
    UNIQUE (source, message_id, payload_sha256)
);
INSERT INTO quarantine_rebuilt SELECT id, partner_id, source, message_id, payload_sha256, reason, status,
    payload, content_type, problem, interchange_id, received_at, resolved_at, released_as FROM quarantine;
DROP TABLE quarantine;
ALTER TABLE quarantine_rebuilt RENAME TO quarantine;
CREATE INDEX quarantine_status ON quarantine (status, id);
COMMIT;
PRAGMA foreign_keys = ON;
