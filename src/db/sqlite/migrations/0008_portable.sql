-- Tessera schema 8: forms both SQLite and PostgreSQL accept. A client's allowed groups
-- become a table (by group id, so renames need no rewrite and a required group
-- cannot be deleted under a client), and usernames are matched case-insensitively
-- through an explicit index on lower(username) rather than a collation.

-- Fail closed: a name in a client's list that is no group becomes an (empty) group,
-- so that the client keeps admitting nobody rather than everybody.
INSERT INTO groups (name)
    SELECT DISTINCT j.value FROM clients c, json_each(c.allowed_groups) j
    WHERE j.value NOT IN (SELECT name FROM groups);

CREATE TABLE client_allowed_groups (
    client_id TEXT    NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
    group_id  INTEGER NOT NULL REFERENCES groups(id) ON DELETE RESTRICT,
    PRIMARY KEY (client_id, group_id)
) STRICT;
CREATE INDEX client_allowed_groups_group ON client_allowed_groups(group_id);

INSERT INTO client_allowed_groups (client_id, group_id)
    SELECT DISTINCT c.client_id, g.id FROM clients c, json_each(c.allowed_groups) j
    JOIN groups g ON g.name = j.value;

ALTER TABLE clients DROP COLUMN allowed_groups;

CREATE UNIQUE INDEX users_username_lower ON users(lower(username));
