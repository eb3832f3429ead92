-- What the nodes on this database tell each other (docs/operations.md,
-- "Several nodes"). Additive: a node of the version before neither reads
-- nor writes these tables.
-- None of it is data to keep: an export leaves it out.

-- A note too large for a notification's payload (8000 bytes), read back
-- by every node's listener by its id, then pruned.
CREATE TABLE node_events (
    id          bigserial PRIMARY KEY,
    body        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX node_events_by_age ON node_events (created_at);
