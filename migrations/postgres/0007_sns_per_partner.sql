-- SNS confirmation messages are kept per partner: a message id is unique within a partner's
-- messages only (another partner can neither read acme's row back nor squat its id). Open mode's
-- messages, which no partner proved, are kept under the empty partner id.
UPDATE sns_subscriptions SET partner_id = '' WHERE partner_id IS NULL;
ALTER TABLE sns_subscriptions ALTER COLUMN partner_id SET DEFAULT '', ALTER COLUMN partner_id SET NOT NULL;
ALTER TABLE sns_subscriptions DROP CONSTRAINT sns_subscriptions_message_id_key;
ALTER TABLE sns_subscriptions ADD CONSTRAINT sns_subscriptions_partner_message_key UNIQUE (partner_id, message_id);
-- Counting a partner's pending messages (at most a bounded number are kept).
CREATE INDEX sns_subscriptions_pending ON sns_subscriptions (partner_id) WHERE status = 'pending';
