-- A resource server the administrator lets introspect every token (RFC 7662 §4: the
-- server decides which callers may learn what); other clients introspect only tokens
-- issued to them or naming them in `aud`.
ALTER TABLE clients ADD COLUMN introspect_any INTEGER NOT NULL DEFAULT 0;
-- Where a third party starts the client's sign-in (OpenID Connect Core §4,
-- Registration §2 `initiate_login_uri`); https only.
ALTER TABLE clients ADD COLUMN initiate_login_uri TEXT;
