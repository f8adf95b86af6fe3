-- The second wave of protocol (see the SQLite migration 0013 for the comments).

-- Per-client switches (the names of RFC 7591 metadata where one exists).
ALTER TABLE clients ADD COLUMN require_pushed_authorization_requests BIGINT  NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN require_signed_request_object BIGINT  NOT NULL DEFAULT 0;
-- RFC 9449 §5.2: every access token of the client must be DPoP-bound.
ALTER TABLE clients ADD COLUMN dpop_bound_access_tokens BIGINT  NOT NULL DEFAULT 0;
-- The client's JWK Set by reference (RFC 7591 §2), fetched with the outbound limits.
ALTER TABLE clients ADD COLUMN jwks_uri TEXT;
ALTER TABLE clients ADD COLUMN frontchannel_logout_uri TEXT;
ALTER TABLE clients ADD COLUMN frontchannel_logout_session_required BIGINT  NOT NULL DEFAULT 0;
-- How the client came to be: `admin` (CLI, pages, API, apply), `registration`
-- (RFC 7591) or `metadata_document` (its client_id is the URL of its metadata).
ALTER TABLE clients ADD COLUMN origin TEXT NOT NULL DEFAULT 'admin';
-- SHA-256 of the RFC 7592 registration access token; only for registered clients.
ALTER TABLE clients ADD COLUMN registration_token_hash BYTEA;
-- What a registration or a metadata document said for people to see (client_uri,
-- logo_uri, policy_uri, tos_uri, contacts, software_id, software_version), as JSON.
ALTER TABLE clients ADD COLUMN registration_metadata TEXT;
-- A metadata-document client is fetched again after this time (HTTP caching rules).
ALTER TABLE clients ADD COLUMN metadata_expires_at BIGINT ;

-- RFC 8707: what the authorization asked tokens to be for (space-separated URIs),
-- and RFC 9449 §10: the key a code is bound to by `dpop_jkt`.
ALTER TABLE auth_codes ADD COLUMN resource TEXT;
ALTER TABLE auth_codes ADD COLUMN dpop_jkt TEXT;
-- A grant's resources, and the key its refresh tokens are bound to (public clients).
ALTER TABLE grants ADD COLUMN resource TEXT;
ALTER TABLE grants ADD COLUMN dpop_jkt TEXT;

-- RFC 9126: a pushed authorization request, named by the `request_uri` it got. Used
-- once, within its lifetime, by the client that pushed it.
CREATE TABLE pushed_requests (
    -- SHA-256 of the random part of `urn:ietf:params:oauth:request_uri:…`.
    handle_hash BYTEA   PRIMARY KEY,
    client_id   TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    -- The authorization parameters as pushed (a JSON list of [name, value] pairs).
    params      TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    expires_at  BIGINT  NOT NULL,
    used_at     BIGINT 
);
CREATE INDEX pushed_requests_expiry ON pushed_requests(expires_at);

-- One-time values seen: DPoP proof `jti`s (RFC 9449 §11.1) and request object
-- `jti`s (RFC 9101 §10.8), kept until the value could no longer be accepted, so a
-- replay is refused on every node.
CREATE TABLE seen_jtis (
    kind       TEXT    NOT NULL,
    jti        TEXT    NOT NULL,
    expires_at BIGINT  NOT NULL,
    PRIMARY KEY (kind, jti)
);
CREATE INDEX seen_jtis_expiry ON seen_jtis(expires_at);

-- RFC 7591 §3: initial access tokens that allow a dynamic registration.
CREATE TABLE registration_tokens (
    token_hash BYTEA   PRIMARY KEY,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL,
    -- Registrations it still allows; NULL: any number until it expires.
    uses_left  BIGINT ,
    created_by TEXT    NOT NULL
);
CREATE INDEX registration_tokens_expiry ON registration_tokens(expires_at);

-- RFC 8707: a resource server access tokens may be restricted to.
CREATE TABLE resources (
    uri        TEXT    PRIMARY KEY,
    -- Space-separated scopes the resource accepts; empty: any scope of the request.
    scopes     TEXT    NOT NULL DEFAULT '',
    created_at BIGINT  NOT NULL
);
