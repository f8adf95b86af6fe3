-- Introspection of any token, and third-party-initiated login (see the SQLite
-- migration 0016 for the comments).
ALTER TABLE clients ADD COLUMN introspect_any BIGINT NOT NULL DEFAULT 0;
ALTER TABLE clients ADD COLUMN initiate_login_uri TEXT;
