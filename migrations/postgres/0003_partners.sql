-- Trading partners: who may post, as which EDI senders, to which of our receiver identities.
CREATE TABLE partners (
    id                    text PRIMARY KEY,
    name                  text NOT NULL,
    status                text NOT NULL CHECK (status IN ('active', 'suspended')),
    -- NULL: the server-wide default applies.
    max_body_bytes        bigint,
    requests_per_minute   integer,
    -- strict: every validation rule; lenient: bytes outside the charset are read as ISO-8859-1 and
    -- repeated ST02/GS06/UNH/UNG references are accepted.
    validation            text NOT NULL DEFAULT 'strict' CHECK (validation IN ('strict', 'lenient')),
    -- reject: a reused control number with other content is a 409; process: the content decides, and
    -- it is recorded under `{control number}#{fingerprint prefix}`.
    conflict_policy       text NOT NULL DEFAULT 'reject' CHECK (conflict_policy IN ('reject', 'process')),
    created_at            timestamptz NOT NULL
);

-- `{standard}:{qualifier}:{id}`, the same form as inbox.source. A sender identity belongs to one partner.
CREATE TABLE partner_identities (
    partner_id text NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('sender', 'receiver')),
    identity   text NOT NULL,
    PRIMARY KEY (role, identity, partner_id)
);
CREATE UNIQUE INDEX partner_identities_one_sender ON partner_identities (identity) WHERE role = 'sender';

-- API keys are stored as SHA-256 of a 256-bit random key (shown once). Standard Webhooks secrets are
-- stored as issued: verifying an HMAC needs the secret itself.
CREATE TABLE partner_credentials (
    id         uuid PRIMARY KEY,
    partner_id text NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('api_key', 'webhook_secret')),
    key_sha256 text UNIQUE,
    secret     text,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX partner_credentials_partner ON partner_credentials (partner_id) WHERE revoked_at IS NULL;

-- Every delivery attempt, accepted or not, without secrets.
CREATE TABLE deliveries (
    id             uuid PRIMARY KEY,
    inbox_id       uuid REFERENCES inbox (id) ON UPDATE CASCADE ON DELETE SET NULL,
    partner_id     text,
    source         text,
    message_id     text,
    outcome        text NOT NULL,
    status         integer NOT NULL,
    request_id     text,
    remote_addr    text,
    user_agent     text,
    content_type   text,
    body_bytes     bigint NOT NULL,
    received_at    timestamptz NOT NULL
);
CREATE INDEX deliveries_inbox ON deliveries (inbox_id, received_at);
