-- Acknowledgements (TA1/997/999, CONTRL) sent for interchanges, and the per-partner counter their own
-- control numbers come from. Allocated in the transaction that records the interchange.
CREATE TABLE ack_counters (
    source              TEXT PRIMARY KEY,
    last_control_number INTEGER NOT NULL
);

CREATE TABLE acks (
    inbox_id       BLOB NOT NULL REFERENCES inbox (id) ON UPDATE CASCADE ON DELETE CASCADE,
    control_number INTEGER NOT NULL,
    body           TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    -- A corrected resend replaces a rejected interchange: both acknowledgements are kept, the newest counts.
    PRIMARY KEY (inbox_id, created_at, control_number)
);
