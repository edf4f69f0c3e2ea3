-- Front doors: how a delivery reached us (a push broker, an AS2 gateway, a queue) is kept with its
-- audit row; the key stays the EDI key.
ALTER TABLE deliveries
    -- direct, webhook, cloudevents, pubsub, sns, as2, amqp, nats.
    ADD COLUMN door             text NOT NULL DEFAULT 'direct',
    -- The transport's own message id (ce-id, Pub/Sub messageId, SNS MessageId, AS2 Message-ID,
    -- webhook-id, AMQP message-id, JetStream stream sequence).
    ADD COLUMN transport_id     text,
    -- The door's other metadata (JSON, bounded): ce-source, subscription, TopicArn, AS2-From, ….
    ADD COLUMN transport        text,
    -- The transport id was seen before with another interchange key.
    ADD COLUMN transport_reused boolean NOT NULL DEFAULT false;
CREATE INDEX deliveries_transport_id ON deliveries (transport_id, door) WHERE transport_id IS NOT NULL;

-- quarantine: a conflict or an invalid interchange is answered 2xx and held for an operator.
ALTER TABLE partners DROP CONSTRAINT partners_conflict_policy_check,
    ADD CONSTRAINT partners_conflict_policy_check CHECK (conflict_policy IN ('reject', 'process', 'quarantine')),
    -- Document types (JSON array) whose interchanges are naturally idempotent and skip the inbox.
    ADD COLUMN bypass_documents text NOT NULL DEFAULT '[]';

-- as2: the AS2 names (AS2-From) a partner's gateway sends as; one partner each.
ALTER TABLE partner_identities DROP CONSTRAINT partner_identities_role_check,
    ADD CONSTRAINT partner_identities_role_check CHECK (role IN ('sender', 'receiver', 'as2'));
CREATE UNIQUE INDEX partner_identities_one_as2 ON partner_identities (identity) WHERE role = 'as2';

-- Deliveries a broker would retry for days (a conflict, an invalid interchange) of partners whose
-- conflict policy is `quarantine`: held with their payload until an operator releases or discards them.
CREATE TABLE quarantine (
    id             uuid PRIMARY KEY,
    partner_id     text NOT NULL,
    source         text NOT NULL,
    message_id     text NOT NULL,
    payload_sha256 text NOT NULL,
    reason         text NOT NULL CHECK (reason IN ('conflict', 'invalid')),
    status         text NOT NULL CHECK (status IN ('held', 'released', 'discarded')),
    payload        bytea NOT NULL,
    content_type   text,
    -- The problem the delivery would have been answered with.
    problem        text NOT NULL,
    -- The interchange it conflicts with, or the rejected interchange.
    interchange_id uuid NOT NULL,
    received_at    timestamptz NOT NULL,
    resolved_at    timestamptz,
    -- The interchange a release recorded.
    released_as    uuid,
    UNIQUE (source, message_id, payload_sha256)
);
CREATE INDEX quarantine_status ON quarantine (status, id);

-- SNS subscription and unsubscribe confirmations, kept for an operator to confirm (we do not call AWS).
CREATE TABLE sns_subscriptions (
    id                uuid PRIMARY KEY,
    partner_id        text,
    kind              text NOT NULL CHECK (kind IN ('SubscriptionConfirmation', 'UnsubscribeConfirmation')),
    message_id        text NOT NULL UNIQUE,
    topic_arn         text NOT NULL,
    token             text NOT NULL,
    subscribe_url     text NOT NULL,
    message           text,
    signature_version text,
    signature         text,
    signing_cert_url  text,
    sent_at           text,
    status            text NOT NULL CHECK (status IN ('pending', 'confirmed')),
    received_at       timestamptz NOT NULL,
    confirmed_at      timestamptz
);
