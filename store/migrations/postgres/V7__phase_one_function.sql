-- Phase one of issuing in one statement (docs/storage.md, "Numbering
-- without gaps"): the number taken and the counter moved on, the month's
-- usage moved on, the numbering hold read, and the document inserted
-- half-built with its number, in the caller's transaction or, called
-- alone, in its own. Additive: a node of the version before never calls
-- it and takes its numbers with the same statements in the same order
-- (the counter's row, then the usage's), so nodes of both versions wait
-- for each other on the same rows and never deadlock.
--
-- A refusal raises, so that everything rolls back and nothing is
-- consumed: EM001 the month's documents are at p_limit, EM002 the number
-- is outside p_from..p_to, EM003 the numbering hold is not the one the
-- caller checked (p_hold_seen; the caller reads it, checks it, and calls
-- again with it). A reference another document holds fails the insert
-- with unique_violation, as an insert of its own would.
--
-- The commit does not wait for the disk (synchronous_commit off for this
-- transaction alone): nobody is answered on it, and phase two's commit,
-- which waits, flushes it too.
CREATE OR REPLACE FUNCTION emisor_number_document(
    p_company       bigint,
    p_resolution    bigint,
    p_first         bigint,
    p_period        integer,
    p_hold_key      text,
    p_hold_seen     jsonb,
    p_limit         bigint,
    p_from          bigint,
    p_to            bigint,
    p_id            bigint,
    p_environment   smallint,
    p_family        smallint,
    p_document_type smallint,
    p_state         smallint,
    p_issue_date    date,
    p_reference     text,
    p_list_keys     jsonb,
    p_payload_hash  bytea,
    p_at            timestamptz,
    p_record        jsonb,
    p_request       bytea,
    p_customer      bigint,
    p_prefix        text,
    p_node          text
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_number bigint;
    v_used   bigint;
    v_hold   jsonb;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO counters AS c (company_id, resolution_id, next)
        VALUES (p_company, p_resolution, p_first)
        ON CONFLICT (company_id, resolution_id) DO UPDATE SET next = c.next + 1
        RETURNING next - 1 INTO v_number;
    INSERT INTO monthly_usage AS u (company_id, period, used)
        VALUES (p_company, p_period, 1)
        ON CONFLICT (company_id, period) DO UPDATE SET used = u.used + 1
        RETURNING used - 1 INTO v_used;
    SELECT value INTO v_hold FROM meta WHERE key = p_hold_key;
    IF v_hold IS DISTINCT FROM p_hold_seen THEN
        RAISE EXCEPTION 'the numbering hold changed' USING ERRCODE = 'EM003';
    END IF;
    IF p_limit IS NOT NULL AND v_used >= p_limit THEN
        RAISE EXCEPTION 'the month''s documents are at the limit' USING ERRCODE = 'EM001';
    END IF;
    IF v_number < p_from OR v_number > p_to THEN
        RAISE EXCEPTION 'the numbering range is exhausted' USING ERRCODE = 'EM002';
    END IF;
    INSERT INTO documents (id, company_id, environment, family, document_type,
            resolution_id, number, state, pending_build, issue_date, total,
            external_reference, code, list_keys, payload_hash, created_at, updated_at,
            record, request, customer_id, prefix, build_node)
        VALUES (p_id, p_company, p_environment, p_family, p_document_type,
            p_resolution, v_number, p_state, true, p_issue_date, NULL,
            p_reference, NULL, p_list_keys, p_payload_hash, p_at, p_at,
            jsonb_set(p_record, '{number}', to_jsonb(v_number)), p_request, p_customer,
            p_prefix, p_node);
    RETURN v_number;
END
$$;
