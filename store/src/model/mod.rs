//! Records kept by the store. English names inside; the HTTP layer renames to
//! the Spanish JSON of the spec. New fields must carry `#[serde(default)]` so
//! records written by older builds stay readable.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::secrets::secret::{SecretBytes, SecretText};

pub mod export;
pub mod received;
pub mod test_set;

pub type CompanyId = u64;

/// Sandbox (`sk_test_`, authority environment 2) or production (`sk_live_`, 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    Test,
    Live,
}

impl Environment {
    /// The authority's `ProfileExecutionID` / `TipoAmbiente`.
    pub fn authority_code(self) -> u8 {
        match self {
            Environment::Live => 1,
            Environment::Test => 2,
        }
    }
    pub fn key_prefix(self) -> &'static str {
        match self {
            Environment::Live => "sk_live_",
            Environment::Test => "sk_test_",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Environment::Live => "produccion",
            Environment::Test => "pruebas",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Company {
    pub id: CompanyId,
    pub nit: String,
    pub dv: u8,
    pub name: String,
    #[serde(default)]
    pub trade_name: Option<String>,
    pub address: String,
    /// Official municipality code (DIVIPOLA), e.g. `11001` Bogotá.
    pub municipality_code: String,
    pub municipality_name: String,
    pub department_code: String,
    pub department_name: String,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub phone: Option<String>,
    /// `1` legal entity, `2` natural person.
    pub organization_type: u8,
    /// Tax regime code (`48` VAT responsible, `49` not responsible).
    pub tax_regime: String,
    /// Fiscal responsibilities, e.g. `O-13` or `R-99-PN`.
    pub tax_responsibilities: String,
    /// Requests per minute per key; `None` uses the configured default.
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
    /// Documents a month; `None` uses the default plan limit.
    #[serde(default)]
    pub monthly_document_limit: Option<u32>,
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// HMAC-SHA256 key of the `X-Emisor-Signature` header of its webhooks.
    /// Stored sealed (`sealing`).
    #[serde(default, with = "crate::secrets::sealing::opt_text")]
    pub webhook_secret: Option<SecretText>,
    /// Sandbox company provisioned like the demo one (points at the simulator).
    #[serde(default)]
    pub demo: bool,
    pub created_at: DateTime<Utc>,
}

/// What a company gives when it is created; the store assigns the id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewCompany {
    pub nit: String,
    pub dv: u8,
    pub name: String,
    pub trade_name: Option<String>,
    pub address: String,
    pub municipality_code: String,
    pub municipality_name: String,
    pub department_code: String,
    pub department_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub organization_type: u8,
    pub tax_regime: String,
    pub tax_responsibilities: String,
    pub rate_limit_per_minute: Option<u32>,
    pub monthly_document_limit: Option<u32>,
    pub demo: bool,
}

/// A software registration at the authority. Invoicing and payroll are
/// registered separately, each with its own id and PIN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SoftwareKind {
    Invoicing,
    Payroll,
}

