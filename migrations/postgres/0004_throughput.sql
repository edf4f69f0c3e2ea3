-- One commit per delivery and no row shared between deliveries:
-- * acknowledgement control numbers come from one cycling sequence (nextval never waits for another
--   delivery's COMMIT; gaps are allowed in X12 and EDIFACT control numbers, and a number repeats only
--   after 999,999,999 acknowledgements);
-- * a replay no longer updates its inbox row: the delivery count and the last delivery time are
--   read from the audit trail, which every attempt appends to (found by key, without a foreign key:
--   a corrected resend replaces a rejected row under a new id, and attempts are audited in batches);
-- * refused attempts (no credential, wrong sender, too large, …) are kept as counts per remote
--   address, outcome and minute, never one row per request.
CREATE SEQUENCE ack_control_numbers MINVALUE 1 MAXVALUE 999999999 CYCLE;
SELECT setval('ack_control_numbers', COALESCE((SELECT MAX(last_control_number) FROM ack_counters), 0) % 999999999 + 1, false);
DROP TABLE ack_counters;

ALTER TABLE inbox DROP COLUMN deliveries, DROP COLUMN last_delivery_at;

-- Attempts are found by their key (a corrected resend replaces a rejected row under a new id, and an
-- attempt audited in the background may name the id it was answered with); purge goes by age.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_inbox_id_fkey;
DROP INDEX deliveries_inbox;
CREATE INDEX deliveries_key ON deliveries (source, message_id, received_at);
CREATE INDEX deliveries_received_at ON deliveries (received_at);

CREATE TABLE refusals (
    minute      timestamptz NOT NULL,
    remote_addr text NOT NULL,
    -- The partner, when the refused request proved to be one (a forged sender, a suspended partner).
    partner_id  text NOT NULL,
    outcome     text NOT NULL,
    status      integer NOT NULL,
    attempts    bigint NOT NULL,
    -- The last attempt's headers, truncated.
    user_agent  text,
    request_id  text,
    PRIMARY KEY (minute, remote_addr, partner_id, outcome, status)
);
