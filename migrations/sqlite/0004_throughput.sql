-- One commit per delivery and no row shared between deliveries (see the PostgreSQL migration):
-- SQLite has no sequences, so the cycling acknowledgement counter is one row; its single writer
-- task is the only one that updates it, inside the group commit that records the deliveries.
CREATE TABLE ack_sequence (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO ack_sequence (id, last) SELECT 1, COALESCE(MAX(last_control_number), 0) % 999999999 FROM ack_counters;
DROP TABLE ack_counters;

ALTER TABLE inbox DROP COLUMN deliveries;
ALTER TABLE inbox DROP COLUMN last_delivery_at;

-- The audit trail without its foreign key (found by key instead; see the PostgreSQL migration).
CREATE TABLE deliveries_by_key (
    id             BLOB PRIMARY KEY,
    inbox_id       BLOB,
    partner_id     TEXT,
    source         TEXT,
    message_id     TEXT,
    outcome        TEXT NOT NULL,
    status         INTEGER NOT NULL,
    request_id     TEXT,
    remote_addr    TEXT,
    user_agent     TEXT,
    content_type   TEXT,
    body_bytes     INTEGER NOT NULL,
    received_at    TEXT NOT NULL
);
INSERT INTO deliveries_by_key SELECT id, inbox_id, partner_id, source, message_id, outcome, status, request_id,
    remote_addr, user_agent, content_type, body_bytes, received_at FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_by_key RENAME TO deliveries;
CREATE INDEX deliveries_key ON deliveries (source, message_id, received_at);
CREATE INDEX deliveries_received_at ON deliveries (received_at);

CREATE TABLE refusals (
    minute      TEXT NOT NULL,
    remote_addr TEXT NOT NULL,
    partner_id  TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    status      INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    user_agent  TEXT,
    request_id  TEXT,
    PRIMARY KEY (minute, remote_addr, partner_id, outcome, status)
);
