-- Tessera schema 6: passkeys (WebAuthn credentials) and the challenges of their
-- ceremonies.

CREATE TABLE passkeys (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    credential_id BLOB    NOT NULL UNIQUE,
    public_jwk    TEXT    NOT NULL,
    alg           TEXT    NOT NULL,
    sign_count    INTEGER NOT NULL DEFAULT 0,
    name          TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER
) STRICT;
CREATE INDEX passkeys_user ON passkeys(user_id);

-- A challenge is used once: for registering (bound to the user) or for signing in
-- (bound to the parked login request).
CREATE TABLE webauthn_challenges (
    challenge_hash BLOB    PRIMARY KEY,
    purpose        TEXT    NOT NULL,
    user_id        INTEGER,
    request_hash   BLOB,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER
) STRICT;
CREATE INDEX webauthn_challenges_expiry ON webauthn_challenges(expires_at);
