-- What the nodes on this database tell each other, and the console
-- sessions they share (docs/operations.md, "Several nodes"). Additive: a
-- node of the version before neither reads nor writes these tables.
-- None of it is data to keep: an export leaves it out.

-- A note too large for a notification's payload (8000 bytes), read back
-- by every node's listener by its id, then pruned.
CREATE TABLE node_events (
    id          bigserial PRIMARY KEY,
    body        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX node_events_by_age ON node_events (created_at);

-- Console sessions, so that a session opened on one node is one on every
-- node: the SHA-256 of the cookie's value (never the value), the company
-- key a company session stands on (its sessions end with it), and who it
-- is (the service's JSON). An expired one is never read and is pruned.
CREATE TABLE console_sessions (
    id_hash     bytea PRIMARY KEY,
    key_id      bigint,
    record      jsonb NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX console_sessions_by_key ON console_sessions (key_id);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
