-- The transactional outbox and the accounting file export (see the PostgreSQL migration).
CREATE TABLE outbox (
    id              BLOB PRIMARY KEY,
    invoice_id      BLOB NOT NULL UNIQUE REFERENCES invoices (id) ON DELETE CASCADE,
    destination     TEXT NOT NULL,
    idempotency_key TEXT NOT NULL UNIQUE,
    payload         TEXT,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'dead', 'discarded')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    leased_until    TEXT,
    lease_token     BLOB,
    reference       TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    delivered_at    TEXT
);
CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX outbox_status ON outbox (status, id);

CREATE TABLE exports (
    id           BLOB PRIMARY KEY,
    target       TEXT NOT NULL,
    file_name    TEXT NOT NULL UNIQUE,
    status       TEXT NOT NULL CHECK (status IN ('writing', 'done')),
    invoices     INTEGER NOT NULL,
    lines        INTEGER,
    sha256       TEXT,
    created_at   TEXT NOT NULL,
    completed_at TEXT
);
CREATE TABLE exported_invoices (
    invoice_id BLOB PRIMARY KEY REFERENCES invoices (id) ON DELETE CASCADE,
    export_id  BLOB NOT NULL REFERENCES exports (id) ON DELETE CASCADE
);
CREATE INDEX exports_target ON exports (target, status, id);
CREATE INDEX exported_invoices_export ON exported_invoices (export_id, invoice_id);
