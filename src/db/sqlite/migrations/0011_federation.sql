-- Sign-in through upstream identity providers (OpenID Connect, GitHub).

-- An upstream provider Tessera is a relying party of.
CREATE TABLE providers (
    id                TEXT    PRIMARY KEY,
    kind              TEXT    NOT NULL,
    name              TEXT    NOT NULL,
    -- OpenID Connect: the upstream's issuer; GitHub: NULL for github.com, or the base
    -- URL of a GitHub Enterprise Server.
    issuer            TEXT,
    client_id         TEXT    NOT NULL,
    -- Sealed with the master key when one is set (`sealed:v1:`), as signing keys are.
    client_secret     TEXT    NOT NULL,
    scope             TEXT    NOT NULL,
    jit               INTEGER NOT NULL DEFAULT 0,
    link_by_email     INTEGER NOT NULL DEFAULT 0,
    require_local_mfa INTEGER NOT NULL DEFAULT 0,
    -- The claim whose values are mapped to local groups (NULL: no mapping).
    group_claim       TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

-- An upstream group value and the local group it stands for.
CREATE TABLE provider_groups (
    provider_id TEXT    NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    upstream    TEXT    NOT NULL,
    group_id    INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (provider_id, upstream, group_id)
) STRICT;

-- An upstream account linked to a local one: one per provider and user.
CREATE TABLE identities (
    provider_id  TEXT    NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
    subject      TEXT    NOT NULL,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- What the upstream said at the last sign-in, shown to the user and administrators.
    email        TEXT,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    PRIMARY KEY (provider_id, subject),
    UNIQUE (provider_id, user_id)
) STRICT;
CREATE INDEX identities_user ON identities (user_id);

-- A session opened through an upstream remembers whose, for the upstream's
-- back-channel logout (matched by its `sid`, else its `sub`).
ALTER TABLE sessions ADD COLUMN fed_provider TEXT REFERENCES providers(id) ON DELETE SET NULL;
ALTER TABLE sessions ADD COLUMN fed_subject TEXT;
ALTER TABLE sessions ADD COLUMN fed_sid TEXT;
CREATE INDEX sessions_fed ON sessions (fed_provider, fed_subject) WHERE fed_provider IS NOT NULL;