impl SoftwareKind {
    pub fn tag(self) -> u8 {
        match self {
            SoftwareKind::Invoicing => 1,
            SoftwareKind::Payroll => 2,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SoftwareRegistration {
    pub company_id: CompanyId,
    pub kind: SoftwareKind,
    pub software_id: String,
    /// Stored sealed (`sealing`).
    #[serde(with = "crate::secrets::sealing::text")]
    pub pin: SecretText,
    #[serde(default)]
    pub test_set_id: Option<String>,
    /// NIT of the software provider (for own software, the company itself).
    pub provider_nit: String,
    pub provider_dv: u8,
    pub registered_at: DateTime<Utc>,
}

/// Document type a resolution numbers: the unified API codes 1-10, and 11 for
/// payroll (which the spec numbers outside that list).
pub const PAYROLL_DOCUMENT_TYPE: u8 = 11;

/// Document type of a payroll adjustment (`NominaIndividualDeAjuste`, 103):
/// numbered from the same payroll resolution as type 11.
pub const PAYROLL_ADJUSTMENT_DOCUMENT_TYPE: u8 = 12;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumberingResolution {
    pub id: u64,
    pub company_id: CompanyId,
    pub document_type: u8,
    /// Other document types numbered from the same range: the authority
    /// numbers invoices, exports and T04 from one invoice resolution.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_serves: Vec<u8>,
    pub resolution_number: String,
    pub resolution_date: NaiveDate,
    pub prefix: String,
    pub from: u64,
    pub to: u64,
    pub valid_from: NaiveDate,
    pub valid_to: NaiveDate,
    /// Technical key (ClTec) used by the CUFE; notes and PIN-coded types
    /// ignore it. Stored sealed (`sealing`).
    #[serde(with = "crate::secrets::sealing::text")]
    pub technical_key: SecretText,
    pub created_at: DateTime<Utc>,
}

impl NumberingResolution {
    /// Whether documents of `document_type` take their numbers from it.
    pub fn serves(&self, document_type: u8) -> bool {
        self.document_type == document_type || self.also_serves.contains(&document_type)
    }

    /// Every document type it numbers, its main one first.
    pub fn document_types(&self) -> Vec<u8> {
        let mut all = vec![self.document_type];
        all.extend(
            self.also_serves
                .iter()
                .filter(|t| **t != self.document_type),
        );
        all
    }

    /// One of the authority's test sets (built in, never stored).
    pub fn is_test_set(&self) -> bool {
        crate::model::test_set::by_id(self.id).is_some()
    }
}

#[derive(Debug, Clone)]
pub struct NewResolution {
    pub document_type: u8,
    /// Other document types it numbers (see [`NumberingResolution::also_serves`]).
    pub also_serves: Vec<u8>,
    pub resolution_number: String,
    pub resolution_date: NaiveDate,
    pub prefix: String,
    pub from: u64,
    pub to: u64,
    pub valid_from: NaiveDate,
    pub valid_to: NaiveDate,
    pub technical_key: SecretText,
}

/// The company's signing certificate as imported (PKCS#12), with the facts
/// needed to refuse it without parsing it again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CertificateRecord {
    pub company_id: CompanyId,
    /// The PKCS#12 file and its password, stored sealed (`sealing`).
    #[serde(with = "crate::secrets::sealing::bytes")]
    pub pkcs12_der: SecretBytes,
    #[serde(with = "crate::secrets::sealing::text")]
    pub password: SecretText,
    pub subject: String,
    pub issuer: String,
    pub serial: String,
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
    pub imported_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ApiKeyRecord {
    pub id: u64,
    pub company_id: CompanyId,
    pub environment: Environment,
    /// SHA-256 of the full key, hex. The key itself is never stored.
    pub hash: String,
    /// First characters, for lists (`sk_test_4fG2…`).
    pub display_prefix: String,
    #[serde(default)]
    pub label: Option<String>,
    /// The user the key belongs to, when it is a user's key (WebSocket room `user_{id}`).
    #[serde(default)]
    pub user_id: Option<u64>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Customer {
    pub id: u64,
    pub company_id: CompanyId,
    pub identification_number: String,
    pub name: String,
    pub email: String,
    #[serde(default)]
    pub id_type_code: Option<String>,
    #[serde(default)]
    pub organization_type_code: Option<String>,
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub municipality_code: Option<String>,
    #[serde(default)]
    pub municipality_name: Option<String>,
    #[serde(default)]
    pub country_code: Option<String>,
    #[serde(default)]
    pub phone: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Customer fields as a caller sends them; upserted by identification number.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CustomerInput {
    pub identification_number: String,
    pub name: String,
    pub email: String,
    pub id_type_code: Option<String>,
    pub organization_type_code: Option<String>,
    pub address: Option<String>,
    pub municipality_code: Option<String>,
    pub municipality_name: Option<String>,
    pub country_code: Option<String>,
    pub phone: Option<String>,
}

/// The families a company lists its documents by (decisions.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Invoices, exports, contingency invoices and their notes.
    Invoices,
    /// Support documents and their adjustment notes.
    Support,
    /// POS receipts and their adjustment notes.
    Pos,
    Payroll,
    /// Invoices received from suppliers.
    Received,
}

/// Payroll adjustment notes' document type (payroll itself is
/// [`PAYROLL_DOCUMENT_TYPE`]); the authority's TipoXML 102 and 103 are
/// taken as payroll too.
const PAYROLL_TYPES: [u8; 4] = [PAYROLL_DOCUMENT_TYPE, PAYROLL_DOCUMENT_TYPE + 1, 102, 103];

/// The list key of an invoice's standing from the events the authority
/// lists on it (`reclamada`, `aceptada`, `acuse_sin_aceptacion`): indexed,
/// so the invoice list filters by it. Absent while no event is known.
pub const EVENT_STANDING_KEY: &str = "evento";

impl Family {
    pub const ALL: [Family; 5] = [
        Family::Invoices,
        Family::Support,
        Family::Pos,
        Family::Payroll,
        Family::Received,
    ];

    /// The family of a document type: the unified codes 1-10, payroll's
    /// own types; anything else is a received document.
    pub fn of_document_type(t: u8) -> Family {
        match t {
            1 | 2 | 3 | 6 | 7 | 8 => Family::Invoices,
            4 | 5 => Family::Support,
            9 | 10 => Family::Pos,
            t if PAYROLL_TYPES.contains(&t) => Family::Payroll,
            _ => Family::Received,
        }
    }

    /// The list keys a list of this family filters by: each is indexed and
    /// has its own counters.
    pub fn indexed_keys(self) -> &'static [&'static str] {
        match self {
            Family::Support => &["proveedor"],
            Family::Pos => &["id_caja", "id_cajero"],
            Family::Payroll => &["tipo"],
            Family::Invoices => &[EVENT_STANDING_KEY],
            Family::Received => &[],
        }
    }

    /// One byte in index keys (never renumber).
    pub fn tag(self) -> u8 {
        match self {
            Family::Invoices => 1,
            Family::Support => 2,
            Family::Pos => 3,
            Family::Payroll => 4,
            Family::Received => 5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Invoices => "invoices",
            Family::Support => "support",
            Family::Pos => "pos",
            Family::Payroll => "payroll",
            Family::Received => "received",
        }
    }
}

/// A page of a company's documents of one family, newest first (by issue
/// date, then id), from the document index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub company_id: CompanyId,
    pub environment: Environment,
    pub family: Family,
    /// Issue dates (Colombia time), inclusive.
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// Any of these states; empty = all.
    pub states: Vec<u8>,
    /// Family keys ([`Family::indexed_keys`]); all must match.
    pub keys: Vec<(String, String)>,
    /// From 1.
    pub page: u32,
    pub limit: u32,
}

/// The console's search ([`crate::DocumentStore::search_documents`]): a
/// company's documents in one environment, of every family or one, newest
/// first (by issue date, then id), from the document index and the number,
/// code and name lookups. Every filter given must match; `text` matches a
/// document's full number (`SETP990000012`) or bare number, its code
/// (CUFE, CUDE, CUDS, CUNE, in full), or its customer: the identification
/// number exactly, or each word typed as the start of a word of the
/// customer's name, case and accents aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSearch {
    pub company_id: CompanyId,
    pub environment: Environment,
    /// One family; none is every family.
    pub family: Option<Family>,
    /// Issue dates (Colombia time), inclusive.
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// Any of these states; empty = all.
    pub states: Vec<u8>,
    /// The buyer's, supplier's or employee's identification number, exactly.
    pub customer: Option<String>,
    /// A full number (prefix and number) or a bare number.
    pub number: Option<String>,
    /// Free text: a number, a code, or a customer ([`DocumentSearch`]).
    pub text: Option<String>,
    /// From 1.
    pub page: u32,
    pub limit: u32,
}

/// A page of [`DocumentSearch`].
#[derive(Debug, Clone, Serialize)]
pub struct SearchPage {
    pub items: Vec<DocumentRecord>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
    /// False when the text's words start the names of more customers than
    /// one search reads ([`SEARCH_CUSTOMERS`]): the page and `total` then
    /// hold the documents of the first ones only (by name word).
    pub total_exact: bool,
}

/// Customers a search by name reads at most.
pub const SEARCH_CUSTOMERS: usize = 20;

/// One page of a list.
#[derive(Debug, Clone, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}

/// Document states of the unified API (spec 3.1).
pub mod state {
    pub const DRAFT: u8 = 1;
    pub const ACCEPTED: u8 = 2;
    pub const QUEUED: u8 = 3;
    pub const REJECTED: u8 = 4;
    pub const WAITING_AUTHORITY: u8 = 5;
    pub const DEAD_LETTER: u8 = 6;

