-- Trading partners: who may post, as which EDI senders, to which of our receiver identities.
CREATE TABLE partners (
    id                    TEXT PRIMARY KEY,
    name                  TEXT NOT NULL,
    status                TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
    -- NULL: the server-wide default applies.
    max_body_bytes        INTEGER,
    requests_per_minute   INTEGER,
    -- strict: every validation rule; lenient: bytes outside the charset are read as ISO-8859-1 and
    -- repeated ST02/GS06/UNH/UNG references are accepted.
    validation            TEXT NOT NULL DEFAULT 'strict' CHECK (validation IN ('strict', 'lenient')),
    -- reject: a reused control number with other content is a 409; process: the content decides, and
    -- it is recorded under `{control number}#{fingerprint prefix}`.
    conflict_policy       TEXT NOT NULL DEFAULT 'reject' CHECK (conflict_policy IN ('reject', 'process')),
    created_at            TEXT NOT NULL
);

-- `{standard}:{qualifier}:{id}`, the same form as inbox.source. A sender identity belongs to one partner.
CREATE TABLE partner_identities (
    partner_id TEXT NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('sender', 'receiver')),
    identity   TEXT NOT NULL,
    PRIMARY KEY (role, identity, partner_id)
);
CREATE UNIQUE INDEX partner_identities_one_sender ON partner_identities (identity) WHERE role = 'sender';

-- API keys are stored as SHA-256 of a 256-bit random key (shown once). Standard Webhooks secrets are
-- stored as issued: verifying an HMAC needs the secret itself.
CREATE TABLE partner_credentials (
    id         BLOB PRIMARY KEY,
    partner_id TEXT NOT NULL REFERENCES partners (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('api_key', 'webhook_secret')),
    key_sha256 TEXT UNIQUE,
    secret     TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX partner_credentials_partner ON partner_credentials (partner_id) WHERE revoked_at IS NULL;

-- Every delivery attempt, accepted or not, without secrets.
CREATE TABLE deliveries (
    id             BLOB PRIMARY KEY,
    inbox_id       BLOB REFERENCES inbox (id) ON UPDATE CASCADE ON DELETE SET NULL,
    partner_id     TEXT,
    source         TEXT,
    message_id     TEXT,
    outcome        TEXT NOT NULL,
    status         INTEGER NOT NULL,
    request_id     TEXT,
    remote_addr    TEXT,
    user_agent     TEXT,
    content_type   TEXT,
    body_bytes     INTEGER NOT NULL,
    received_at    TEXT NOT NULL
);
CREATE INDEX deliveries_inbox ON deliveries (inbox_id, received_at);
