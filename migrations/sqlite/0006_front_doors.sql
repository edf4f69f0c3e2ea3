-- no-transaction
-- Front doors (see the PostgreSQL migration). SQLite cannot change a CHECK constraint, so the two
-- partner tables are rebuilt; foreign keys are off while the parent table is replaced (they would
-- cascade the drop) and the rebuild is one transaction.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

ALTER TABLE deliveries ADD COLUMN door TEXT NOT NULL DEFAULT 'direct';
ALTER TABLE deliveries ADD COLUMN transport_id TEXT;
ALTER TABLE deliveries ADD COLUMN transport TEXT;
ALTER TABLE deliveries ADD COLUMN transport_reused INTEGER NOT NULL DEFAULT 0;
CREATE INDEX deliveries_transport_id ON deliveries (transport_id, door) WHERE transport_id IS NOT NULL;

CREATE TABLE partners_rebuilt (
    id                    TEXT PRIMARY KEY,
    name                  TEXT NOT NULL,
    status                TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
    max_body_bytes        INTEGER,
    requests_per_minute   INTEGER,
    validation            TEXT NOT NULL DEFAULT 'strict' CHECK (validation IN ('strict', 'lenient')),
    conflict_policy       TEXT NOT NULL DEFAULT 'reject' CHECK (conflict_policy IN ('reject', 'process', 'quarantine')),
    created_at            TEXT NOT NULL,
    bypass_documents      TEXT NOT NULL DEFAULT '[]'
);
INSERT INTO partners_rebuilt (id, name, status, max_body_bytes, requests_per_minute, validation, conflict_policy,
    created_at)
SELECT id, name, status, max_body_bytes, requests_per_minute, validation, conflict_policy, created_at FROM partners;
DROP TABLE partners;
ALTER TABLE partners_rebuilt RENAME TO partners;

CREATE TABLE partner_identities_rebuilt (
    partner_id TEXT NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('sender', 'receiver', 'as2')),
    identity   TEXT NOT NULL,
    PRIMARY KEY (role, identity, partner_id)
);
INSERT INTO partner_identities_rebuilt SELECT partner_id, role, identity FROM partner_identities;
DROP TABLE partner_identities;
ALTER TABLE partner_identities_rebuilt RENAME TO partner_identities;
CREATE UNIQUE INDEX partner_identities_one_sender ON partner_identities (identity) WHERE role = 'sender';
CREATE UNIQUE INDEX partner_identities_one_as2 ON partner_identities (identity) WHERE role = 'as2';

CREATE TABLE quarantine (
    id             BLOB PRIMARY KEY,
    partner_id     TEXT NOT NULL,
    source         TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    reason         TEXT NOT NULL CHECK (reason IN ('conflict', 'invalid')),
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
CREATE INDEX quarantine_status ON quarantine (status, id);

CREATE TABLE sns_subscriptions (
    id                BLOB PRIMARY KEY,
    partner_id        TEXT,
    kind              TEXT NOT NULL CHECK (kind IN ('SubscriptionConfirmation', 'UnsubscribeConfirmation')),
    message_id        TEXT NOT NULL UNIQUE,
    topic_arn         TEXT NOT NULL,
    token             TEXT NOT NULL,
    subscribe_url     TEXT NOT NULL,
    message           TEXT,
    signature_version TEXT,
    signature         TEXT,
    signing_cert_url  TEXT,
    sent_at           TEXT,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'confirmed')),
    received_at       TEXT NOT NULL,
    confirmed_at      TEXT
);

PRAGMA foreign_key_check;
COMMIT;
PRAGMA foreign_keys = ON;