    /// The state names as the spec writes them (`tax` for the authority).
    pub fn name(state: u8) -> &'static str {
        match state {
            DRAFT => "Borrador",
            ACCEPTED => "Enviado/Aceptado",
            QUEUED => "En Cola",
            REJECTED => "Rechazado",
            WAITING_AUTHORITY => "Esperando tax",
            DEAD_LETTER => "Dead Letter",
            _ => "Desconocido",
        }
    }
}

/// Why a document was accepted without the authority's ApplicationResponse
/// ([`DocumentRecord::application_response_missing`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MissingApplicationResponse {
    /// The authority answered rule 90, "Documento procesado anteriormente":
    /// an earlier send of the document was accepted, and this answer,
    /// which counts as the acceptance, carries no ApplicationResponse.
    AlreadyProcessed,
    /// The accepting answer carried no ApplicationResponse (or none that
    /// could be decoded).
    NotInAnswer,
}

/// A stored document: its number, code, state and what the authority said.
/// Its files are in the file log ([`DocumentFiles`]); where, and its history
/// lines, are kept in the record's stored value, out of this type.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DocumentRecord {
    pub id: u64,
    pub company_id: CompanyId,
    pub environment: Environment,
    pub document_type: u8,
    pub resolution_id: u64,
    pub prefix: String,
    pub number: u64,
    /// 1 Borrador … 6 Dead Letter (spec 3.1, [`state`]).
    pub state: u8,
    /// True between the number being taken and the XML being stored: a
    /// restart finds such documents and builds them again.
    #[serde(default)]
    pub pending_build: bool,
    #[serde(default)]
    pub code: Option<String>,
    /// `CUFE-SHA384`, `CUDE-SHA384`, `CUDS-SHA384`.
    #[serde(default)]
    pub code_scheme: Option<String>,
    #[serde(default)]
    pub qr_url: Option<String>,
    pub issue_date: NaiveDate,
    /// Payable amount, as a decimal string (never a float).
    #[serde(default)]
    pub total: String,
    #[serde(default)]
    pub external_reference: Option<String>,
    #[serde(default)]
    pub customer_id: Option<u64>,
    /// The user of the key that issued it: its events also go to the room
    /// `user_{id}`. Absent in records written before users had rooms.
    #[serde(default)]
    pub user_id: Option<u64>,
    /// Records written before `document_requests` existed carry the request
    /// here; newer ones keep it in that tree (written once, not with every
    /// state change). Read it with `DocumentStore::document_request`.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub request: serde_json::Value,
    /// The last answer of the authority (spec 2.4 `transmission`).
    #[serde(default)]
    pub transmission: Option<serde_json::Value>,
    /// Transmission attempts made so far (spec 8: 5 at most per queue run).
    #[serde(default)]
    pub attempts: u32,
    /// The authority's tracking key (`zipKey`).
    #[serde(default)]
    pub track_id: Option<String>,
    /// Set when the authority accepted the document without giving its
    /// ApplicationResponse, and why: its mail carries the signed XML
    /// instead of an AttachedDocument and says which. Absent when the
    /// ApplicationResponse was kept, and in records accepted before
    /// ApplicationResponses were kept at all (which have none either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_response_missing: Option<MissingApplicationResponse>,
    /// The API it came through, whose translator rebuilds it from its
    /// request; absent for the unified API (and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The family's own list filters and columns (`proveedor`, `id_caja`,
    /// `id_cajero`, `tipo`, `centro_costos`…): the ones of
    /// [`Family::indexed_keys`] are indexed and counted, the rest only kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub list_keys: BTreeMap<String, String>,
    /// The instant it is dated and signed at, when not `created_at`: set
    /// once it is re-dated for the day it is sent (annex 1.9's same-day
    /// rule) or built again at a new instant (a resend), and when it was
    /// numbered on a business clock apart from the system's (tests).
    /// Absent in every other record, whose instant is `created_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<DateTime<Utc>>,
    /// The events the authority lists on this invoice (a sales invoice the
    /// company issued), oldest first, as the events sweep learned them;
    /// their standing is the list key [`EVENT_STANDING_KEY`]. Absent from
    /// every other record and from records written before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authority_events: Vec<received::AuthorityEvent>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl DocumentRecord {
    /// The document is `company`'s in `environment`: what a key of that
    /// company and environment may read or act on (spec 5: the key decides
    /// the environment; another's document is as unknown as a missing one).
    pub fn belongs_to(&self, company: CompanyId, environment: Environment) -> bool {
        self.company_id == company && self.environment == environment
    }

    /// `prefix + number`, the document's `cbc:ID`.
    pub fn full_number(&self) -> String {
        format!("{}{}", self.prefix, self.number)
    }

    /// The instant it is dated and signed at ([`Self::issued_at`], or
    /// when its number was taken).
    pub fn instant(&self) -> DateTime<Utc> {
        self.issued_at.unwrap_or(self.created_at)
    }
}

