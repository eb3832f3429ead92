-- Grows an emisor database on PostgreSQL to about :target documents by
-- copying the documents it holds (each with its files and history), for
-- benchmarks at a size the issuing load would take hours to reach:
--   psql URL -v target=1000000 -f benches/load/pg_grow.sql   (pg_restart.sh)
-- Copy g of a document gets id + g × max(id), number + g × the span of the
-- numbers held (the numbering's counter moves past them; the store filled by
-- one numbering, as the issuing load does, stays gapless and in its range), its external reference and code
-- suffixed, and its creation moved g hours and its issue day g / 24 days
-- back, so that the copies spread over the weeks before the load instead
-- of all falling in the duplicate window. Monthly usage and the sequences
-- are made to agree with the rows.
\set ON_ERROR_STOP on
BEGIN;
SELECT max(id) AS maxid, max(number) - min(number) + 1 AS span, count(*) AS base FROM documents \gset
SELECT greatest(ceil(:target::numeric / :base)::bigint - 1, 0) AS copies \gset
\echo copying :base documents :copies times

INSERT INTO documents (id, company_id, environment, family, document_type, resolution_id,
    prefix, number, state, pending_build, issue_date, total, external_reference,
    customer_id, code, list_keys, payload_hash, created_at, updated_at, record, request)
SELECT d.id + g * :maxid, d.company_id, d.environment, d.family, d.document_type,
    d.resolution_id, d.prefix, d.number + g * :span, d.state, d.pending_build,
    d.issue_date - (g / 24)::integer, d.total, d.external_reference || '-copy-' || g,
    d.customer_id, overlay(d.code placing lpad(to_hex(g), 8, '0') from 1),
    d.list_keys, d.payload_hash,
    d.created_at - g * interval '1 hour', d.updated_at - g * interval '1 hour',
    jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(d.record,
        '{id}', to_jsonb(d.id + g * :maxid)),
        '{number}', to_jsonb(d.number + g * :span)),
        '{external_reference}', coalesce(to_jsonb(d.external_reference || '-copy-' || g), 'null')),
        '{code}', coalesce(to_jsonb(overlay(d.code placing lpad(to_hex(g), 8, '0') from 1)), 'null')),
        '{issue_date}', to_jsonb(d.issue_date - (g / 24)::integer)),
        '{created_at}', to_jsonb(d.created_at - g * interval '1 hour')),
        '{updated_at}', to_jsonb(d.updated_at - g * interval '1 hour')),
    d.request
FROM documents d, generate_series(1::bigint, :copies) g
WHERE d.id <= :maxid;

INSERT INTO document_files (document_id, xml_name, zip_name, xml, zip, zip_at, zip_at_offset_s)
SELECT f.document_id + g * :maxid, f.xml_name, f.zip_name, f.xml, f.zip, f.zip_at, f.zip_at_offset_s
FROM document_files f, generate_series(1::bigint, :copies) g
WHERE f.document_id <= :maxid;

INSERT INTO document_history (document_id, at, entry)
SELECT h.document_id + g * :maxid, h.at - g * interval '1 hour', h.entry
FROM document_history h, generate_series(1::bigint, :copies) g
WHERE h.document_id <= :maxid;

UPDATE counters c SET next = m.top + 1
FROM (SELECT company_id, resolution_id, max(number) AS top FROM documents GROUP BY 1, 2) m
WHERE c.company_id = m.company_id AND c.resolution_id = m.resolution_id;

DELETE FROM monthly_usage;
INSERT INTO monthly_usage (company_id, period, used)
SELECT company_id, to_char(issue_date, 'YYYYMM')::integer, count(*)
FROM documents GROUP BY 1, 2;

SELECT setval('document_ids', (SELECT max(id) FROM documents)) AS moved \gset
COMMIT;
VACUUM ANALYZE;
SELECT count(*) AS documents FROM documents;
