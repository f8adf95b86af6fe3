-- Sign-in through upstream identity providers (see the SQLite migration 0011 for the comments).
CREATE TABLE providers (
    id                TEXT    PRIMARY KEY,
    kind              TEXT    NOT NULL,
    name              TEXT    NOT NULL,
    issuer            TEXT,
    client_id         TEXT    NOT NULL,
    client_secret     TEXT    NOT NULL,
    scope             TEXT    NOT NULL,
    jit               BIGINT  NOT NULL DEFAULT 0,
    link_by_email     BIGINT  NOT NULL DEFAULT 0,
    require_local_mfa BIGINT  NOT NULL DEFAULT 0,
    group_claim       TEXT,
    created_at        BIGINT  NOT NULL,
    updated_at        BIGINT  NOT NULL
);

CREATE TABLE provider_groups (
    provider_id TEXT   NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    upstream    TEXT   NOT NULL,
    group_id    BIGINT NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (provider_id, upstream, group_id)
);

CREATE TABLE identities (
    provider_id  TEXT   NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    subject      TEXT   NOT NULL,
    user_id      BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email        TEXT,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    PRIMARY KEY (provider_id, subject),
    UNIQUE (provider_id, user_id)
);
CREATE INDEX identities_user ON identities (user_id);

ALTER TABLE sessions ADD COLUMN fed_provider TEXT REFERENCES providers(id) ON DELETE SET NULL;
ALTER TABLE sessions ADD COLUMN fed_subject TEXT;
ALTER TABLE sessions ADD COLUMN fed_sid TEXT;
CREATE INDEX sessions_fed ON sessions (fed_provider, fed_subject) WHERE fed_provider IS NOT NULL;
