-- emisor's store on PostgreSQL, version 1 (docs/storage.md, "The PostgreSQL engine").
-- Every table keeps the record as the store's model serializes it (`record`,
-- secrets sealed under the master key, new fields added with serde defaults
-- as on sled) beside the columns the queries filter, order and constrain by.
-- Money is numeric, instants timestamptz.

CREATE SEQUENCE company_ids;
CREATE SEQUENCE resolution_ids;
CREATE SEQUENCE api_key_ids;
CREATE SEQUENCE customer_ids;
CREATE SEQUENCE document_ids;
CREATE SEQUENCE job_ids;
CREATE SEQUENCE event_ids;
CREATE SEQUENCE email_ids;
CREATE SEQUENCE received_ids;
CREATE SEQUENCE received_event_ids;

CREATE TABLE companies (
    id          bigint PRIMARY KEY,
    nit         text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    record      jsonb NOT NULL
);

CREATE TABLE software (
    company_id  bigint NOT NULL REFERENCES companies (id),
    kind        smallint NOT NULL,
    record      jsonb NOT NULL,
    PRIMARY KEY (company_id, kind)
);

-- A company's own resolutions; the authority's test sets are built in and
-- have counters only.
CREATE TABLE resolutions (
    id             bigint PRIMARY KEY,
    company_id     bigint NOT NULL REFERENCES companies (id),
    document_type  smallint NOT NULL,
    record         jsonb NOT NULL
);
CREATE INDEX resolutions_by_company ON resolutions (company_id, id);

-- The next number of each numbering. Phase one locks its row (FOR UPDATE):
-- numbering is serialized per numbering across every node, and the number
-- and the document commit together.
CREATE TABLE counters (
    company_id     bigint NOT NULL,
    resolution_id  bigint NOT NULL,
    next           bigint NOT NULL,
    PRIMARY KEY (company_id, resolution_id)
);

CREATE TABLE certificates (
    company_id  bigint PRIMARY KEY REFERENCES companies (id),
    record      jsonb NOT NULL
);

CREATE TABLE api_keys (
    id          bigint PRIMARY KEY,
    company_id  bigint NOT NULL,
    hash        text NOT NULL UNIQUE,
    record      jsonb NOT NULL
);
CREATE INDEX api_keys_by_company ON api_keys (company_id, id);

CREATE TABLE customers (
    company_id             bigint NOT NULL,
    id                     bigint NOT NULL,
    identification_number  text NOT NULL,
    name                   text NOT NULL,
    record                 jsonb NOT NULL,
    PRIMARY KEY (company_id, id),
    UNIQUE (company_id, identification_number)
);

