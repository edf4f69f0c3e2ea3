-- One invoice, booked once (issue 51): see the PostgreSQL migration of the same number for what the
-- business key, `duplicate_of`, `revision` and `replaces` are.
ALTER TABLE invoices ADD COLUMN business_key TEXT;
ALTER TABLE invoices ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE invoices ADD COLUMN duplicate_of BLOB;
ALTER TABLE invoices ADD COLUMN replaces BLOB;

UPDATE invoices
SET business_key = (SELECT replace(replace(x.source, '%', '%25'), ' ', '%20') FROM inbox x WHERE x.id = invoices.inbox_id)
    || ' ' || replace(replace(coalesce(seller_qualifier, ''), '%', '%25'), ' ', '%20')
    || ' ' || replace(replace(coalesce(seller_id, ''), '%', '%25'), ' ', '%20')
    || ' ' || kind
    || ' ' || replace(replace(trim(number), '%', '%25'), ' ', '%20')
    || ' *';

UPDATE invoices
SET duplicate_of = (SELECT min(e.id) FROM invoices e WHERE e.business_key = invoices.business_key)
WHERE id <> (SELECT min(e.id) FROM invoices e WHERE e.business_key = invoices.business_key);

CREATE UNIQUE INDEX invoices_business_key ON invoices (business_key, revision) WHERE duplicate_of IS NULL;
CREATE INDEX invoices_duplicate_of ON invoices (duplicate_of) WHERE duplicate_of IS NOT NULL;

ALTER TABLE partners ADD COLUMN on_duplicate_number TEXT NOT NULL DEFAULT 'quarantine'
    CHECK (on_duplicate_number IN ('quarantine', 'reject', 'book'));
ALTER TABLE partners ADD COLUMN invoice_numbers TEXT NOT NULL DEFAULT 'unique'
    CHECK (invoice_numbers IN ('unique', 'per-year'));

-- SQLite cannot change a CHECK constraint: `quarantine` (which nothing references) is rebuilt.
CREATE TABLE quarantine_rebuilt (
    id             BLOB PRIMARY KEY,
    partner_id     TEXT NOT NULL,
    source         TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    reason         TEXT NOT NULL CHECK (reason IN ('conflict', 'invalid', 'mismatch', 'duplicate-number')),
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
