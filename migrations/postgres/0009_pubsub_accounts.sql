-- pubsub: the service account (the `email` of the Google-signed OIDC token) of a Pub/Sub push
-- subscription that delivers a partner's interchanges; the verified token proves the partner. One
-- partner each.
ALTER TABLE partner_identities DROP CONSTRAINT partner_identities_role_check,
    ADD CONSTRAINT partner_identities_role_check CHECK (role IN ('sender', 'receiver', 'as2', 'pubsub'));
CREATE UNIQUE INDEX partner_identities_one_pubsub ON partner_identities (identity) WHERE role = 'pubsub';
