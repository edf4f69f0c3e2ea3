-- SNS confirmation messages are kept per partner (see the PostgreSQL migration). SQLite cannot drop
-- a UNIQUE constraint, so the table (which nothing references) is rebuilt.
CREATE TABLE sns_subscriptions_per_partner (
    id                BLOB PRIMARY KEY,
    partner_id        TEXT NOT NULL DEFAULT '',
    kind              TEXT NOT NULL CHECK (kind IN ('SubscriptionConfirmation', 'UnsubscribeConfirmation')),
    message_id        TEXT NOT NULL,
    topic_arn         TEXT NOT NULL,
    token             TEXT NOT NULL,
    subscribe_url     TEXT NOT NULL,
    message           TEXT,
    signature_version TEXT,
    signature         TEXT,
    signing_cert_url  TEXT,
    sent_at           TEXT,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'confirmed')),
    received_at       TEXT NOT NULL,
    confirmed_at      TEXT,
    UNIQUE (partner_id, message_id)
);
INSERT INTO sns_subscriptions_per_partner
SELECT id, COALESCE(partner_id, ''), kind, message_id, topic_arn, token, subscribe_url, message, signature_version,
    signature, signing_cert_url, sent_at, status, received_at, confirmed_at
FROM sns_subscriptions;
DROP TABLE sns_subscriptions;
ALTER TABLE sns_subscriptions_per_partner RENAME TO sns_subscriptions;
CREATE INDEX sns_subscriptions_pending ON sns_subscriptions (partner_id) WHERE status = 'pending';
