//! Invoices seen from the events' side (spec 2.13, 4.6, 4.7): received by
//! upload or issued through this service to another of its companies, with
//! their events in order and their current holder. An upload belongs to
//! the company that uploaded it (found by company and CUFE); the record
//! whose content is vouched for (issued here, or an upload equal to the
//! authority's copy) is also the one every party finds by the CUFE.
//! Received invoices have ids of their own, outside the documents' ids.

use chrono::{DateTime, FixedOffset, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::model::{CompanyId, Environment};

/// An event's standing with the authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventState {
    /// Written, waiting to be sent (or for an answer).
    Pending,
    Accepted,
    /// Refused by the authority: it does not count; it may be registered again.
    Rejected,
}

/// How a received invoice stands against the document the authority
/// accepted for its CUFE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyState {
    /// Not compared yet: an upload stored before uploads were compared
    /// with the authority's copy.
    #[default]
    Unchecked,
    /// Issued through this service, or an upload equal to the authority's copy.
    Same,
    /// An upload that is not the document the authority accepted for its
    /// CUFE (or one the authority does not give its uploader): its
    /// uploader's alone, and no event may be registered on it.
    Differs,
}

/// The comparison with the authority's copy, as the record's history shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CopyCheck {
    pub state: CopyState,
    #[serde(default)]
    pub checked_at: Option<DateTime<Utc>>,
    /// What was found, in words (the authority's answer when it gave none).
    #[serde(default)]
    pub detail: Option<String>,
}

impl CopyCheck {
    pub fn same(detail: impl Into<String>) -> Self {
        CopyCheck {
            state: CopyState::Same,
            checked_at: Some(Utc::now()),
            detail: Some(detail.into()),
        }
    }

    pub fn differs(detail: impl Into<String>) -> Self {
        CopyCheck {
            state: CopyState::Differs,
            checked_at: Some(Utc::now()),
            detail: Some(detail.into()),
        }
    }
}

/// A party by identification, and the company of this service it is, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PartyRef {
    pub id_number: String,
    #[serde(default)]
    pub id_type: String,
    #[serde(default)]
    pub check_digit: Option<u8>,
    pub name: String,
    #[serde(default)]
    pub company_id: Option<CompanyId>,
}

/// One event of an invoice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceEvent {
    pub id: u64,
    /// The API's code (`030`…`038`).
    pub code: String,
    /// The authority's `ResponseCode`.
    pub authority_code: String,
    pub name: String,
    /// The event's own number (`cbc:ID`).
    pub number: String,
    pub cude: String,
    pub issued_at: DateTime<FixedOffset>,
    /// The company that registered it.
    pub company_id: CompanyId,
    pub environment: Environment,
    pub sender: PartyRef,
    pub receiver: PartyRef,
    pub state: EventState,
    #[serde(default)]
    pub attempts: u32,
    /// The authority's last answer (spec 2.4 `transmission`).
    #[serde(default)]
    pub transmission: Option<serde_json::Value>,
    /// What the caller gave: notes, claim concept, endorsee, conditions.
    #[serde(default)]
    pub details: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An invoice as its events see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceivedInvoice {
    /// 0 until stored.
    pub id: u64,
    /// Bumped by every write; a write names the version it read.
    #[serde(default)]
    pub version: u64,
    pub cufe: String,
    pub environment: Environment,
    pub number: String,
    pub type_code: String,
    pub issue_date: NaiveDate,
    #[serde(default)]
    pub due_date: Option<NaiveDate>,
    pub currency: String,
    /// Payable amount, a decimal string.
    pub total: String,
    pub vendor: PartyRef,
    pub buyer: PartyRef,
    /// The legitimate holder: the vendor, then each endorsee in property.
    pub holder: PartyRef,
    /// The company that uploaded it (`cargar-documento`).
    #[serde(default)]
    pub uploaded_by: Option<CompanyId>,
    /// The vendor's document, when it was issued through this service.
    #[serde(default)]
    pub document_id: Option<u64>,
    /// May be registered as a title now (kept by the caller, indexed here).
    #[serde(default)]
    pub eligible: bool,
    /// Compared with the authority's copy of the CUFE.
    #[serde(default)]
    pub authority_copy: CopyCheck,
    #[serde(default)]
    pub events: Vec<InvoiceEvent>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// An event on a company's own invoice as the authority lists it
/// (`GetStatusEvent`), learned by the sweep of its invoices. Kept on the
/// invoice's record, oldest first; absent from records written before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorityEvent {
    /// The authority's event code (`030`…).
    pub code: String,
    pub name: String,
    /// Its date (`yyyy-MM-dd`) and time, as the authority wrote them.
    pub date: String,
    #[serde(default)]
    pub time: String,
    /// The event's own number and CUDE.
    #[serde(default)]
    pub number: String,
    #[serde(default)]
    pub cude: String,
    /// Who registered it and for whom (NITs), when listed.
    #[serde(default)]
    pub issuer_nit: Option<String>,
    #[serde(default)]
    pub recipient_nit: Option<String>,
    /// When this service learned it.
    pub learned_at: DateTime<Utc>,
}

impl AuthorityEvent {
    /// What tells two listings of one event apart from another event:
    /// its CUDE, else its code and number.
    pub fn identity(&self) -> (&str, &str, &str) {
        if self.cude.is_empty() {
            ("", self.code.as_str(), self.number.as_str())
        } else {
            (self.cude.as_str(), "", "")
        }
    }
}

/// An event's signed XML and the ZIP sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventFiles {
    pub xml: String,
    pub zip_name: String,
    #[serde(with = "zip_b64")]
    pub zip: Vec<u8>,
}

mod zip_b64 {
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
