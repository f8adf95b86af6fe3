-- Look-alike usernames: the confusable skeleton (UTS #39 §4) of the lower-cased NFKC
-- username, computed by Tessera (`domain::username_skeleton`) when an account is made.
-- The unique index lets only one of `admin`, `аdmin` (Cyrillic а) and `admın` (dotless ı)
-- exist, also when two sign-ups race. Rows made before are filled in at start; a row
-- whose skeleton another row already holds stays NULL (a unique index allows many).
ALTER TABLE users ADD COLUMN skeleton TEXT;
CREATE UNIQUE INDEX users_skeleton ON users(skeleton);
