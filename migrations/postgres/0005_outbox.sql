-- The transactional outbox: every invoice recorded while an accounting API is configured gets one
-- row here, written by the same statement that claims its interchange's key. A relay delivers the
-- row to the accounting API (at least once, with the row's Idempotency-Key, so exactly once in
-- effect) and records what came back. One row per invoice: per-invoice order is that row's.
CREATE TABLE outbox (
    id              uuid PRIMARY KEY,
    invoice_id      uuid NOT NULL UNIQUE REFERENCES invoices (id) ON DELETE CASCADE,
    destination     text NOT NULL,
    idempotency_key text NOT NULL UNIQUE,
    -- The invoice JSON exactly as the accounting API receives it; NULL once delivered (or
    -- discarded) rows pass the retention period.
    payload         text,
    status          text NOT NULL CHECK (status IN ('pending', 'delivered', 'dead', 'discarded')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    -- A relay holds the row until then (and only the holder of lease_token may settle it).
    leased_until    timestamptz,
    lease_token     uuid,
    -- The accounting API's id for the invoice, from its answer.
    reference       text,
    last_error      text,
    created_at      timestamptz NOT NULL,
    delivered_at    timestamptz
);
-- The relay's queue: only rows still to send, in due order.
CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX outbox_status ON outbox (status, id);

-- The accounting file export: each invoice is assigned to exactly one export (the primary key),
-- and an export names its file (and the directory it goes to, `target`) before the file is
-- written, so that a crashed export is written again with the same name and content, there.
CREATE TABLE exports (
    id           uuid PRIMARY KEY,
    target       text NOT NULL,
    file_name    text NOT NULL UNIQUE,
    status       text NOT NULL CHECK (status IN ('writing', 'done')),
    invoices     integer NOT NULL,
    lines        integer,
    sha256       text,
    created_at   timestamptz NOT NULL,
    completed_at timestamptz
);
CREATE TABLE exported_invoices (
    invoice_id uuid PRIMARY KEY REFERENCES invoices (id) ON DELETE CASCADE,
    export_id  uuid NOT NULL REFERENCES exports (id) ON DELETE CASCADE
);
CREATE INDEX exports_target ON exports (target, status, id);
CREATE INDEX exported_invoices_export ON exported_invoices (export_id, invoice_id);