/// A recently created document and the request it was issued from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentRequest {
    pub document_id: u64,
    pub company_id: CompanyId,
    pub created_at: DateTime<Utc>,
    /// The payload hash it was issued with ([`NewDocument::payload_hash`]).
    pub payload_hash: [u8; 32],
}

/// What a new document needs before its number is taken.
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub company_id: CompanyId,
    pub environment: Environment,
    /// The user of the issuing key, if it is a user's key.
    pub user_id: Option<u64>,
    pub document_type: u8,
    pub resolution_id: u64,
    pub issue_date: NaiveDate,
    pub external_reference: Option<String>,
    /// Upserted in phase one, after the checks, before the number is taken.
    pub customer: Option<CustomerInput>,
    /// The request's JSON as received (kept to rebuild the document).
    pub request: Vec<u8>,
    /// Its hash in the duplicate window (the issuing layer's, kept with
    /// the document so the window is read back at start-up).
    pub payload_hash: [u8; 32],
    /// The API it came through (`DocumentRecord::api`).
    pub api: Option<String>,
    /// The family's list keys (`DocumentRecord::list_keys`).
    pub list_keys: BTreeMap<String, String>,
    /// Documents allowed this month; `None` = unlimited.
    pub monthly_limit: Option<u64>,
    /// `YYYYMM` of the issue date, the subscription period.
    pub period: u32,
    /// The caller asked for its transmission: it is built into QUEUED
    /// (else DRAFT). Its half-built record holds that state, so that one
    /// recovered after a power cut with its XML in the file log (phase two
    /// reached the disk: it was likely answered) is built again into it.
    pub queued: bool,
    /// Its instant when not the moment its number is taken
    /// ([`DocumentRecord::issued_at`]).
    pub issued_at: Option<DateTime<Utc>>,
}

