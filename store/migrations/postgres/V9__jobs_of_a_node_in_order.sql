-- The jobs by node in two partial indexes that together hold every row
-- once, as `jobs_by_node` did, which they replace:
--
-- * jobs_of_node: each node's jobs in id order. The adoption poll walks the
--   nodes that hold jobs here (one probe each) and takes a dead node's
--   oldest jobs from it, reading about as many rows as it takes, instead of
--   reading every queued row to judge its node; a node's own jobs come from
--   it in order.
-- * jobs_without_node: the jobs a node of a version before V4 wrote (none
--   on an installation whose nodes are all newer), in id order, for the
--   poll's look at the overdue ones.
--
-- Safe for a node of an earlier version running on this schema: no
-- statement names an index, and every one of theirs that `jobs_by_node`
-- served (`node = $1`, `node IS NULL`) is served by one of these.
CREATE INDEX jobs_of_node ON jobs (node, id) WHERE node IS NOT NULL;
CREATE INDEX jobs_without_node ON jobs (id) WHERE node IS NULL;
DROP INDEX jobs_by_node;
