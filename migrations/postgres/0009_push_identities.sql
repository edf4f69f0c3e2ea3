-- How push brokers prove a partner, one partner each: pubsub, the service account (the `email` of
-- the Google-signed OIDC token) of a Pub/Sub push subscription; sns, the ARN of an SNS topic whose
-- signed messages are the partner's.
ALTER TABLE partner_identities DROP CONSTRAINT partner_identities_role_check,
    ADD CONSTRAINT partner_identities_role_check CHECK (role IN ('sender', 'receiver', 'as2', 'pubsub', 'sns'));
CREATE UNIQUE INDEX partner_identities_one_pubsub ON partner_identities (identity) WHERE role = 'pubsub';
CREATE UNIQUE INDEX partner_identities_one_sns ON partner_identities (identity) WHERE role = 'sns';
