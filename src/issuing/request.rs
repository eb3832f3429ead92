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

use super::declared::{differences, Declared, Paid};
use super::error::{FieldError, IssueError, IssueResult};
use super::reference::Reference;
use crate::engine::codes::CodeScheme;
use crate::engine::model::{Document, DocumentKind, TaxRate};
use crate::engine::totals::{cents, Totals};
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
    /// The list keys whose values issuing writes from the totals it
    /// computes (a POS receipt's `subtotal`, a support document's
    /// `total_neto`, …).
    pub list_totals: Vec<(String, ListTotal)>,
    /// What the caller says was paid, compared with the payable amount
    /// before anything else ([`Paid`]).
    pub paid: Option<Paid>,
}

/// A list key's value, written by issuing from the document's totals so
/// that a list shows its amounts without building anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListTotal {
    /// The lines' total, to the cent.
    LineExtension,
    /// The taxes' total.
    TaxTotal,
    /// The withholdings' total.
    WithholdingTotal,
    /// The document charges' total (a POS tip).
    ChargeTotal,
    /// The lines' total less the withholdings (a support document's net).
    LinesLessWithholdings,
    /// Each tax subtotal by scheme and rate, `01/19=base:amount;…` (the
    /// cash count's); no key when there is none.
    TaxDetail,
    /// `<method>=<payable>`: the whole paid with one method.
    PaidWith(String),
}

impl ListTotal {
    /// The value in `totals` (`None`: no key).
    pub fn of(&self, t: &Totals) -> Option<String> {
        Some(match self {
            ListTotal::LineExtension => cents(t.line_extension),
            ListTotal::TaxTotal => cents(t.tax_total),
            ListTotal::WithholdingTotal => cents(t.withholding_total),
            ListTotal::ChargeTotal => cents(t.charge_total),
            ListTotal::LinesLessWithholdings => cents(t.line_extension - t.withholding_total),
            ListTotal::TaxDetail => {
                let detail: Vec<String> = t
                    .taxes
                    .iter()
                    .flat_map(|g| {
                        g.subtotals.iter().map(move |s| {
                            let rate = match s.rate {
                                TaxRate::Percent(p) | TaxRate::PerUnit(p) => p.normalize(),
                            };
                            format!("{}/{}={}:{}", g.code, rate, s.taxable, s.amount)
                        })
                    })
                    .collect();
                if detail.is_empty() {
                    return None;
                }
                detail.join(";")
            }
            ListTotal::PaidWith(method) => format!("{method}={}", cents(t.payable)),
        })
    }
}

impl DocumentRequest {
    /// A refusal from the engine's validation errors, naming the caller's fields.
    pub fn validation_error(&self, errors: &[ValidationError]) -> IssueError {
        IssueError::invalid_list(named(errors, |f| self.fields.field(f)))
    }

    /// The list keys to store, those written from `totals` included.
    pub fn list_keys_with(&self, totals: &Totals) -> BTreeMap<String, String> {
        let mut keys = self.list_keys.clone();
        for (key, total) in &self.list_totals {
            if let Some(value) = total.of(totals) {
                keys.insert(key.clone(), value);
            }
        }
        keys
    }

    /// Refuses the request when what it says was paid is not its payable
    /// amount.
    pub fn check_paid(&self) -> IssueResult<()> {
        match self.paid.as_ref().and_then(|p| p.problem(&self.document)) {
            None => Ok(()),
            Some(problem) => Err(IssueError::invalid_list(vec![problem])),
        }
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
