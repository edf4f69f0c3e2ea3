-- The least an inbox must keep for one delivery, for pgbench/minimal.sql: the claimed key with its
-- fingerprint, stored payload and response, and the booked invoice with its lines, its business key
-- unique (one invoice, booked once).
CREATE TABLE inbox (
    id            uuid PRIMARY KEY,
    source        text NOT NULL,
    message_id    text NOT NULL,
    fingerprint   text NOT NULL,
    payload       bytea,
    response_body text NOT NULL,
    received_at   timestamptz NOT NULL,
    UNIQUE (source, message_id)
);
CREATE TABLE invoices (
    id         uuid PRIMARY KEY,
    inbox_id   uuid NOT NULL REFERENCES inbox (id),
    number     text NOT NULL,
    issue_date date NOT NULL,
    currency   text NOT NULL,
    total      numeric NOT NULL,
    business_key text NOT NULL UNIQUE
);
CREATE TABLE invoice_lines (
    invoice_id  uuid NOT NULL REFERENCES invoices (id),
    line_number integer NOT NULL,
    quantity    numeric NOT NULL,
    unit_price  numeric,
    amount      numeric NOT NULL,
    PRIMARY KEY (invoice_id, line_number)
);
