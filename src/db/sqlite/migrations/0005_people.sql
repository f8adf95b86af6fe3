-- Tessera schema 5: the audit log, TOTP second factors, per-session device details,
-- authentication methods carried to tokens, and per-client access rules.

CREATE TABLE audit_log (
    id     INTEGER PRIMARY KEY,
    at     INTEGER NOT NULL,
    event  TEXT    NOT NULL,
    actor  TEXT,
    target TEXT,
    ip     TEXT,
    -- JSON: what changed (before/after for administrative edits) or why it failed.
    detail TEXT    NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX audit_log_at ON audit_log(at);
CREATE INDEX audit_log_event ON audit_log(event, at);

-- One TOTP secret per user (RFC 6238); unconfirmed until the first code is entered.
CREATE TABLE totp (
    user_id      INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    secret       TEXT    NOT NULL,
    confirmed_at INTEGER,
    -- The last accepted time step: a code is refused once its step has been used.
    last_step    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
) STRICT;

CREATE TABLE recovery_codes (
    user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    code_hash BLOB    NOT NULL,
    used_at   INTEGER,
    PRIMARY KEY (user_id, code_hash)
) STRICT;

-- Authentication methods (RFC 8176), space-separated, from the session to its tokens.
ALTER TABLE sessions ADD COLUMN amr TEXT NOT NULL DEFAULT 'pwd';
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
ALTER TABLE sessions ADD COLUMN ip TEXT;
ALTER TABLE auth_codes ADD COLUMN amr TEXT NOT NULL DEFAULT 'pwd';
ALTER TABLE grants ADD COLUMN amr TEXT;
ALTER TABLE device_codes ADD COLUMN amr TEXT;

-- Only members of these groups may sign in to the client (empty: everyone).
ALTER TABLE clients ADD COLUMN allowed_groups TEXT NOT NULL DEFAULT '[]';
-- Per-client token lifetimes in seconds; NULL takes the server's.
ALTER TABLE clients ADD COLUMN access_token_ttl INTEGER;
ALTER TABLE clients ADD COLUMN refresh_token_ttl INTEGER;
-- May obtain the `tessera:admin` scope with client credentials (the admin API).
ALTER TABLE clients ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
