-- How push brokers prove a partner, one partner each: pubsub, the service account (the `email` of
-- the Google-signed OIDC token) of a Pub/Sub push subscription; sns, the ARN of an SNS topic whose
-- signed messages are the partner's. SQLite cannot change a CHECK constraint: the table is rebuilt.
CREATE TABLE partner_identities_rebuilt (
    partner_id TEXT NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('sender', 'receiver', 'as2', 'pubsub', 'sns')),
    identity   TEXT NOT NULL,
    PRIMARY KEY (role, identity, partner_id)
);
INSERT INTO partner_identities_rebuilt SELECT partner_id, role, identity FROM partner_identities;
DROP TABLE partner_identities;
ALTER TABLE partner_identities_rebuilt RENAME TO partner_identities;
CREATE UNIQUE INDEX partner_identities_one_sender ON partner_identities (identity) WHERE role = 'sender';
CREATE UNIQUE INDEX partner_identities_one_as2 ON partner_identities (identity) WHERE role = 'as2';
CREATE UNIQUE INDEX partner_identities_one_pubsub ON partner_identities (identity) WHERE role = 'pubsub';
CREATE UNIQUE INDEX partner_identities_one_sns ON partner_identities (identity) WHERE role = 'sns';
