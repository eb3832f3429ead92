-- The nodes serving from this database, each alive while its lease runs
-- (renewed every few seconds): a node whose lease has expired is dead, and
-- the other nodes take over its queued jobs, its claims and its half-built
-- documents. Additive: a node of the previous version writes none of the
-- columns below, which stay NULL (no owner: adopted as a dead node's).

-- live_since: since when the lease has run without a break (a renewal
-- after it expired starts it again); a node adopts only once its own has
-- run a whole lease, so that after the database was away every node has
-- renewed its own before any judges another dead.
CREATE TABLE node_leases (
    node        text PRIMARY KEY,
    live_since  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

-- The node whose timetable holds the job (the last to write it).
ALTER TABLE jobs ADD COLUMN node text;
CREATE INDEX jobs_by_node ON jobs (node);

-- The node of the worker holding the claim.
ALTER TABLE job_leases ADD COLUMN node text;

-- The node that wrote phase one of a document not yet built (or adopted it).
ALTER TABLE documents ADD COLUMN build_node text;
