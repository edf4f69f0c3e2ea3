-- Retention without interference: what expires by time (stored payloads, the delivery audit trail)
-- lives in tables partitioned by day of `received_at` (UTC), so that the purge detaches and drops
-- whole days instead of updating or deleting rows one by one beside ingest. The key table `inbox`
-- keeps its global UNIQUE (source, message_id) and loses its payload column.
--
-- Upgrading copies every stored payload and audit row once (a maintenance window on a large
-- database); the service then creates each day's partitions ahead of time (`edi_inbox_partition`).

-- Creates `parent`'s partition for the UTC day `day`, named `{parent}_pYYYYMMDD`, unless it exists.
-- Built standalone and then attached (SHARE UPDATE EXCLUSIVE on the parent: inserts go on), so
-- that a replica making tomorrow's partition never blocks today's ingest; two replicas racing for
-- the same day leave one partition.
CREATE FUNCTION edi_inbox_partition(parent regclass, day date) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    name text := parent::text || '_p' || to_char(day, 'YYYYMMDD');
BEGIN
    IF to_regclass(name) IS NOT NULL THEN
        RETURN;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name, parent);
    EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, name,
        day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
EXCEPTION WHEN duplicate_table OR unique_violation THEN
    -- Another replica created it first.
    NULL;
END $$;

-- The body of each interchange as received, until the retention drops its day. The key starts with
-- `received_at`: the oldest payload and the rows of the day the horizon falls in are read from it,
-- and an interchange's payload is found by its `received_at` and id.
CREATE TABLE payloads (
    inbox_id    uuid NOT NULL,
    received_at timestamptz NOT NULL,
    body        bytea NOT NULL,
    PRIMARY KEY (received_at, inbox_id)
) PARTITION BY RANGE (received_at);

ALTER TABLE deliveries RENAME TO deliveries_unpartitioned;
ALTER INDEX deliveries_pkey RENAME TO deliveries_unpartitioned_pkey;
ALTER INDEX deliveries_key RENAME TO deliveries_unpartitioned_key;
ALTER INDEX deliveries_received_at RENAME TO deliveries_unpartitioned_received_at;
ALTER INDEX deliveries_transport_id RENAME TO deliveries_unpartitioned_transport_id;
CREATE TABLE deliveries (
    LIKE deliveries_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, received_at)
) PARTITION BY RANGE (received_at);
CREATE INDEX deliveries_key ON deliveries (source, message_id, received_at);
CREATE INDEX deliveries_received_at ON deliveries (received_at);
CREATE INDEX deliveries_transport_id ON deliveries (transport_id, door) WHERE transport_id IS NOT NULL;

DO $$
DECLARE
    day date;
BEGIN
    FOR day IN SELECT DISTINCT (received_at AT TIME ZONE 'UTC')::date FROM inbox WHERE payload IS NOT NULL LOOP
        PERFORM edi_inbox_partition('payloads', day);
    END LOOP;
    FOR day IN SELECT DISTINCT (received_at AT TIME ZONE 'UTC')::date FROM deliveries_unpartitioned LOOP
        PERFORM edi_inbox_partition('deliveries', day);
    END LOOP;
END $$;

INSERT INTO payloads (inbox_id, received_at, body)
    SELECT id, received_at, payload FROM inbox WHERE payload IS NOT NULL;
INSERT INTO deliveries SELECT * FROM deliveries_unpartitioned;
DROP TABLE deliveries_unpartitioned;

ALTER TABLE inbox DROP COLUMN payload, DROP COLUMN payload_purged_at;
