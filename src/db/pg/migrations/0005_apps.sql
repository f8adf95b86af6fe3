-- Forward-auth applications and claim mapping (see the SQLite migration 0012 for the comments).

CREATE TABLE apps (
    id            TEXT    PRIMARY KEY,
    url           TEXT    NOT NULL,
    host          TEXT    NOT NULL UNIQUE,
    require_mfa   BIGINT  NOT NULL DEFAULT 0,
    header_prefix TEXT    NOT NULL DEFAULT 'Remote-',
    created_at    BIGINT  NOT NULL,
    updated_at    BIGINT  NOT NULL
);

CREATE TABLE app_allowed_groups (
    app_id   TEXT    NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    group_id BIGINT  NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    PRIMARY KEY (app_id, group_id)
);
CREATE INDEX app_allowed_groups_group ON app_allowed_groups(group_id);

CREATE TABLE forward_auth_tokens (
    token_hash BYTEA   PRIMARY KEY,
    sid        TEXT    NOT NULL REFERENCES sessions(sid) ON DELETE CASCADE,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL
);
CREATE INDEX forward_auth_tokens_sid ON forward_auth_tokens(sid);
CREATE INDEX forward_auth_tokens_expiry ON forward_auth_tokens(expires_at);

CREATE TABLE forward_auth_access (
    token_hash BYTEA   NOT NULL REFERENCES forward_auth_tokens(token_hash) ON DELETE CASCADE,
    app_id     TEXT    NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    at         BIGINT  NOT NULL,
    PRIMARY KEY (token_hash, app_id)
);
CREATE INDEX forward_auth_access_app ON forward_auth_access(app_id);

CREATE TABLE client_claims (
    client_id       TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    claim           TEXT    NOT NULL,
    source          TEXT    NOT NULL,
    scope           TEXT,
    in_id_token     BIGINT  NOT NULL,
    in_access_token BIGINT  NOT NULL,
    in_userinfo     BIGINT  NOT NULL,
    default_value   TEXT,
    position        BIGINT  NOT NULL,
    PRIMARY KEY (client_id, claim)
);

CREATE TABLE client_claim_values (
    client_id TEXT    NOT NULL,
    claim     TEXT    NOT NULL,
    position  BIGINT  NOT NULL,
    group_id  BIGINT  NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    value     TEXT    NOT NULL,
    PRIMARY KEY (client_id, claim, position),
    FOREIGN KEY (client_id, claim) REFERENCES client_claims(client_id, claim) ON DELETE CASCADE
);
CREATE INDEX client_claim_values_group ON client_claim_values(group_id);