-- Documents issued per company and YYYYMM period (the plan's limit).
CREATE TABLE monthly_usage (
    company_id  bigint NOT NULL,
    period      integer NOT NULL,
    used        bigint NOT NULL,
    PRIMARY KEY (company_id, period)
);

CREATE TABLE documents (
    id                  bigint PRIMARY KEY,
    company_id          bigint NOT NULL,
    environment         smallint NOT NULL,
    family              smallint NOT NULL,
    document_type       smallint NOT NULL,
    resolution_id       bigint NOT NULL,
    prefix              text NOT NULL,
    number              bigint NOT NULL,
    state               smallint NOT NULL,
    pending_build       boolean NOT NULL,
    issue_date          date NOT NULL,
    total               numeric,
    external_reference  text,
    customer_id         bigint,
    code                text,
    list_keys           jsonb NOT NULL DEFAULT '{}',
    payload_hash        bytea NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    record              jsonb NOT NULL,
    -- The request it was issued from, zstd-compressed: written once.
    request             bytea NOT NULL,
    -- No number given twice, whatever the node.
    UNIQUE (company_id, resolution_id, number)
);
-- The external-reference claim: one document per company and reference,
-- across every node (a second insert waits for the first's commit, then fails).
CREATE UNIQUE INDEX documents_by_reference ON documents (company_id, external_reference)
    WHERE external_reference IS NOT NULL;
CREATE INDEX documents_by_code ON documents (code) WHERE code IS NOT NULL;
-- The document index: `list_documents` reads one company's built documents
-- of one environment and family newest first, by issue day then id; the
-- state and the family's keys filter within it.
CREATE INDEX documents_list ON documents (company_id, environment, family, issue_date DESC, id DESC)
    WHERE NOT pending_build;
CREATE INDEX documents_list_by_state ON documents (company_id, environment, family, state, issue_date DESC, id DESC)
    WHERE NOT pending_build;
CREATE INDEX documents_list_keys ON documents USING gin (list_keys jsonb_path_ops)
    WHERE NOT pending_build;
-- Every family at once (the console's search), by customer, by number.
CREATE INDEX documents_all_families ON documents (company_id, environment, issue_date DESC, id DESC)
    WHERE NOT pending_build;
CREATE INDEX documents_by_customer ON documents (company_id, customer_id) WHERE customer_id IS NOT NULL;
CREATE INDEX documents_by_number ON documents (company_id, number);
CREATE INDEX documents_by_state ON documents (state, id) WHERE NOT pending_build;
CREATE INDEX documents_pending_build ON documents (id) WHERE pending_build;
CREATE INDEX documents_by_created_at ON documents (created_at);

-- A document's files: the signed XML once, zstd-compressed; no ZIP when it
-- is derived from the XML (zip_at: its stamp, with its offset in seconds).
CREATE TABLE document_files (
    document_id      bigint PRIMARY KEY REFERENCES documents (id),
    xml_name         text NOT NULL,
    zip_name         text NOT NULL,
    xml              bytea NOT NULL,
    zip              bytea,
    zip_at           timestamptz,
    zip_at_offset_s  integer
);

CREATE TABLE document_history (
    document_id  bigint NOT NULL REFERENCES documents (id),
    line         bigint GENERATED ALWAYS AS IDENTITY,
    at           timestamptz NOT NULL,
    entry        jsonb NOT NULL,
    PRIMARY KEY (document_id, line)
);

-- The queue: due jobs in run_at_ms order (jobs_due).
CREATE TABLE jobs (
    id           bigint PRIMARY KEY,
    kind         text NOT NULL,
    company_id   bigint NOT NULL,
    document_id  bigint,
    run_at_ms    bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    record       jsonb NOT NULL
);
CREATE INDEX jobs_due ON jobs (run_at_ms, id);
CREATE INDEX jobs_by_document ON jobs (document_id) WHERE document_id IS NOT NULL;

-- A worker's lease on a job (JobLeases), a row of its own so that a job's
-- writes never move its lease, as on sled. Claiming due work across nodes
-- is one transaction: the due jobs without a live lease, locked
-- `FOR UPDATE OF jobs SKIP LOCKED` (each node skips the rows another is
-- claiming), then their leases written.
CREATE TABLE job_leases (
    job_id         bigint PRIMARY KEY,
    worker         text NOT NULL,
    expires_at_ms  bigint NOT NULL
);

CREATE TABLE events (
    id          bigint PRIMARY KEY,
    company_id  bigint NOT NULL,
    kind        text NOT NULL,
    at          timestamptz NOT NULL,
    record      jsonb NOT NULL
);
CREATE INDEX events_by_company_kind ON events (company_id, kind, id DESC);
CREATE INDEX events_by_company ON events (company_id, id);

CREATE TABLE email_logs (
    id           bigint PRIMARY KEY,
    document_id  bigint NOT NULL,
    automatic    boolean NOT NULL,
    record       jsonb NOT NULL
);
CREATE INDEX email_logs_by_document ON email_logs (document_id, id);

-- The authority's ApplicationResponse of an accepted document (zstd).
CREATE TABLE application_responses (
    document_id  bigint PRIMARY KEY,
    xml          bytea NOT NULL
);

CREATE TABLE settings (
    key    text PRIMARY KEY,
    value  text NOT NULL
);

-- Received invoices: one upload per uploading company and CUFE, and one
-- record the CUFE finds (the vouched one, `cufe_record`); the buyer's list
-- and the holder's eligible list per environment.
CREATE TABLE received (
    id           bigint PRIMARY KEY,
    cufe         text NOT NULL,
    uploaded_by  bigint,
    cufe_record  boolean NOT NULL,
    unchecked    boolean NOT NULL,
    buyer        bigint,
    holder       bigint,
    environment  smallint NOT NULL,
    eligible     boolean NOT NULL,
    version      bigint NOT NULL,
    record       jsonb NOT NULL,
    -- The uploaded XML, zstd-compressed.
    upload       bytea
);
CREATE UNIQUE INDEX received_upload ON received (uploaded_by, cufe) WHERE uploaded_by IS NOT NULL;
CREATE UNIQUE INDEX received_by_cufe ON received (cufe) WHERE cufe_record;
CREATE INDEX received_unchecked ON received (id) WHERE unchecked;
CREATE INDEX received_by_buyer ON received (buyer, environment, id DESC) WHERE buyer IS NOT NULL;
CREATE INDEX received_eligible ON received (holder, environment, id DESC) WHERE eligible;

-- An event's signed ApplicationResponse and ZIP (zstd-compressed JSON).
CREATE TABLE received_event_files (
    event_id  bigint PRIMARY KEY,
    files     bytea NOT NULL
);

-- The installation's own values (a restored store's numbering hold…).
CREATE TABLE meta (
    key    text PRIMARY KEY,
    value  jsonb NOT NULL
);
