//! The records of an export (`emisor admin export`): every record of a
//! store as the traits read it, engine-neutral, one per line of the export
//! file (`crate::export`, docs/reference/export-format.md). Any engine
//! reads them with the store traits and writes them with `Import`.
//!
//! Secret fields serialize sealed (they are written only inside a sealing
//! scope, as everywhere in the store); bytes are base64.

use chrono::{DateTime, FixedOffset};
use serde::{Deserialize, Serialize};

use crate::model::received::{EventFiles, ReceivedInvoice};
use crate::model::*;

/// One record of an export. `entity` names it on its line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "entity", rename_all = "snake_case")]
pub enum ExportItem {
    Company(Company),
    Software(SoftwareRegistration),
    Resolution(NumberingResolution),
    /// The next number of a numbering (a company's resolution or a test set
    /// as that company uses it).
    Counter(NumberingCounter),
    Certificate(CertificateRecord),
    ApiKey(ApiKeyRecord),
    Customer(Customer),
    Setting(Setting),
    Document(Box<ExportedDocument>),
    Job(Job),
    EmailLog(EmailLog),
    Event(EventRecord),
    Received(Box<ExportedReceived>),
    EventFiles(ExportedEventFiles),
    NumberingHold(NumberingHold),
}

impl ExportItem {
    /// The `entity` of its line.
    pub fn kind(&self) -> &'static str {
        match self {
            ExportItem::Company(_) => "company",
            ExportItem::Software(_) => "software",
            ExportItem::Resolution(_) => "resolution",
            ExportItem::Counter(_) => "counter",
            ExportItem::Certificate(_) => "certificate",
            ExportItem::ApiKey(_) => "api_key",
            ExportItem::Customer(_) => "customer",
            ExportItem::Setting(_) => "setting",
            ExportItem::Document(_) => "document",
            ExportItem::Job(_) => "job",
            ExportItem::EmailLog(_) => "email_log",
            ExportItem::Event(_) => "event",
            ExportItem::Received(_) => "received",
            ExportItem::EventFiles(_) => "event_files",
            ExportItem::NumberingHold(_) => "numbering_hold",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberingCounter {
    pub company_id: CompanyId,
    pub resolution_id: u64,
    pub next: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
}

/// A document with everything the store keeps of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedDocument {
    pub record: DocumentRecord,
    /// The request it was issued from, as stored (opaque bytes).
    #[serde(default, with = "b64_opt")]
    pub request: Option<Vec<u8>>,
    /// Absent while its build has not finished.
    #[serde(default)]
    pub files: Option<ExportedFiles>,
    /// Oldest first.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
    /// The authority's ApplicationResponse, for an accepted document.
    #[serde(default)]
    pub application_response: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedFiles {
    pub xml_name: String,
    /// The signed XML, byte for byte.
    #[serde(with = "b64")]
    pub xml: Vec<u8>,
    pub zip_name: String,
    /// The ZIP as kept, byte for byte...
    #[serde(default, with = "b64_opt", skip_serializing_if = "Option::is_none")]
    pub zip: Option<Vec<u8>>,
    /// ...or, when it is built from the XML whenever needed, the time it is
    /// stamped with (one entry named `xml_name`: the same bytes each time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zip_derived_at: Option<DateTime<FixedOffset>>,
}

impl ExportedFiles {
    pub fn of(files: &DocumentFiles) -> ExportedFiles {
        let (zip, zip_derived_at) = match &files.zip {
            ZipFile::Stored(bytes) => (Some(bytes.clone()), None),
            ZipFile::Derived { at } => (None, Some(*at)),
        };
        ExportedFiles {
            xml_name: files.xml_name.clone(),
            xml: files.xml.as_bytes().to_vec(),
            zip_name: files.zip_name.clone(),
            zip,
            zip_derived_at,
        }
    }

    /// The files as the store keeps them; `None` when the XML is not UTF-8.
    pub fn files(&self) -> Option<DocumentFiles> {
        let zip = match (&self.zip, self.zip_derived_at) {
            (_, Some(at)) => ZipFile::Derived { at },
            (Some(bytes), None) => ZipFile::Stored(bytes.clone()),
            (None, None) => ZipFile::Stored(Vec::new()),
        };
        Some(DocumentFiles {
            xml: String::from_utf8(self.xml.clone()).ok()?,
            xml_name: self.xml_name.clone(),
            zip_name: self.zip_name.clone(),
            zip,
        })
    }
}

/// A received invoice (its events inside) and the upload it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedReceived {
    pub record: ReceivedInvoice,
    #[serde(default)]
    pub upload: Option<String>,
}

/// The signed ApplicationResponse and ZIP of an event on a received invoice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedEventFiles {
    pub event_id: u64,
    pub files: EventFiles,
}

/// What an import wrote, by `entity`.
pub type ImportCounts = std::collections::BTreeMap<String, u64>;

mod b64 {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(v))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        STANDARD.decode(s).map_err(serde::de::Error::custom)
    }
}

mod b64_opt {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(bytes) => s.serialize_str(&STANDARD.encode(bytes)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(s) => STANDARD
                .decode(s)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}
