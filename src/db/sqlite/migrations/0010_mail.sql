-- Email and the account lifecycle.

-- Mail waiting to be sent, queued in the transaction of the action that causes it and
-- sent by the mailer; kept after sending (for the admin queue view) until purged.
CREATE TABLE mail_outbox (
    id          INTEGER PRIMARY KEY,
    to_addr     TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    text_body   TEXT    NOT NULL,
    html_body   TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    -- The account the mail is about (counted for the per-account limit); NULL once
    -- the account is deleted, or for a mail to an address with no account.
    user_id     INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at  INTEGER NOT NULL,
    next_at     INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    sent_at     INTEGER,
    failed_at   INTEGER,
    last_answer TEXT
) STRICT;
CREATE INDEX mail_outbox_due ON mail_outbox (next_at) WHERE sent_at IS NULL AND failed_at IS NULL;
CREATE INDEX mail_outbox_user ON mail_outbox (user_id, created_at);
CREATE INDEX mail_outbox_addr ON mail_outbox (lower(to_addr), created_at);

-- Single-use links and codes sent by mail: verification, reset, sign-in, invitation,
-- second factor. Only digests are stored.
CREATE TABLE email_tokens (
    id          INTEGER PRIMARY KEY,
    digest      BLOB    NOT NULL UNIQUE,
    purpose     TEXT    NOT NULL,
    user_id     INTEGER REFERENCES users(id) ON DELETE CASCADE,
    email       TEXT    NOT NULL,
    data        TEXT    NOT NULL DEFAULT '{}',
    code_digest BLOB,
    -- The parked authorization request a sign-in code completes.
    request_hash BLOB,
    attempts    INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER
) STRICT;
CREATE INDEX email_tokens_user ON email_tokens (user_id, purpose);
CREATE INDEX email_tokens_request ON email_tokens (request_hash);

-- Browsers a user has signed in from (for "sign-in from a new device" mail), and
-- those trusted to skip the second factor until `trusted_until`.
CREATE TABLE devices (
    id            INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    digest        BLOB    NOT NULL,
    label         TEXT    NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    trusted_until INTEGER,
    UNIQUE (user_id, digest)
) STRICT;

-- Per-user choices and states of the lifecycle.
ALTER TABLE users ADD COLUMN email_mfa INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN notify_new_device INTEGER NOT NULL DEFAULT 1;
-- An account from open sign-up that may not sign in before its address is verified.
ALTER TABLE users ADD COLUMN must_verify INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN deletion_requested_at INTEGER;