impl NewDocument {
    /// Its record as phase one writes it, on any engine: numbered from
    /// `resolution`, in its target state with `pending_build` set, no
    /// files, code or answer yet.
    pub fn half_built(
        &self,
        id: u64,
        resolution: &NumberingResolution,
        number: u64,
        customer_id: Option<u64>,
        now: DateTime<Utc>,
    ) -> DocumentRecord {
        DocumentRecord {
            id,
            company_id: self.company_id,
            environment: self.environment,
            document_type: self.document_type,
            resolution_id: resolution.id,
            prefix: resolution.prefix.clone(),
            number,
            // Its target until built (`NewDocument::queued`).
            state: if self.queued {
                state::QUEUED
            } else {
                state::DRAFT
            },
            pending_build: true,
            code: None,
            code_scheme: None,
            qr_url: None,
            issue_date: self.issue_date,
            total: String::new(),
            external_reference: self.external_reference.clone(),
            customer_id,
            user_id: self.user_id,
            request: serde_json::Value::Null,
            transmission: None,
            attempts: 0,
            track_id: None,
            application_response_missing: None,
            api: self.api.clone(),
            list_keys: self.list_keys.clone(),
            issued_at: self.issued_at,
            authority_events: Vec::new(),
            created_at: now,
            updated_at: now,
        }
    }
}

