-- The audit of what operators do (issue 34): one row per action from the admin API, the console or
-- the command line, naming who did it, what, to which, and the state before and after. Kept for
-- the retention period, like the delivery audit, and purged with it.
CREATE TABLE operator_actions (
    id      uuid PRIMARY KEY,
    at      timestamptz NOT NULL,
    actor   text NOT NULL,
    action  text NOT NULL,
    subject text NOT NULL,
    state_before text,
    state_after  text NOT NULL
);
CREATE INDEX operator_actions_at ON operator_actions (at);
