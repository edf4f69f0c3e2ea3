-- Acknowledgements (TA1/997/999, CONTRL) sent for interchanges, and the per-partner counter their own
-- control numbers come from. Allocated in the transaction that records the interchange.
CREATE TABLE ack_counters (
    source              text PRIMARY KEY,
    last_control_number bigint NOT NULL
);

CREATE TABLE acks (
    inbox_id       uuid NOT NULL REFERENCES inbox (id) ON UPDATE CASCADE ON DELETE CASCADE,
    control_number bigint NOT NULL,
    body           text NOT NULL,
    created_at     timestamptz NOT NULL,
    -- A corrected resend replaces a rejected interchange: both acknowledgements are kept, the newest counts.
    PRIMARY KEY (inbox_id, created_at, control_number)
);
