-- The inbox: one row per idempotency key. UNIQUE (source, message_id) is the single point of truth
-- for exactly-once processing across any number of replicas.
CREATE TABLE inbox (
    id                 uuid PRIMARY KEY,
    source             text NOT NULL,
    message_id         text NOT NULL,
    standard           text NOT NULL CHECK (standard IN ('x12', 'edifact')),
    sender_qualifier   text NOT NULL,
    sender_id          text NOT NULL,
    receiver_qualifier text NOT NULL,
    receiver_id        text NOT NULL,
    control_number     text NOT NULL,
    payload_sha256     text NOT NULL,
    -- NULL once the retention policy purged the body; the key and fingerprint stay.
    payload            bytea,
    content_type       text,
    status             text NOT NULL CHECK (status IN ('processed', 'rejected')),
    response_body      text NOT NULL,
    received_at        timestamptz NOT NULL,
    processed_at       timestamptz NOT NULL,
    deliveries         integer NOT NULL DEFAULT 1,
    last_delivery_at   timestamptz NOT NULL,
    payload_purged_at  timestamptz,
    CONSTRAINT inbox_source_message_id_key UNIQUE (source, message_id)
);
CREATE INDEX inbox_purge ON inbox (received_at) WHERE payload IS NOT NULL;
CREATE INDEX inbox_sender ON inbox (sender_id, id);

-- One row per transaction set (ST..SE) or message (UNH..UNT) of a processed interchange.
CREATE TABLE documents (
    id             uuid PRIMARY KEY,
    inbox_id       uuid NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
    position       integer NOT NULL,
    doc_type       text NOT NULL,
    control_number text NOT NULL,
    UNIQUE (inbox_id, position)
);

-- The accounting side effect.
CREATE TABLE invoices (
    id                 uuid PRIMARY KEY,
    inbox_id           uuid NOT NULL REFERENCES inbox (id) ON DELETE CASCADE,
    document_id        uuid NOT NULL UNIQUE REFERENCES documents (id) ON DELETE CASCADE,
    number             text NOT NULL,
    issue_date         date NOT NULL,
    purchase_order     text,
    currency           text NOT NULL,
    total              numeric NOT NULL,
    tax_total          numeric,
    tax_rate           numeric,
    seller_name        text,
    seller_qualifier   text,
    seller_id          text,
    buyer_name         text,
    buyer_qualifier    text,
    buyer_id           text,
    allowances_charges jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX invoices_inbox_id ON invoices (inbox_id);
CREATE INDEX invoices_number ON invoices (number, id);

CREATE TABLE invoice_lines (
    invoice_id  uuid NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
    line_number integer NOT NULL,
    quantity    numeric NOT NULL,
    unit        text,
    unit_price  numeric,
    product_id  text,
    description text,
    amount      numeric NOT NULL,
    PRIMARY KEY (invoice_id, line_number)
);
