-- Passkey-only accounts: a passkey made for an account that does not exist yet (an
-- invitation accepted with a passkey) is bound to the link's digest in
-- `request_hash` and to the subject chosen for the account here, so that the
-- credential's user handle and the account's `sub` are the same.
ALTER TABLE webauthn_challenges ADD COLUMN subject TEXT;
