-- The document index's kept counts, as sled keeps them (docs/storage.md,
-- "The document index"): a list page's `total` and its deep pages read
-- these instead of counting rows. Additive: a node of an earlier version
-- neither reads nor writes them, and the trigger keeps them whichever node
-- writes a document. Derived data: an export leaves it out, an import
-- makes it again through the trigger.

-- Serializes against writers: a document written between the trigger and
-- the backfill below would be counted twice (and LOCK fails outside a
-- transaction, so the migration is one).
LOCK TABLE documents IN SHARE ROW EXCLUSIVE MODE;

-- Built documents per company, environment, family, subset of the
-- family's indexed keys (`keys`, `{}` the empty one), state and issue day,
-- one row a cell.
CREATE TABLE document_counts (
    company_id   bigint NOT NULL,
    environment  smallint NOT NULL,
    family       smallint NOT NULL,
    keys         jsonb NOT NULL,
    issue_date   date NOT NULL,
    state        smallint NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (company_id, environment, family, keys, issue_date, state)
);

-- The changes not yet folded into `document_counts`: each change of a
-- document adds rows here (+1 to the cells it joins, -1 to those it
-- leaves), so concurrent documents never wait on one counter row, and
-- only this scope index is written with them. Reads add them to the
-- folded counts; folding moves them (`PgStore::fold_document_counts`).
CREATE TABLE document_count_changes (
    company_id   bigint NOT NULL,
    environment  smallint NOT NULL,
    family       smallint NOT NULL,
    keys         jsonb NOT NULL,
    issue_date   date NOT NULL,
    state        smallint NOT NULL,
    n            integer NOT NULL
);
CREATE INDEX document_count_changes_by_scope
    ON document_count_changes (company_id, environment, family);

-- A family's indexed keys (`Family::indexed_keys`, by `Family::tag`;
-- a store test holds the two equal).
CREATE FUNCTION document_count_keys(family smallint) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE family
        WHEN 1 THEN ARRAY['evento']
        WHEN 2 THEN ARRAY['proveedor']
        WHEN 3 THEN ARRAY['id_caja', 'id_cajero']
        WHEN 4 THEN ARRAY['tipo']
        ELSE ARRAY[]::text[]
    END
$$;

-- Longest key value counted under its key: a longer one is counted only
-- under the subsets without it (a list asking for it counts rows).
CREATE FUNCTION document_count_max_value() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 200 $$;

-- Every subset of a document's indexed keys, `{}` first.
CREATE FUNCTION document_count_subsets(family smallint, list_keys jsonb) RETURNS jsonb[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    subsets jsonb[] := ARRAY['{}'::jsonb];
    k text;
    v jsonb;
BEGIN
    FOREACH k IN ARRAY document_count_keys(family) LOOP
        v := list_keys -> k;
        IF jsonb_typeof(v) = 'string' AND length(v #>> '{}') <= document_count_max_value() THEN
            FOR i IN 1 .. array_length(subsets, 1) LOOP
                subsets := subsets || (subsets[i] || jsonb_build_object(k, v));
            END LOOP;
        END IF;
    END LOOP;
    RETURN subsets;
END
$$;

-- A document leaving its cells (-1) and joining its new ones (+1); a
-- half-built document is in none.
CREATE FUNCTION document_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NOT OLD.pending_build AND NOT NEW.pending_build THEN
        INSERT INTO document_count_changes
            (company_id, environment, family, keys, issue_date, state, n)
        SELECT OLD.company_id, OLD.environment, OLD.family, k, OLD.issue_date, OLD.state, -1
        FROM unnest(document_count_subsets(OLD.family, OLD.list_keys)) k
        UNION ALL
        SELECT NEW.company_id, NEW.environment, NEW.family, k, NEW.issue_date, NEW.state, 1
        FROM unnest(document_count_subsets(NEW.family, NEW.list_keys)) k;
    ELSIF TG_OP <> 'INSERT' AND NOT OLD.pending_build THEN
        INSERT INTO document_count_changes
            (company_id, environment, family, keys, issue_date, state, n)
        SELECT OLD.company_id, OLD.environment, OLD.family, k, OLD.issue_date, OLD.state, -1
        FROM unnest(document_count_subsets(OLD.family, OLD.list_keys)) k;
    ELSIF TG_OP <> 'DELETE' AND NOT NEW.pending_build THEN
        INSERT INTO document_count_changes
            (company_id, environment, family, keys, issue_date, state, n)
        SELECT NEW.company_id, NEW.environment, NEW.family, k, NEW.issue_date, NEW.state, 1
        FROM unnest(document_count_subsets(NEW.family, NEW.list_keys)) k;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER document_counts_on_insert AFTER INSERT ON documents
    FOR EACH ROW WHEN (NOT NEW.pending_build) EXECUTE FUNCTION document_counts_move();
-- Only a change the counts see calls the function (most updates of a
-- document change none of these).
CREATE TRIGGER document_counts_on_update AFTER UPDATE ON documents
    FOR EACH ROW WHEN (
        OLD.pending_build IS DISTINCT FROM NEW.pending_build
        OR OLD.state IS DISTINCT FROM NEW.state
        OR OLD.issue_date IS DISTINCT FROM NEW.issue_date
        OR OLD.list_keys IS DISTINCT FROM NEW.list_keys
        OR OLD.company_id IS DISTINCT FROM NEW.company_id
        OR OLD.environment IS DISTINCT FROM NEW.environment
        OR OLD.family IS DISTINCT FROM NEW.family)
    EXECUTE FUNCTION document_counts_move();
CREATE TRIGGER document_counts_on_delete AFTER DELETE ON documents
    FOR EACH ROW WHEN (NOT OLD.pending_build) EXECUTE FUNCTION document_counts_move();

-- Each family key's documents in page order, as sled's per-key runs: a
-- list asking for a key reads its page from one of these instead of the
-- keys' GIN index, which finds the value's documents of every company.
-- Only documents with the key are in each; values by their first 200
-- characters (the page's condition compares them whole).
CREATE INDEX documents_list_by_evento ON documents
    (company_id, environment, family, left(list_keys ->> 'evento', 200), issue_date DESC, id DESC)
    WHERE NOT pending_build AND list_keys ? 'evento';
CREATE INDEX documents_list_by_proveedor ON documents
    (company_id, environment, family, left(list_keys ->> 'proveedor', 200), issue_date DESC, id DESC)
    WHERE NOT pending_build AND list_keys ? 'proveedor';
CREATE INDEX documents_list_by_id_caja ON documents
    (company_id, environment, family, left(list_keys ->> 'id_caja', 200), issue_date DESC, id DESC)
    WHERE NOT pending_build AND list_keys ? 'id_caja';
CREATE INDEX documents_list_by_id_cajero ON documents
    (company_id, environment, family, left(list_keys ->> 'id_cajero', 200), issue_date DESC, id DESC)
    WHERE NOT pending_build AND list_keys ? 'id_cajero';
CREATE INDEX documents_list_by_tipo ON documents
    (company_id, environment, family, left(list_keys ->> 'tipo', 200), issue_date DESC, id DESC)
    WHERE NOT pending_build AND list_keys ? 'tipo';

-- The documents already stored, one row a cell.
INSERT INTO document_counts (company_id, environment, family, keys, issue_date, state, n)
SELECT d.company_id, d.environment, d.family, k, d.issue_date, d.state, count(*)
FROM documents d, unnest(document_count_subsets(d.family, d.list_keys)) k
WHERE NOT d.pending_build
GROUP BY 1, 2, 3, 4, 5, 6;
