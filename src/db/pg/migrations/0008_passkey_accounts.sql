-- Passkey-only accounts (see the SQLite migration 0015 for the comments).
ALTER TABLE webauthn_challenges ADD COLUMN subject TEXT;
