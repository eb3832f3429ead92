//! What every API hands to issuing: a domain request (the engine's
//! document, or a payroll, plus what issuing needs to number, store and
//! send it), and the caller's own names for the engine's fields, so that a
//! refusal names what the caller sent. Each API translates its JSON into
//! this; issuing never sees the API's types.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use chrono::NaiveDate;
use emisor_store::CustomerInput;

use super::declared::{differences, Declared};
use super::error::{FieldError, IssueError, IssueResult};
use super::reference::Reference;
use crate::engine::codes::CodeScheme;
use crate::engine::model::{Document, DocumentKind};
use crate::engine::totals::Totals;
use crate::engine::validate::ValidationError;

/// Most field errors listed in one answer.
pub const MAX_DETAILS: usize = 100;

/// The API a document came through; its translator rebuilds it from the
/// stored request (after a crash, or when it is resent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// `POST /facturacion`.
    Unified,
    /// `POST /facturacion-es/*`, the Spanish-named API.
    Spanish,
    /// `/documentos-soporte`.
    Support,
    /// `/pos`.
    Pos,
    /// `POST /nomina/enviar`, `/nomina/ajuste`.
    Payroll,
}

impl Api {
    /// As stored with the document (absent in older records: unified).
    pub fn tag(self) -> Option<&'static str> {
        match self {
            Api::Unified => None,
            Api::Spanish => Some("facturacion-es"),
            Api::Support => Some("documentos_soporte"),
            Api::Pos => Some("pos"),
            Api::Payroll => Some(PAYROLL_API),
        }
    }

    pub fn from_tag(tag: Option<&str>) -> Option<Api> {
        match tag {
            None | Some("") | Some("facturacion") => Some(Api::Unified),
            Some("facturacion-es") => Some(Api::Spanish),
            Some("documentos_soporte") => Some(Api::Support),
            Some("pos") => Some(Api::Pos),
            Some(PAYROLL_API) => Some(Api::Payroll),
            Some(_) => None,
        }
    }
}

/// How a caller names the engine's fields.
pub trait CallerFields: Send + Sync + fmt::Debug {
    /// The caller's path of an engine field
    /// (`lines[0].quantity` → `invoice_lines[0].invoiced_quantity`).
    fn field(&self, engine_field: &str) -> String;
}

/// One document to issue, as every API hands it over.
#[derive(Debug, Clone)]
pub struct DocumentRequest {
    pub api: Api,
    pub kind: DocumentKind,
    pub document: Document,
    /// The customer as stored (upserted with the document).
    pub customer: CustomerInput,
    pub transmit: bool,
    pub asynchronous: bool,
    pub external_reference: Option<String>,
    /// A note's original as the caller named it, which issuing looks up
    /// and writes as the document's billing reference
    /// ([`super::reference`]).
    pub reference: Option<Reference>,
    /// The amounts the caller declared beyond the document's own (the
    /// engine compares those), compared once the totals are computed.
    pub declared: Vec<Declared>,
    pub fields: Arc<dyn CallerFields>,
    /// The family's list keys (`proveedor`, `id_caja`, `id_cajero`,
    /// `tipo`, …), stored with the document and indexed for its lists.
    pub list_keys: BTreeMap<String, String>,
}

impl DocumentRequest {
    /// A refusal from the engine's validation errors, naming the caller's fields.
    pub fn validation_error(&self, errors: &[ValidationError]) -> IssueError {
        IssueError::invalid_list(named(errors, |f| self.fields.field(f)))
    }

    /// Refuses the request when an amount it declared differs from the
    /// computed one.
    pub fn check_declared(&self, totals: &Totals) -> IssueResult<()> {
        let details = differences(&self.declared, totals);
        if details.is_empty() {
            Ok(())
        } else {
            Err(IssueError::invalid_list(cap(details)))
        }
    }
}

