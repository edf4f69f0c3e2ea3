-- The audit of what operators do (issue 34): one row per action from the admin API, the console or
-- the command line, naming who did it, what, to which, and the state before and after. Kept for
-- the retention period, like the delivery audit, and purged with it.
CREATE TABLE operator_actions (
    id      BLOB PRIMARY KEY,
    at      TEXT NOT NULL,
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    subject TEXT NOT NULL,
    state_before TEXT,
    state_after  TEXT NOT NULL
);
CREATE INDEX operator_actions_at ON operator_actions (at);
