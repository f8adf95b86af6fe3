-- Applications behind a reverse proxy that asks Tessera who may pass (forward-auth),
-- and per-client claim mapping.

-- An application protected through forward-auth, matched by the host of the URL the
-- proxy forwards.
CREATE TABLE apps (
    id            TEXT    PRIMARY KEY,
    -- The origin as registered (`https://app.example.org`).
    url           TEXT    NOT NULL,
    -- Its host, lower case, with the port when it is not the scheme's default.
    host          TEXT    NOT NULL UNIQUE,
    require_mfa   INTEGER NOT NULL DEFAULT 0,
    header_prefix TEXT    NOT NULL DEFAULT 'Remote-',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;

-- Only members of one of these groups may pass; none lets every signed-in user.
CREATE TABLE app_allowed_groups (
    app_id   TEXT    NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (app_id, group_id)
) STRICT;
CREATE INDEX app_allowed_groups_group ON app_allowed_groups(group_id);

-- The `tessera_fa` cookie's token (SHA-256), bound to the SSO session it came from:
-- ending the session ends it.
CREATE TABLE forward_auth_tokens (
    token_hash BLOB    PRIMARY KEY,
    sid        TEXT    NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX forward_auth_tokens_sid ON forward_auth_tokens(sid);
CREATE INDEX forward_auth_tokens_expiry ON forward_auth_tokens(expires_at);

-- The first access of a token to an app, so that it is audited once, not per request.
CREATE TABLE forward_auth_access (
    token_hash BLOB    NOT NULL REFERENCES forward_auth_tokens(token_hash) ON DELETE CASCADE,
    app_id     TEXT    NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    at         INTEGER NOT NULL,
    PRIMARY KEY (token_hash, app_id)
) STRICT;
CREATE INDEX forward_auth_access_app ON forward_auth_access(app_id);

-- A claim a client's tokens carry by rule (docs/PROTOCOL.md "Claim mapping").
CREATE TABLE client_claims (
    client_id       TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    claim           TEXT    NOT NULL,
    -- What the value is: a user attribute (`groups`, `preferred_username`, `email`, …)
    -- or `group_values` (the first of `client_claim_values` the user's groups match).
    source          TEXT    NOT NULL,
    -- Released only when this scope is granted; NULL: whatever the scope.
    scope           TEXT,
    in_id_token     INTEGER NOT NULL,
    in_access_token INTEGER NOT NULL,
    in_userinfo     INTEGER NOT NULL,
    -- `group_values`: the value when no group matches (NULL: the claim is left out).
    default_value   TEXT,
    position        INTEGER NOT NULL,
    PRIMARY KEY (client_id, claim)
) STRICT;

-- `group_values`: a group and the value it maps to, tried in `position` order.
CREATE TABLE client_claim_values (
    client_id TEXT    NOT NULL,
    claim     TEXT    NOT NULL,
    position  INTEGER NOT NULL,
    group_id  INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    value     TEXT    NOT NULL,
    PRIMARY KEY (client_id, claim, position),
    FOREIGN KEY (client_id, claim) REFERENCES client_claims(client_id, claim) ON DELETE CASCADE
) STRICT;
CREATE INDEX client_claim_values_group ON client_claim_values(group_id);
