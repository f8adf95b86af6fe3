-- Tessera schema 2: per-client protocol settings, consent, extended claims, groups,
-- device authorization, client assertion replay protection and back-channel logout.

ALTER TABLE clients ADD COLUMN token_endpoint_auth_method TEXT NOT NULL DEFAULT 'client_secret_basic';
ALTER TABLE clients ADD COLUMN id_token_alg TEXT NOT NULL DEFAULT 'RS256';
ALTER TABLE clients ADD COLUMN consent_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN grant_types TEXT NOT NULL DEFAULT '["authorization_code","refresh_token"]';
ALTER TABLE clients ADD COLUMN always_issue_refresh INTEGER NOT NULL DEFAULT 1;
ALTER TABLE clients ADD COLUMN jwks TEXT;
-- Only for client_secret_jwt, whose HMAC key is the secret itself (RFC 7523 §2.2).
ALTER TABLE clients ADD COLUMN secret_for_hmac TEXT;
ALTER TABLE clients ADD COLUMN backchannel_logout_uri TEXT;
ALTER TABLE clients ADD COLUMN backchannel_logout_session_required INTEGER NOT NULL DEFAULT 0;

-- The OpenID Connect `claims` request parameter (Core §5.5), carried from the
-- authorization request to every token of the grant.
ALTER TABLE auth_codes ADD COLUMN claims_request TEXT;
ALTER TABLE grants ADD COLUMN claims_request TEXT;

-- Standard claims beyond name and email (given_name, phone_number, address …) as JSON.
ALTER TABLE users ADD COLUMN claims TEXT NOT NULL DEFAULT '{}';

CREATE TABLE consents (
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id  TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    scope      TEXT    NOT NULL,
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, client_id)
) STRICT;

CREATE TABLE groups (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
) STRICT;

CREATE TABLE user_groups (
    user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, group_id)
) STRICT;

-- RFC 8628 device authorization: the device polls with the device code, the person
-- types the user code.
CREATE TABLE device_codes (
    device_hash  BLOB    PRIMARY KEY,
    user_code    TEXT    NOT NULL UNIQUE,
    client_id    TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    scope        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    interval     INTEGER NOT NULL,
    last_poll_at INTEGER,
    user_id      INTEGER REFERENCES users(id) ON DELETE CASCADE,
    sid          TEXT,
    auth_time    INTEGER,
    decided_at   INTEGER,
    approved     INTEGER,
    used_at      INTEGER
) STRICT;
CREATE INDEX device_codes_expiry ON device_codes(expires_at);

-- RFC 7523 §3: a client assertion's jti is accepted once.
CREATE TABLE client_assertions (
    jti        TEXT    NOT NULL,
    client_id  TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (client_id, jti)
) STRICT;
CREATE INDEX client_assertions_expiry ON client_assertions(expires_at);

-- Back-Channel Logout 1.0: logout tokens waiting for delivery, retried with back-off.
CREATE TABLE logout_deliveries (
    id         INTEGER PRIMARY KEY,
    client_id  TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    uri        TEXT    NOT NULL,
    token      TEXT    NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX logout_deliveries_next ON logout_deliveries(next_at);
