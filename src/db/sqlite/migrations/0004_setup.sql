-- Tessera schema 4: the one-time link that creates the first administrator.
CREATE TABLE setup_tokens (
    token_hash BLOB    PRIMARY KEY,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
) STRICT;
