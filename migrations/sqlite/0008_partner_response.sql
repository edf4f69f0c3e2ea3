-- How a partner's deliveries are answered when a request does not say (see the PostgreSQL migration).
ALTER TABLE partners ADD COLUMN response TEXT NOT NULL DEFAULT 'full' CHECK (response IN ('full', 'minimal'));
