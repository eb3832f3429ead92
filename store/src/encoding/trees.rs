//! Tree names, one per record kind, plus indexes. Changing a name orphans data.

pub const META: &str = "meta";
pub const COMPANIES: &str = "companies";
pub const COMPANY_BY_NIT: &str = "companies_by_nit";
pub const SOFTWARE: &str = "software_registrations";
pub const RESOLUTIONS: &str = "numbering_resolutions";
/// resolution id → next number to give.
pub const COUNTERS: &str = "numbering_counters";
pub const CERTIFICATES: &str = "certificates";
pub const API_KEYS: &str = "api_keys";
pub const API_KEY_BY_HASH: &str = "api_keys_by_hash";
pub const CUSTOMERS: &str = "customers";
pub const CUSTOMER_BY_IDENT: &str = "customers_by_identification";
pub const DOCUMENTS: &str = "documents";
pub const DOCUMENT_COUNTS: &str = "document_counts";
/// document id → signed XML and ZIP.
pub const DOCUMENT_FILES: &str = "document_files";
/// state (or `0xFF`: build not finished) ‖ block → bitmap of document
/// ids (`id_sets`): documents by state. Derived (repaired after a crash).
pub const DOCUMENTS_BY_STATE: &str = "documents_by_state_v2";
/// The state index before id sets (state ‖ document id → ()): rebuilt
/// as [`DOCUMENTS_BY_STATE`] and dropped at open.
pub const DOCUMENTS_BY_STATE_V1: &str = "documents_by_state";
/// document id → the request's JSON as received (written once).
pub const DOCUMENT_REQUESTS: &str = "document_requests";
/// Hashed index (`hashed_index`) of company ‖ external reference → the
/// documents that may hold it.
pub const DOCUMENT_REFS: &str = "document_references_hashed_v2";
/// document id ‖ sequence → history entry.
pub const DOCUMENT_HISTORY: &str = "document_history";
/// company ‖ YYYYMM → documents issued (subscription usage).
pub const USAGE: &str = "monthly_usage";
pub const JOBS: &str = "jobs";
/// job id → its lease: the worker holding it and until when.
pub const JOB_LEASES: &str = "job_leases";
/// document id → its transmission job's id.
pub const JOBS_BY_DOCUMENT: &str = "jobs_by_document";
pub const EVENTS: &str = "events";
pub const EMAIL_LOGS: &str = "email_logs";
/// document id ‖ email log id → (): a document's emails.
pub const EMAIL_LOGS_BY_DOCUMENT: &str = "email_logs_by_document";
/// document id → the authority's ApplicationResponse of an accepted
/// document, DEFLATE-compressed (written once, never with the record).
pub const APPLICATION_RESPONSES: &str = "application_responses";
/// The document index (`doc_index`): dimension ‖ inverted day ‖ inverted
/// block → bitmap of document ids (`id_sets`). Derived, written with the
/// record.
pub const DOCUMENT_INDEX: &str = "document_index_v2";
/// The document index before id sets (dimension ‖ inverted day ‖
/// inverted id → ()): rebuilt as [`DOCUMENT_INDEX`] and dropped at open.
pub const DOCUMENT_INDEX_V1: &str = "document_index";
/// dimension ‖ day → documents in that cell.
pub const DOCUMENT_INDEX_COUNTS: &str = "document_index_counts";
/// document id ‖ token → its view before a change not yet known durable.
pub const DOCUMENT_INDEX_PENDING: &str = "document_index_pending";

/// Version of the data dir layout, stored in `META`.
/// company ‖ kind → a raw zstd dictionary (`compress`), written once.
pub const DICTIONARIES: &str = "compression_dictionaries";

/// created_at µs ‖ id → company ‖ payload hash: the duplicate
/// window's payloads, kept a little longer than the window.
pub const RECENT_PAYLOADS: &str = "recent_payloads";

pub const SCHEMA_VERSION: u64 = 1;
pub const SCHEMA_KEY: &[u8] = b"schema_version";

// Invoices seen from the events' side (received, or issued here to another
// company of the service) and their events (`engine/sled/received.rs`).
/// received invoice id → record (with its events).
pub const RECEIVED: &str = "received_invoices";
/// CUFE → the received invoice every party finds by it: the one whose
/// content is vouched for (issued here, or uploaded equal to the
/// authority's copy).
pub const RECEIVED_BY_CUFE: &str = "received_by_cufe";
/// uploading company ‖ CUFE → received invoice id: each company's uploads.
pub const RECEIVED_BY_COMPANY: &str = "received_by_company";
/// received invoice id → (): uploads not yet compared with the authority's
/// copy (stored before uploads were compared).
pub const RECEIVED_UNCHECKED: &str = "received_unchecked";
/// buyer company ‖ id → (): `GET /eventos/documentos`.
pub const RECEIVED_BY_BUYER: &str = "received_by_buyer";
/// holder company ‖ id → (): `GET /registry/facturas-elegibles`.
pub const ELIGIBLE_BY_HOLDER: &str = "eligible_by_holder";
/// `b` or `e` ‖ company → entries of the two indexes above (list totals).
pub const RECEIVED_COUNTS: &str = "received_counts";
/// received invoice id → the uploaded signed invoice.
pub const RECEIVED_FILES: &str = "received_files";
/// event id → its signed ApplicationResponse and ZIP.
pub const EVENT_FILES: &str = "invoice_event_files";
/// Hashed index (`hashed_index`) of document code (CUFE…) → the documents
/// that may hold it, written with the document.
pub const DOCUMENTS_BY_CODE: &str = "documents_by_code_hashed_v2";
/// Hashed index of company ‖ environment ‖ number (the number alone,
/// without its prefix) → the documents that may hold it: the console's
/// search by number (`engine/sled/search.rs`).
pub const DOCUMENTS_BY_NUMBER: &str = "documents_by_number_hashed";
/// company ‖ folded word of a customer's name ‖ 0 ‖ customer id → ():
/// the console's search by name (`indexes/words.rs`).
pub const CUSTOMER_WORDS: &str = "customer_name_words";

/// The indexes above as they were before, one entry per document (key →
/// id): dropped once the hashed ones are built from the records
/// (`engine/sled/lookup.rs`).
pub const LEGACY_DOCUMENT_REFS: &str = "document_references";
pub const LEGACY_DOCUMENTS_BY_CODE: &str = "documents_by_code";

/// The hashed indexes with 12-byte entries (fingerprint u32, id u64),
/// before the compact ones above.
pub const HASHED_V1_DOCUMENT_REFS: &str = "document_references_hashed";
pub const HASHED_V1_DOCUMENTS_BY_CODE: &str = "documents_by_code_hashed";

/// Trees of older layouts, rebuilt under other names from the records: a
/// store that still holds one is copied without it at open
/// (`engine/sled/rewrite.rs`), since sled would keep a dropped tree's pages resident.
pub const SUPERSEDED: [&str; 6] = [
    DOCUMENT_INDEX_V1,
    DOCUMENTS_BY_STATE_V1,
    LEGACY_DOCUMENT_REFS,
    LEGACY_DOCUMENTS_BY_CODE,
    HASHED_V1_DOCUMENT_REFS,
    HASHED_V1_DOCUMENTS_BY_CODE,
];
