-- What several nodes on this database share while they serve: the
-- duplicate-payload window, the requests counted per key and minute and
-- the pacing of calls to the authority.
-- None of it is data to keep: an export leaves it out.

-- A payload being processed (document_id NULL) or that made a document,
-- claimed until expires_at by the node that wrote token.
CREATE TABLE payload_claims (
    company_id    bigint NOT NULL,
    payload_hash  bytea NOT NULL,
    token         bigint NOT NULL,
    document_id   bigint,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (company_id, payload_hash)
);
CREATE INDEX payload_claims_by_expiry ON payload_claims (expires_at);

-- The window of the documents made in the last five minutes (the default
-- window) before this table existed.
INSERT INTO payload_claims (company_id, payload_hash, token, document_id, expires_at)
SELECT DISTINCT ON (company_id, payload_hash)
       company_id, payload_hash, 0, id, created_at + interval '5 minutes'
FROM documents
WHERE created_at > now() - interval '5 minutes'
ORDER BY company_id, payload_hash, created_at DESC;

-- Requests per API key in the minute starting at `minute` (Unix seconds).
-- Unlogged, as the pacing below: a count is written by every keyed request
-- and is worth nothing after a crash of the database, so it costs no WAL
-- and no flush.
CREATE UNLOGGED TABLE rate_windows (
    key_id   bigint NOT NULL,
    minute   bigint NOT NULL,
    n        integer NOT NULL,
    PRIMARY KEY (key_id, minute)
);

-- The authority's pacing shared by every node (spec §8: at most 10 calls
-- a second): the start instants of the latest calls, one row per call the
-- window allows; a call may start when the oldest is a window old.
CREATE UNLOGGED TABLE authority_starts (
    slot  integer PRIMARY KEY,
    at    timestamptz NOT NULL
);