/// The files of an issued document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DocumentFiles {
    pub xml: String,
    pub xml_name: String,
    pub zip_name: String,
    pub zip: ZipFile,
}

/// A document's ZIP: kept as built, or built again from the XML whenever
/// it is needed (byte for byte the same: one entry named `xml_name`,
/// stamped `at`, deflated the same way), so that only the XML is stored.
#[derive(Debug, Clone, PartialEq)]
pub enum ZipFile {
    /// Documents stored before ZIPs were derived, and ZIPs built otherwise.
    Stored(Vec<u8>),
    /// Built from the XML, stamped with the signing time.
    Derived { at: DateTime<FixedOffset> },
}

impl Default for ZipFile {
    fn default() -> Self {
        ZipFile::Stored(Vec::new())
    }
}

/// Where a document's files are in the file log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    pub segment: u32,
    pub offset: u64,
    pub xml_len: u32,
    pub zip_len: u32,
}

/// A document's files once appended to the file log: what the
/// `document_files` tree holds for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagedFiles {
    pub xml_name: String,
    pub zip_name: String,
    pub at: FileRef,
    /// The XML is a zstd frame (else, older records, the XML itself)...
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compressed: bool,
    /// ...against this dictionary ([`crate::encoding::compress`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dictionary: Option<u64>,
    /// No ZIP in the log: it is derived, stamped with this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zip_at: Option<DateTime<FixedOffset>>,
    /// The request as `document_requests` kept it, moved to the log with
    /// the XML (absent: it is still in that tree, or in the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_at: Option<FileRef>,
}

/// The files as data dirs written before the file log kept them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct InlineFiles {
    pub xml: String,
    pub xml_name: String,
    pub zip: Vec<u8>,
    pub zip_name: String,
}

/// A `document_files` value: the log reference, or (data dirs written
/// before the file log) the files themselves.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum StoredFiles {
    Logged(StagedFiles),
    Inline(InlineFiles),
}

/// One line of a document's history: who did what, when, and what the
/// authority said.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistoryEntry {
    pub at: DateTime<Utc>,
    /// `api`, `worker`, `recovery`, `resend`, …
    pub actor: String,
    pub event: String,
    #[serde(default)]
    pub from_state: Option<u8>,
    #[serde(default)]
    pub to_state: Option<u8>,
    #[serde(default)]
    pub data: serde_json::Value,
}

/// A unit of durable background work (transmit, email, webhook). Written
/// before the client is answered; removed when the work is done.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Job {
    pub id: u64,
    pub kind: String,
    pub company_id: CompanyId,
    #[serde(default)]
    pub document_id: Option<u64>,
    pub attempts: u32,
    /// Unix milliseconds when the job may next run.
    pub run_at_ms: i64,
    /// Set before a send starts and cleared when its answer is stored: a job
    /// found in flight after a crash may have reached the authority, so it
    /// asks for the status before sending again.
    #[serde(default)]
    pub in_flight: bool,
    #[serde(default)]
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

/// A job claimed by a worker until a time: another worker's claim fails
/// until then, and succeeds after it (the holder died or stalled).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct JobLease {
    pub job_id: u64,
    pub worker: String,
    /// Unix milliseconds the lease ends at.
    pub expires_at_ms: i64,
}

/// What a consistent copy of the store holds (`Backup::checkpoint_to`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointCopy {
    /// The engine's collections (trees) copied.
    pub collections: usize,
    /// Entries copied across them.
    pub entries: u64,
    /// Bytes of the files beside the engine (document files, payloads)
    /// copied.
    pub file_bytes: u64,
    /// How long issuing was held for the point (phase one and the group
    /// commits).
    pub paused: std::time::Duration,
    /// The newest document id in the copy (its last committed document).
    pub last_document_id: Option<u64>,
}

