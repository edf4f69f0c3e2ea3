-- How a partner's deliveries are answered when a request does not say (`Prefer`): the whole
-- interchange resource, or the minimal one (no invoice lines).
ALTER TABLE partners ADD COLUMN response text NOT NULL DEFAULT 'full' CHECK (response IN ('full', 'minimal'));