/// The engine's validation errors as field errors named by `name` (the
/// caller's path of an engine field), at most [`MAX_DETAILS`] of them.
pub fn named(errors: &[ValidationError], name: impl Fn(&str) -> String) -> Vec<FieldError> {
    let details = errors
        .iter()
        .map(|e| {
            let message = e
                .message
                .strip_prefix(&format!("{}: ", e.field))
                .unwrap_or(&e.message);
            FieldError::new(name(&e.field), message)
        })
        .collect();
    cap(details)
}

/// At most [`MAX_DETAILS`] errors, the rest summarized in one entry.
pub fn cap(mut details: Vec<FieldError>) -> Vec<FieldError> {
    if details.len() > MAX_DETAILS {
        let more = details.len() - MAX_DETAILS;
        details.truncate(MAX_DETAILS);
        details.push(FieldError::new(
            "body",
            format!("{more} more errors not listed"),
        ));
    }
    details
}

/// `DocumentRecord::api` of payroll documents.
pub const PAYROLL_API: &str = "nomina";

/// One payroll to issue, as the payroll API hands it over.
#[derive(Debug, Clone)]
pub struct PayrollRequest {
    pub document: crate::engine::payroll::model::PayrollDocument,
    pub transmit: bool,
    /// The prefix the caller asked for (`prefijo`); the resolution's must match.
    pub prefix: Option<String>,
    /// The caller's path of an engine field (`period.days_worked` →
    /// `periodo.tiempo_laborado_dias`).
    pub fields: fn(&str) -> String,
    /// The list keys (`tipo` = `INDIVIDUAL` | `AJUSTE`, indexed), stored
    /// with the document.
    pub list_keys: std::collections::BTreeMap<String, String>,
}

/// The original document of a note, as the store has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferencedDocument {
    pub id: u64,
    /// Prefix + number (`SETP990000001`).
    pub number: String,
    /// Its CUFE / CUDE / CUDS.
    pub code: String,
    /// Which code it is (`CodeScheme::from_scheme_name("CUFE-SHA384")`).
    pub scheme: CodeScheme,
    pub issue_date: NaiveDate,
    pub kind: DocumentKind,
}

/// An invoicing API's translation of its stored requests, for the
/// documents issuing builds again on its own (a half-built one after a
/// crash, a resend).
pub trait Translator: Send + Sync {
    /// The stored request as a domain request (a note's original named,
    /// not looked up).
    fn translate(&self, request: &[u8]) -> IssueResult<DocumentRequest>;
}

/// The payroll API's translation of its stored requests: a payroll is
/// built from a [`PayrollRequest`], never from a [`DocumentRequest`], and
/// the registry keeps the two apart.
pub trait PayrollTranslator: Send + Sync {
    /// The stored request as the payroll to build.
    fn translate(&self, request: &[u8]) -> IssueResult<PayrollRequest>;
}

/// The translators of the APIs, registered at start-up.
#[derive(Clone, Default)]
pub struct Translators {
    invoicing: Vec<(Api, Arc<dyn Translator>)>,
    payroll: Option<Arc<dyn PayrollTranslator>>,
}

impl Translators {
    /// `api`'s translator of invoicing documents.
    pub fn with(mut self, api: Api, translator: Arc<dyn Translator>) -> Self {
        self.invoicing.push((api, translator));
        self
    }

    /// The payroll API's translator.
    pub fn with_payroll(mut self, translator: Arc<dyn PayrollTranslator>) -> Self {
        self.payroll = Some(translator);
        self
    }

    pub fn get(&self, api: Api) -> IssueResult<&Arc<dyn Translator>> {
        self.invoicing
            .iter()
            .find(|(a, _)| *a == api)
            .map(|(_, t)| t)
            .ok_or_else(|| IssueError::Internal(format!("no translator for {api:?}")))
    }

    pub fn payroll(&self) -> IssueResult<&Arc<dyn PayrollTranslator>> {
        self.payroll
            .as_ref()
            .ok_or_else(|| IssueError::Internal("no payroll translator".into()))
    }
}
