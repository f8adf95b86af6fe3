-- Tessera schema 1: people, clients, keys, sessions and the grant machinery.
-- Bearer values (session ids, codes, refresh tokens, client secrets) are stored only as
-- SHA-256 digests; times are Unix seconds.

CREATE TABLE users (
    id             INTEGER PRIMARY KEY,
    sub            TEXT    NOT NULL UNIQUE,
    username       TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    email          TEXT,
    email_verified INTEGER NOT NULL DEFAULT 0,
    name           TEXT,
    password_hash  TEXT    NOT NULL,
    is_admin       INTEGER NOT NULL DEFAULT 0,
    disabled       INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE clients (
    client_id                 TEXT    PRIMARY KEY,
    name                      TEXT    NOT NULL,
    secret_hash               BLOB,
    redirect_uris             TEXT    NOT NULL,
    post_logout_redirect_uris TEXT    NOT NULL DEFAULT '[]',
    created_at                INTEGER NOT NULL,
    updated_at                INTEGER NOT NULL
) STRICT;

CREATE TABLE signing_keys (
    kid         TEXT    PRIMARY KEY,
    alg         TEXT    NOT NULL,
    private_pem TEXT    NOT NULL,
    public_jwk  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    retired_at  INTEGER
) STRICT;

CREATE TABLE sessions (
    id_hash    BLOB    PRIMARY KEY,
    sid        TEXT    NOT NULL UNIQUE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    auth_time  INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    ended_at   INTEGER
) STRICT;
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expiry ON sessions(expires_at);

-- An authorization request waiting for the user to sign in; the form only names it.
CREATE TABLE login_requests (
    id_hash      BLOB    PRIMARY KEY,
    csrf_hash    BLOB    NOT NULL,
    browser_hash BLOB    NOT NULL,
    params       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER
) STRICT;
CREATE INDEX login_requests_expiry ON login_requests(expires_at);

-- One grant per code redemption: the family its access and refresh tokens belong to.
CREATE TABLE grants (
    id         TEXT    PRIMARY KEY,
    client_id  TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE,
    scope      TEXT    NOT NULL,
    sid        TEXT,
    auth_time  INTEGER,
    nonce      TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
CREATE INDEX grants_user ON grants(user_id);
CREATE INDEX grants_client ON grants(client_id);
CREATE INDEX grants_expiry ON grants(expires_at);

CREATE TABLE auth_codes (
    code_hash      BLOB    PRIMARY KEY,
    grant_id       TEXT    NOT NULL,
    client_id      TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    user_id        INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    redirect_uri   TEXT    NOT NULL,
    scope          TEXT    NOT NULL,
    nonce          TEXT,
    code_challenge TEXT,
    sid            TEXT    NOT NULL,
    auth_time      INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER
) STRICT;
CREATE INDEX auth_codes_expiry ON auth_codes(expires_at);

CREATE TABLE refresh_tokens (
    token_hash BLOB    PRIMARY KEY,
    grant_id   TEXT    NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    scope      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
) STRICT;
CREATE INDEX refresh_tokens_grant ON refresh_tokens(grant_id);

-- Access tokens revoked one by one (RFC 7009); kept until they would have expired.
CREATE TABLE revoked_tokens (
    jti        TEXT    PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT;
