-- Branding, stored so that every node shows the same: the organisation's name, its
-- logo (PNG or a checked SVG), the accent colour and an extra stylesheet, in one row;
-- `version` grows with each change and names the cached resources (`?v=`).
CREATE TABLE branding (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    org_name     TEXT,
    accent_color TEXT,
    stylesheet   TEXT,
    logo         BLOB,
    logo_type    TEXT,
    version      INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

-- An application's own logo, shown on its login and consent pages.
CREATE TABLE client_logos (
    client_id  TEXT    PRIMARY KEY REFERENCES clients(client_id) ON DELETE CASCADE,
    logo       BLOB    NOT NULL,
    logo_type  TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
