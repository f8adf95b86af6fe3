-- Background jobs that must run on one node at a time hold a lease: a row naming the
-- holder until a time; a node that dies simply lets it run out.
CREATE TABLE job_leases (
    name   TEXT    PRIMARY KEY,
    holder TEXT    NOT NULL,
    until  INTEGER NOT NULL
) STRICT;
