-- Branding (see the SQLite migration 0014 for the comments).
CREATE TABLE branding (
    id           BIGINT PRIMARY KEY CHECK (id = 1),
    org_name     TEXT,
    accent_color TEXT,
    stylesheet   TEXT,
    logo         BYTEA,
    logo_type    TEXT,
    version      BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);

CREATE TABLE client_logos (
    client_id  TEXT   PRIMARY KEY REFERENCES clients(client_id) ON DELETE CASCADE,
    logo       BYTEA  NOT NULL,
    logo_type  TEXT   NOT NULL,
    updated_at BIGINT NOT NULL
);
