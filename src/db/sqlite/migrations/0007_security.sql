-- Tessera schema 7: claims named in a consent, re-authentication time on sessions,
-- per-client scopes for client credentials, browser origins (CORS) and an absolute
-- grant lifetime.

-- Claims approved one by one through the `claims` request parameter (Core §5.5),
-- space-separated, beside the approved scopes.
ALTER TABLE consents ADD COLUMN claims TEXT NOT NULL DEFAULT '';

-- When the user last proved it is them again (current password), for credential
-- changes that need a recent authentication.
ALTER TABLE sessions ADD COLUMN reauth_at INTEGER;

-- JSON lists: scopes a client may obtain for itself with client credentials, and
-- browser origins allowed to call the token endpoints (beyond its redirect URIs').
ALTER TABLE clients ADD COLUMN client_scopes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE clients ADD COLUMN web_origins TEXT NOT NULL DEFAULT '[]';
-- Seconds a grant may be refreshed from its first sign-in; NULL takes the server's.
ALTER TABLE clients ADD COLUMN grant_lifetime INTEGER;

-- Server-wide secrets generated once and shared by every process on this database
-- (the key of the pseudonyms that stand for unknown sign-in names in logs).
CREATE TABLE server_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;

-- Logout tokens are signed when they are sent, by the server that sends them (with
-- its issuer, a fresh `iat`/`exp` for every attempt), so a delivery records whom to
-- tell about which session rather than a token. Pending rows hold tokens signed
-- before and are not carried over: their two-minute lifetime has passed by the
-- time any retry would send them.
DROP TABLE logout_deliveries;
CREATE TABLE logout_deliveries (
    id         INTEGER PRIMARY KEY,
    client_id  TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    uri        TEXT    NOT NULL,
    sub        TEXT,
    sid        TEXT    NOT NULL,
    wants_sid  INTEGER NOT NULL,
    alg        TEXT    NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX logout_deliveries_next ON logout_deliveries(next_at);
