-- The inbox: one row per idempotency key. UNIQUE (source, message_id) is the single point of truth
-- for exactly-once processing. Same schema as PostgreSQL: uuids as 16-byte BLOBs, timestamps as
-- RFC 3339 TEXT, exact decimals as TEXT.
CREATE TABLE inbox (
    id                 BLOB PRIMARY KEY,
    source             TEXT NOT NULL,
    message_id         TEXT NOT NULL,
    standard           TEXT NOT NULL CHECK (standard IN ('x12', 'edifact')),
    sender_qualifier   TEXT NOT NULL,
    sender_id          TEXT NOT NULL,
    receiver_qualifier TEXT NOT NULL,
    receiver_id        TEXT NOT NULL,
    control_number     TEXT NOT NULL,
    payload_sha256     TEXT NOT NULL,
    -- NULL once the retention policy purged the body; the key and fingerprint stay.
    payload            BLOB,
    content_type       TEXT,
    status             TEXT NOT NULL CHECK (status IN ('processed', 'rejected')),
    response_body      TEXT NOT NULL,
    received_at        TEXT NOT NULL,
    processed_at       TEXT NOT NULL,
    deliveries         INTEGER NOT NULL DEFAULT 1,
    last_delivery_at   TEXT NOT NULL,
    payload_purged_at  TEXT,
    CONSTRAINT inbox_source_message_id_key UNIQUE (source, message_id)
);
CREATE INDEX inbox_purge ON inbox (received_at) WHERE payload IS NOT NULL;
CREATE INDEX inbox_sender ON inbox (sender_id, id);

CREATE TABLE documents (
    id             BLOB PRIMARY KEY,
    inbox_id       BLOB NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    doc_type       TEXT NOT NULL,
    control_number TEXT NOT NULL,
    UNIQUE (inbox_id, position)
);

CREATE TABLE invoices (
    id                 BLOB PRIMARY KEY,
    inbox_id           BLOB NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
    document_id        BLOB NOT NULL UNIQUE REFERENCES documents (id) ON DELETE CASCADE,
    number             TEXT NOT NULL,
    issue_date         TEXT NOT NULL,
    purchase_order     TEXT,
    currency           TEXT NOT NULL,
    total              TEXT NOT NULL,
    tax_total          TEXT,
    tax_rate           TEXT,
    seller_name        TEXT,
    seller_qualifier   TEXT,
    seller_id          TEXT,
    buyer_name         TEXT,
    buyer_qualifier    TEXT,
    buyer_id           TEXT,
    allowances_charges TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX invoices_inbox_id ON invoices (inbox_id);
CREATE INDEX invoices_number ON invoices (number, id);

CREATE TABLE invoice_lines (
    invoice_id  BLOB NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
    line_number INTEGER NOT NULL,
    quantity    TEXT NOT NULL,
    unit        TEXT,
    unit_price  TEXT,
    product_id  TEXT,
    description TEXT,
    amount      TEXT NOT NULL,
    PRIMARY KEY (invoice_id, line_number)
);
