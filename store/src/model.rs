//! Records kept by the store. English names inside; the HTTP layer renames to
//! the Spanish JSON of the spec. New fields must carry `#[serde(default)]` so
//! records written by older builds stay readable.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

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
    pub pin: String,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumberingResolution {
    pub id: u64,
    pub company_id: CompanyId,
    pub document_type: u8,
    pub resolution_number: String,
    pub resolution_date: NaiveDate,
    pub prefix: String,
    pub from: u64,
    pub to: u64,
    pub valid_from: NaiveDate,
    pub valid_to: NaiveDate,
    /// Technical key (ClTec) used by the CUFE; notes and PIN-coded types ignore it.
    pub technical_key: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewResolution {
    pub document_type: u8,
    pub resolution_number: String,
    pub resolution_date: NaiveDate,
    pub prefix: String,
    pub from: u64,
    pub to: u64,
    pub valid_from: NaiveDate,
    pub valid_to: NaiveDate,
    pub technical_key: String,
}

/// The company's signing certificate as imported (PKCS#12), with the facts
/// needed to refuse it without parsing it again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CertificateRecord {
    pub company_id: CompanyId,
    pub pkcs12_der: Vec<u8>,
    pub password: String,
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

/// One page of a list.
#[derive(Debug, Clone, Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}

/// A stored document. The engine issue fills the XML side; the transmission
/// issue fills the state machine. Kept open (`serde_json::Value` for the
/// request) so each family can keep what it was asked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DocumentRecord {
    pub id: u64,
    pub company_id: CompanyId,
    pub environment: Environment,
    pub document_type: u8,
    pub resolution_id: u64,
    pub prefix: String,
    pub number: u64,
    /// 1 Borrador … 6 Dead Letter (spec 3.1).
    pub state: u8,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub external_reference: Option<String>,
    #[serde(default)]
    pub customer_id: Option<u64>,
    #[serde(default)]
    pub request: serde_json::Value,
    #[serde(default)]
    pub extra: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A unit of durable background work (transmit, retry, email, webhook).
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
    #[serde(default)]
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmailLog {
    pub id: u64,
    pub company_id: CompanyId,
    pub document_id: u64,
    pub to: Vec<String>,
    #[serde(default)]
    pub cc: Vec<String>,
    pub status: String,
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub sent_at: Option<DateTime<Utc>>,
}
