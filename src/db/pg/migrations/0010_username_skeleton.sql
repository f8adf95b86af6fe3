-- Look-alike usernames (see the SQLite migration 0016 for the comments).
ALTER TABLE users ADD COLUMN skeleton TEXT;
CREATE UNIQUE INDEX users_skeleton ON users (skeleton);
