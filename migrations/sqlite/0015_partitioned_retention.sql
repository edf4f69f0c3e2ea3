-- Stored payloads in a table of their own, as on PostgreSQL (where it is partitioned by day; see
-- that migration): the purge deletes them in paced batches without touching the key table.
CREATE TABLE payloads (
    inbox_id    BLOB NOT NULL,
    received_at TEXT NOT NULL,
    body        BLOB NOT NULL,
    PRIMARY KEY (received_at, inbox_id)
);
INSERT INTO payloads (inbox_id, received_at, body)
    SELECT id, received_at, payload FROM inbox WHERE payload IS NOT NULL;
DROP INDEX inbox_purge;
ALTER TABLE inbox DROP COLUMN payload;
ALTER TABLE inbox DROP COLUMN payload_purged_at;