/// A file beside the engine as of a checkpoint's point: an append-only
/// log, whose first `len` bytes belong to the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    /// Its directory in a data dir (`files`, `payloads`).
    pub dir: &'static str,
    pub name: std::ffi::OsString,
    /// Where it is in the store.
    pub source: std::path::PathBuf,
    pub len: u64,
}

/// A restored store's numberings held until the operator confirms each
/// one's next number (`Backup::confirm_numbering`): the original may have
/// given numbers after the backup's point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NumberingHold {
    pub since: DateTime<Utc>,
    /// Every numbering at the hold (a resolution added later is not held).
    pub held: Vec<HeldNumbering>,
    pub confirmed: Vec<ConfirmedNumbering>,
}

/// A numbering a [`NumberingHold`] holds, with the next number the restored
/// store would give.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeldNumbering {
    pub company_id: CompanyId,
    pub resolution_id: u64,
    pub prefix: String,
    pub next: u64,
}

/// One numbering released from a [`NumberingHold`], with the number it
/// goes on from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConfirmedNumbering {
    pub company_id: CompanyId,
    pub resolution_id: u64,
    pub next: u64,
    pub at: DateTime<Utc>,
}

/// History entry of a document or company (who, when, what).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventRecord {
    pub id: u64,
    pub company_id: CompanyId,
    #[serde(default)]
    pub document_id: Option<u64>,
    pub kind: String,
    pub at: DateTime<Utc>,
    #[serde(default)]
    pub data: serde_json::Value,
}

/// Where an email stands (`EmailLog::status`).
pub mod email_status {
    /// Waiting for its first attempt or for a retry.
    pub const QUEUED: &str = "queued";
    /// The server took it (SMTP 250) or it was written to the outbox.
    pub const SENT: &str = "sent";
    /// Every attempt failed (or it cannot be sent at all); a resend may try again.
    pub const FAILED: &str = "failed";
}

/// One email of a document and what became of it. Its durable job (kind
/// `email`) is written before the first attempt; the log is updated after
/// each attempt.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmailLog {
    pub id: u64,
    pub company_id: CompanyId,
    pub document_id: u64,
    pub to: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    /// [`email_status`].
    pub status: String,
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub sent_at: Option<DateTime<Utc>>,
    /// Stable across attempts (and a resend after a crash): the same message.
    #[serde(default)]
    pub message_id: String,
    #[serde(default)]
    pub subject: String,
    /// Sent because the document was accepted (not asked for).
    #[serde(default)]
    pub automatic: bool,
    /// The log this one resends, when it is a resend of a sent mail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend_of: Option<u64>,
    /// What the mail carries instead of the usual, and why (a document
    /// accepted before the ApplicationResponse was kept has no AttachedDocument).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<EmailAttempt>,
}

/// One attempt of an email.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmailAttempt {
    pub at: DateTime<Utc>,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What becomes of an email's job when its log is updated.
#[derive(Debug, Clone, PartialEq)]
pub enum EmailJob {
    /// Stored (or replaced), e.g. with a later run time.
    Put(Job),
    /// Done: removed.
    Remove(u64),
    Keep,
}

/// Everything the store holds for issuing one document type of a company,
/// read together: what is missing is `None`, for the caller to name.
#[derive(Debug, Clone)]
pub struct IssuerRecords {
    pub company: Option<Arc<Company>>,
    pub software: Option<Arc<SoftwareRegistration>>,
    pub resolution: Option<NumberingResolution>,
    pub certificate: Option<Arc<CertificateRecord>>,
    /// The resolution's next number (none is taken).
    pub next_number: Option<u64>,
}

/// Which resolution [`IssuerRecords`] reads.
#[derive(Debug, Clone, Copy)]
pub enum ResolutionChoice {
    /// The one with this id (a document being built again keeps its own).
    Id(u64),
    /// The one a new document of `document_type` in `environment` takes
    /// its number from on `date` (`CredentialStore::active_resolution`).
    Active {
        environment: Environment,
        document_type: u8,
        date: NaiveDate,
    },
}
