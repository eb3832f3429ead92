//! `POST /facturacion` body → the engine's [`Document`], with every problem
//! of the request reported at once as a 422 naming its JSON path.
//!
//! Decisions where the spec is silent:
//! - Type 2 with `id_tipo_operacion` `10` is an export invoice, like type 6;
//!   both take `invoice_lines`. Export invoices ignore `id_tipo_operacion`
//!   (the XML says 10 with `InvoiceTypeCode` 02, rule FAD02).
//! - `id_tipo_operacion` is the spec's code, written as the authority's
//!   (decisions.md §5 "Operation types in the XML"): `11` on an invoice or
//!   note is the health sector (needs `salud`; `SS-SinAporte` on an invoice,
//!   as this API takes no copay, `SS-CUDE` on a note, with the health
//!   annex's data), `12` on an invoice is cargo transport (lines
//!   carry `transporte`; written as 10 with the freight data on the lines).
//!   `salud` or `transporte` without its operation is a 422.
//! - `referencia_contingencia` is read on type 7 only, `id_caja` and
//!   `id_cajero` on type 9 only (ignored elsewhere, as the reference fields).
//! - Notes (2, 3, 5, 10) need `id_documento_referencia` and
//!   `id_concepto_nota`. The original is named, not looked up: issuing
//!   looks it up and checks it (`issuing::reference`: not found, or not a
//!   document the note may reference → 422 on `id_documento_referencia`,
//!   at its place among the request's other problems).
//!   The reference fields are ignored on other types.
//! - Concepts: credit and POS adjustment 1–5, debit 1–4, support adjustment
//!   1–3 (spec 2.8); the concept's name is the note's reason text.
//! - Customer: the identification type defaults to `50` (foreign NIT) when
//!   `country_code` is not `CO`, else `31` when `type_organization` is `1`,
//!   else `13`; the organization type defaults to legal entity for `31`/`50`,
//!   natural person otherwise. Tax responsibilities `R-99-PN`, tax scheme
//!   `ZZ` (the object has no field for them). A Colombian municipality code
//!   must be the 5-digit DIVIPOLA code; its department is derived from it.
//! - `referencia_externa`: 1–100 characters, no control characters.
//! - At most 100 field errors are listed; more are summarized in one entry.

use std::fmt::Display;
use std::sync::Arc;

use emisor_store::CustomerInput;
use rust_decimal::Decimal;

use super::request::FacturacionRequest;
use crate::api::invoice_request::customer::CustomerRequest;
use crate::engine::codes::nit_check_digit;
use crate::engine::limits;
use crate::engine::model::{
    Address, DeclaredTotals, Document, DocumentKind, ExchangeRate, HealthInfo, NoteConcept,
    OrganizationType, PaperReference, Party, Payment, PointOfSale, TaxRate, TaxSchemeRef,
};
use crate::engine::totals::Totals;
use crate::engine::ubl::sector::{code_name, COVERAGES, PAYMENT_MODALITIES};
use crate::engine::validate::{text_problem, ValidationError, MAX_AMOUNT};
use crate::http::error::{ApiError, FieldError};
use crate::issuing::declared::{differences, Computed, Declared, Part, Wording, CENT};
use crate::issuing::reference::{ByCode, Pending, Reference, Refused};
use crate::issuing::request::{cap, named, Api, CallerFields, DocumentRequest};

pub(crate) mod codes;
mod fields;
mod lines;

use lines::{map_declared_tax, map_lines, LineArray};

pub use fields::FieldMap;

#[cfg(test)]
mod tests;

/// A document of the top-level `tax_totals`, to compare with ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredTax {
    /// Index in the request's `tax_totals`.
    pub index: usize,
    pub code: String,
    /// The subtotal it is about; the whole tax code when absent.
    pub rate: Option<TaxRate>,
    pub taxable: Option<Decimal>,
    pub amount: Option<Decimal>,
}

/// The request translated: what the handler needs to issue and store it.
#[derive(Debug, Clone)]
pub struct MappedDocument {
    pub kind: DocumentKind,
    /// `document.declared` is `declared`.
    pub document: Document,
    /// For the customer upsert.
    pub customer: CustomerInput,
    pub transmit: bool,
    pub asynchronous: bool,
    pub declared: Option<DeclaredTotals>,
    pub declared_taxes: Vec<DeclaredTax>,
    pub external_reference: Option<String>,
    /// A note's original, as named (issuing looks it up).
    pub reference: Option<Reference>,
    /// Engine field → request path.
    pub fields: FieldMap,
}

impl MappedDocument {
    /// The request path of an engine field name.
    pub fn api_field(&self, engine_field: &str) -> String {
        self.fields.api_field(engine_field)
    }

    /// A 422 from the engine's validation errors
    /// (`engine::validate::validate_and_total`), naming request paths.
    pub fn validation_error(&self, errors: &[ValidationError]) -> ApiError {
        ApiError::validation_list(named(errors, |f| self.api_field(f)))
    }

    /// Compares the document `tax_totals` the caller declared with the
    /// computed totals, 0.01 tolerance (the engine's validation compares
    /// the line amounts and `legal_monetary_totals`).
    pub fn check_declared(&self, totals: &Totals) -> Result<(), ApiError> {
        let details = differences(&declared_list(&self.declared_taxes), totals);
        if details.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation_list(cap(details)))
        }
    }

    /// The domain request issuing takes.
    pub fn into_request(self) -> DocumentRequest {
        DocumentRequest {
            api: Api::Unified,
            kind: self.kind,
            document: self.document,
            customer: self.customer,
            transmit: self.transmit,
            asynchronous: self.asynchronous,
            external_reference: self.external_reference,
            reference: self.reference,
            declared: declared_list(&self.declared_taxes),
            list_keys: Default::default(),
            list_totals: Vec::new(),
            paid: None,
            fields: Arc::new(UnifiedFields {
                fields: self.fields,
            }),
        }
    }
}

/// How the unified API names the engine's fields: its half of a
/// [`DocumentRequest`].
#[derive(Debug)]
struct UnifiedFields {
    fields: FieldMap,
}

impl CallerFields for UnifiedFields {
    fn field(&self, engine_field: &str) -> String {
        self.fields.api_field(engine_field)
    }
}

/// The document `tax_totals` as amounts to compare: a code with a rate
/// with that rate's subtotal, a code alone with the whole code (zero when
/// the lines carry no such tax); the taxable amount of a percentage only.
fn declared_list(declared_taxes: &[DeclaredTax]) -> Vec<Declared> {
    let mut out = Vec::new();
    for t in declared_taxes {
        let withholding = codes::is_withholding(&t.code);
        let computed = |part| match t.rate {
            None => Computed::Group {
                code: t.code.clone(),
                withholding,
                part,
            },
            Some(rate) => Computed::Subtotal {
                code: t.code.clone(),
                withholding,
                rate,
                part,
            },
        };
        let declared = |name: &str, amount, part| Declared {
            field: format!("tax_totals[{}].{name}", t.index),
            amount,
            computed: computed(part),
            tolerance: CENT,
            wording: Wording::English,
        };
        if let Some(d) = t.amount {
            out.push(declared("tax_amount", d, Part::Amount));
        }
        if let (Some(d), Some(TaxRate::Percent(_))) = (t.taxable, t.rate) {
            out.push(declared("taxable_amount", d, Part::Taxable));
        }
    }
    out
}

/// Field errors being collected.
#[derive(Default)]
struct Errors(Vec<FieldError>);

impl Errors {
    /// `field` is any `Display`: a line's field names are written only
    /// when there is an error to name (formatting every one showed in the
    /// profile of the issuing path).
    fn push(&mut self, field: impl Display, message: impl Into<String>) {
        self.0.push(FieldError::new(field.to_string(), message));
    }

    /// Characters XML 1.0 cannot carry (not reported again on a field
    /// already in error).
    fn text(&mut self, field: impl Display, value: &str) {
        if let Some(problem) = text_problem(value, usize::MAX) {
            let field = field.to_string();
            if !self.0.iter().any(|e| e.field == field) {
                self.push(field, problem);
            }
        }
    }

    /// [`Self::text`], and at most `max` characters (`engine::limits`).
    fn limited(&mut self, field: impl Display, value: &str, max: usize) {
        if let Some(problem) = text_problem(value, max) {
            let field = field.to_string();
            if !self.0.iter().any(|e| e.field == field) {
                self.push(field, problem);
            }
        }
    }

    fn opt_limited(&mut self, field: impl Display, value: Option<&str>, max: usize) {
        if let Some(v) = value {
            self.limited(field, v, max);
        }
    }

    /// A date the document's XML can carry (`engine::limits::YEARS`).
    fn date(&mut self, field: impl Display, value: Option<chrono::NaiveDate>) {
        if let Some(problem) = value.and_then(limits::date_problem) {
            self.push(field, problem);
        }
    }

    /// Non-negative (or positive) and at most 10^15. Returns whether it is fine.
    fn amount(&mut self, field: impl Display, value: Decimal, allow_zero: bool) -> bool {
        let message = if value.is_sign_negative() && !value.is_zero() {
            "must not be negative"
        } else if !allow_zero && value.is_zero() {
            "must be greater than zero"
        } else if value > MAX_AMOUNT {
            "is too large (at most 10^15)"
        } else {
            return true;
        };
        self.push(field, message);
        false
    }
}

fn kind_name(kind: DocumentKind) -> &'static str {
    kind.name()
}

/// `id_tipo_documento` (and `id_tipo_operacion` for the export sent as 2).
pub fn document_kind(req: &FacturacionRequest) -> Result<DocumentKind, ApiError> {
    let kind = u8::try_from(req.id_tipo_documento)
        .ok()
        .and_then(DocumentKind::from_code)
        .ok_or_else(|| {
            ApiError::validation(
                "id_tipo_documento",
                "must be 1 to 10: 1 FE, 2 NC, 3 ND, 4 DS, 5 DS adjustment, 6 export, 7 T03, 8 T04, 9 POS, 10 POS adjustment",
            )
        })?;
    let export_op = req.id_tipo_operacion.as_deref().map(str::trim) == Some("10");
    Ok(if kind == DocumentKind::CreditNote && export_op {
        DocumentKind::ExportInvoice
    } else {
        kind
    })
}

/// Translates the request. A note's original is named, not looked up:
/// issuing does that, and when this refuses the request, adds the
/// original's problem among the others ([`Refused`]).
pub fn to_document(req: &FacturacionRequest) -> Result<MappedDocument, Refused> {
    to_document_by(req, None)
}

/// As [`to_document`], a note's original named by its `code` too (or by
/// its code alone, without `id_documento_referencia`).
pub fn to_document_by(
    req: &FacturacionRequest,
    code: Option<Box<ByCode>>,
) -> Result<MappedDocument, Refused> {
    let kind = document_kind(req).map_err(refused)?;
    let mut e = Errors::default();

    let counterparty = map_customer(&req.customer, &mut e);
    let operation = map_operation_type(req, kind, &mut e);
    let array = LineArray::of(kind);
    let mut fields = FieldMap {
        array: array.name(),
        quantity: array.quantity_name(),
        taxes: Vec::new(),
    };
    let transport = operation == Operation::CargoTransport;
    let lines = map_lines(req, kind, array, transport, &mut e, &mut fields);
    if transport && !lines.is_empty() && lines.iter().all(|l| l.transport.is_none()) {
        e.push(
            array.name(),
            "a cargo-transport invoice (id_tipo_operacion 12) needs `transporte` on at least one line",
        );
    }
    let health = map_health(req, &operation, &mut e);
    let point_of_sale = (kind == DocumentKind::Pos).then(|| map_point_of_sale(req, &mut e));
    let paper_reference = if kind == DocumentKind::ContingencyT03 {
        map_paper_reference(req, &mut e)
    } else {
        None
    };
    let reference_at = e.0.len();
    let (reference, note_concept) = map_reference(req, kind, code, &mut e);
    let (currency, exchange_rate) = map_currency(req, &mut e);

    let delivery_terms = req
        .delivery
        .as_ref()
        .and_then(|d| d.delivery_terms.as_deref())
        .map(|t| t.trim().to_ascii_uppercase())
        .filter(|t| !t.is_empty());
    if let Some(t) = &delivery_terms {
        if !codes::INCOTERMS.contains(&t.as_str()) {
            e.push(
                "delivery.delivery_terms",
                format!("must be an Incoterm: {}", codes::INCOTERMS.join(", ")),
            );
        }
    }

    let operation_type = match operation {
        Operation::Code(code) => code,
        Operation::Health | Operation::CargoTransport => None,
    };
    let payments = map_payment(req, &mut e);

    let notes: Vec<String> = req
        .notes
        .iter()
        .filter(|n| !n.trim().is_empty())
        .cloned()
        .collect();
    e.opt_limited("notes", req.notes.as_deref(), limits::TEXT);

    let declared = req.legal_monetary_totals.as_ref().map(|t| {
        let f = |name: &str| format!("legal_monetary_totals.{name}");
        for (name, value) in [
            ("line_extension_amount", t.line_extension_amount),
            ("tax_exclusive_amount", t.tax_exclusive_amount),
            ("tax_inclusive_amount", t.tax_inclusive_amount),
            ("payable_amount", t.payable_amount),
        ] {
            if let Some(v) = value {
                e.amount(f(name), v, true);
            }
        }
        DeclaredTotals {
            line_extension: t.line_extension_amount,
            tax_exclusive: t.tax_exclusive_amount,
            tax_inclusive: t.tax_inclusive_amount,
            payable: t.payable_amount,
        }
    });
    let declared_taxes = req
        .tax_totals
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(k, t)| map_declared_tax(k, t, &mut e))
        .collect();

    let external_reference = req
        .referencia_externa
        .as_ref()
        .map(|r| r.trim().to_string());
    if let Some(r) = &external_reference {
        if r.is_empty() || r.chars().count() > 100 || r.chars().any(char::is_control) {
            e.push(
                "referencia_externa",
                "must be 1 to 100 characters without control characters",
            );
        }
    }

    if !e.0.is_empty() {
        return Err(Refused {
            details: e.0,
            pending: reference.map(|reference| Pending {
                note: kind,
                reference,
                at: reference_at,
            }),
            counted_from: 0,
        });
    }
    let mut document = Document::new(kind, counterparty, lines);
    document.operation_type = operation_type;
    document.notes = notes;
    document.payments = payments;
    document.currency = currency;
    document.exchange_rate = exchange_rate;
    document.delivery_terms = delivery_terms;
    document.note_concept = note_concept;
    document.health = health;
    document.point_of_sale = point_of_sale;
    document.paper_reference = paper_reference;
    document.declared = declared.clone();
    Ok(MappedDocument {
        kind,
        document,
        customer: req.customer.to_input(),
        transmit: req.transmit(),
        asynchronous: req.asynchronous(),
        declared,
        declared_taxes,
        external_reference,
        reference,
        fields,
    })
}

/// The refusal of an unknown `id_tipo_documento`, before any original is
/// named (`document_kind` refuses with a validation error only).
fn refused(e: ApiError) -> Refused {
    let details = match e {
        ApiError::Validation { details, .. } => details,
        other => vec![FieldError::new("body", other.to_string())],
    };
    Refused {
        details,
        pending: None,
        counted_from: 0,
    }
}

fn map_customer(c: &CustomerRequest, e: &mut Errors) -> Party {
    // Required fields, codes, lengths, XML characters, municipality code.
    e.0.extend(c.validate("customer."));
    let municipality_code = c
        .municipality
        .as_ref()
        .and_then(|m| m.code.as_deref())
        .map(str::trim)
        .unwrap_or_default();
    let municipality_name = c
        .municipality
        .as_ref()
        .and_then(|m| m.name.as_deref())
        .map(str::trim)
        .unwrap_or_default();

    let country = c.country_code.as_deref().unwrap_or("CO");
    let org_code = c.type_organization.as_ref().map(|o| o.code.as_str());
    let id_type = match c.type_document_identification.as_ref() {
        Some(t) => t.code.clone(),
        None if country != "CO" => "50".into(),
        None if org_code == Some("1") => "31".into(),
        None => "13".into(),
    };
    let organization_type = match org_code {
        Some("1") => OrganizationType::LegalEntity,
        Some(_) => OrganizationType::NaturalPerson,
        None if matches!(id_type.as_str(), "31" | "50") => OrganizationType::LegalEntity,
        None => OrganizationType::NaturalPerson,
    };

    let mut department_code = String::new();
    let mut department_name = String::new();
    if country == "CO" && !municipality_code.is_empty() {
        let department = municipality_code
            .get(..2)
            .and_then(|d| Some((d, codes::department_name(d)?)));
        match department {
            Some((code, name))
                if municipality_code.len() == 5
                    && municipality_code.bytes().all(|b| b.is_ascii_digit()) =>
            {
                department_code = code.to_string();
                department_name = name.to_string();
            }
            // Refused by `validate` above.
            _ => {}
        }
    }
    let address_line = c.address.as_deref().map(str::trim).unwrap_or_default();
    let has_address = !address_line.is_empty()
        || !municipality_code.is_empty()
        || !municipality_name.is_empty()
        || c.country_code.is_some();
    // A foreign address has no Colombian municipality code; it names its
    // country (protocol.md §7.5c), and its city: what was given as the
    // municipality when no name was (a support document's `municipio`).
    let city = if country != "CO" && municipality_name.is_empty() {
        municipality_code
    } else {
        municipality_name
    };
    let address = has_address.then(|| Address {
        line: address_line.to_string(),
        municipality_code: if country == "CO" {
            municipality_code
        } else {
            ""
        }
        .to_string(),
        municipality_name: city.to_string(),
        department_name,
        department_code,
        postal_zone: None,
        country_code: country.to_string(),
        country_name: codes::country_name(country).unwrap_or(country).to_string(),
    });

    let id_number = c.identification_number.trim().to_string();
    let check_digit = if id_type == "31" {
        nit_check_digit(&id_number)
    } else {
        None
    };
    let nonempty = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    Party {
        id_type,
        id_number,
        check_digit,
        name: c.name.trim().to_string(),
        trade_name: None,
        email: nonempty(&c.email),
        phone: c.phone.as_deref().and_then(nonempty),
        address,
        organization_type,
        tax_responsibilities: "R-99-PN".into(),
        tax_scheme: TaxSchemeRef::default(),
    }
}

type NoteParts = (Option<Reference>, Option<NoteConcept>);

/// A note's original as named, and its concept.
fn map_reference(
    req: &FacturacionRequest,
    kind: DocumentKind,
    code: Option<Box<ByCode>>,
    e: &mut Errors,
) -> NoteParts {
    if !kind.needs_reference() {
        return (None, None);
    }
    let what = kind_name(kind);
    let reference = match (req.id_documento_referencia, code) {
        (None, None) => {
            e.push(
                "id_documento_referencia",
                format!("is required for {what}: the id of the original document"),
            );
            None
        }
        (id, code) => Some(Reference {
            id,
            field: "id_documento_referencia".into(),
            code,
        }),
    };
    let allowed = codes::concepts(kind);
    let concept = match req.id_concepto_nota.as_deref().map(str::trim) {
        None | Some("") => {
            e.push(
                "id_concepto_nota",
                format!("is required for {what} (spec 2.8)"),
            );
            None
        }
        Some(code) => match allowed.iter().find(|(c, _)| *c == code) {
            Some((c, description)) => Some(NoteConcept {
                code: (*c).to_string(),
                description: (*description).to_string(),
            }),
            None => {
                let list: Vec<String> = allowed.iter().map(|(c, d)| format!("{c} {d}")).collect();
                e.push(
                    "id_concepto_nota",
                    format!("must be one of: {}", list.join("; ")),
                );
                None
            }
        },
    };
    (reference, concept)
}

fn map_currency(req: &FacturacionRequest, e: &mut Errors) -> (String, Option<ExchangeRate>) {
    let from_id = match req.id_tipo_moneda.as_deref() {
        Some(id) => match codes::currency(id) {
            Ok(c) => Some(c),
            Err(m) => {
                e.push("id_tipo_moneda", m);
                None
            }
        },
        None => None,
    };
    let x = req.exchange_rate.as_ref();
    let source = x
        .and_then(|x| x.source_currency.as_deref())
        .map(|s| s.trim().to_string());
    if let Some(s) = &source {
        if !codes::is_currency_code(s) {
            e.push(
                "exchange_rate.source_currency",
                "must be an ISO 4217 code such as USD",
            );
        }
    }
    if let (Some(a), Some(b)) = (&from_id, &source) {
        if a != b {
            e.push(
                "id_tipo_moneda",
                format!("is {a} but exchange_rate.source_currency is {b}"),
            );
        }
    }
    let currency = from_id
        .or_else(|| source.clone())
        .unwrap_or_else(|| "COP".into());
    let exchange_rate = match x {
        None => {
            if currency != "COP" {
                e.push(
                    "exchange_rate",
                    format!("is required for a document in {currency}"),
                );
            }
            None
        }
        Some(x) => {
            let target = x
                .target_currency
                .as_deref()
                .map(str::trim)
                .unwrap_or("COP")
                .to_string();
            if !codes::is_currency_code(&target) {
                e.push(
                    "exchange_rate.target_currency",
                    "must be an ISO 4217 code such as COP",
                );
            }
            e.amount("exchange_rate.calculation_rate", x.calculation_rate, false);
            e.date("exchange_rate.date", Some(x.date));
            Some(ExchangeRate {
                source_currency: source.unwrap_or_else(|| currency.clone()),
                target_currency: target,
                rate: x.calculation_rate,
                date: x.date,
            })
        }
    };
    (currency, exchange_rate)
}

/// What `id_tipo_operacion` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Operation {
    /// An authority code written as given; `None`: the kind's default.
    Code(Option<String>),
    /// The health sector (`11` on invoices and notes).
    Health,
    /// Cargo transport (`12` on invoices).
    CargoTransport,
}

fn map_operation_type(req: &FacturacionRequest, kind: DocumentKind, e: &mut Errors) -> Operation {
    let Some(op) = req
        .id_tipo_operacion
        .as_deref()
        .map(str::trim)
        .filter(|o| !o.is_empty())
    else {
        return Operation::Code(None);
    };
    if kind == DocumentKind::ExportInvoice {
        return Operation::Code(None);
    }
    let allowed = codes::operation_types(kind);
    if !allowed.contains(&op) {
        e.push(
            "id_tipo_operacion",
            format!("{} accepts {}", kind_name(kind), allowed.join(", ")),
        );
        return Operation::Code(None);
    }
    if codes::is_health_operation(kind, op) {
        Operation::Health
    } else if codes::is_transport_operation(kind, op) {
        Operation::CargoTransport
    } else {
        Operation::Code(Some(op.to_string()))
    }
}

/// `salud`: required with the health operation, refused without it.
fn map_health(
    req: &FacturacionRequest,
    operation: &Operation,
    e: &mut Errors,
) -> Option<HealthInfo> {
    let given = req.salud.as_ref();
    if *operation != Operation::Health {
        if given.is_some() {
            e.push(
                "salud",
                "is only for a health-sector document (id_tipo_operacion 11)",
            );
        }
        return None;
    }
    let Some(h) = given else {
        e.push(
            "salud",
            "is required for a health-sector document (id_tipo_operacion 11): codigo_prestador and cobertura at least",
        );
        return None;
    };
    let text = |name: &str, v: Option<&str>, required: bool, e: &mut Errors| {
        let v = v.map(str::trim).unwrap_or_default().to_string();
        let field = format!("salud.{name}");
        if v.is_empty() && required {
            e.push(&field, "is required for a health-sector document");
        } else if v.chars().count() > 50 {
            e.push(&field, "at most 50 characters");
        } else {
            e.text(&field, &v);
        }
        v
    };
    let provider_code = text("codigo_prestador", h.codigo_prestador.as_deref(), true, e);
    let contract_number = text("numero_contrato", h.numero_contrato.as_deref(), false, e);
    let policy_number = text("numero_poliza", h.numero_poliza.as_deref(), false, e);
    let payment_modality = h
        .modalidad_pago
        .as_deref()
        .map(|m| codes::two_digits(m.trim()))
        .unwrap_or_else(|| DEFAULT_PAYMENT_MODALITY.to_string());
    if code_name(PAYMENT_MODALITIES, &payment_modality).is_none() {
        let list: Vec<String> = PAYMENT_MODALITIES
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        e.push(
            "salud.modalidad_pago",
            format!("must be one of: {}", list.join("; ")),
        );
    }
    let coverage = match h.cobertura.as_deref().map(str::trim) {
        None | Some("") => {
            e.push(
                "salud.cobertura",
                "is required for a health-sector document (01 to 17: 15 private, 16 UPC contributory, 17 UPC subsidized, 04 SOAT ...)",
            );
            String::new()
        }
        Some(c) => {
            let c = codes::two_digits(c);
            if code_name(COVERAGES, &c).is_none() {
                e.push("salud.cobertura", "must be a coverage code 01 to 17");
            }
            c
        }
    };
    e.date("salud.fecha_inicio", h.fecha_inicio);
    e.date("salud.fecha_fin", h.fecha_fin);
    if let (Some(a), Some(b)) = (h.fecha_inicio, h.fecha_fin) {
        if a > b {
            e.push("salud.fecha_fin", "is before fecha_inicio");
        }
    }
    Some(HealthInfo {
        provider_code,
        payment_modality,
        coverage,
        contract_number,
        policy_number,
        period_start: h.fecha_inicio,
        period_end: h.fecha_fin,
        ..HealthInfo::default()
    })
}

/// Payment modality of a health document that names none: per event, the
/// modality of a service billed as it is provided.
const DEFAULT_PAYMENT_MODALITY: &str = "04";

/// A POS receipt's register and cashier (default `1` each, decisions.md §5).
fn map_point_of_sale(req: &FacturacionRequest, e: &mut Errors) -> PointOfSale {
    let default = PointOfSale::default();
    let mut value = |name: &str, v: Option<&str>, default: String| {
        let Some(v) = v.map(str::trim) else {
            return default;
        };
        if v.is_empty() || v.chars().count() > 50 {
            e.push(name, "must be 1 to 50 characters");
        } else {
            e.text(name, v);
        }
        v.to_string()
    };
    PointOfSale {
        register_id: value("id_caja", req.id_caja.as_deref(), default.register_id),
        cashier_id: value("id_cajero", req.id_cajero.as_deref(), default.cashier_id),
    }
}

/// A T03's `referencia_contingencia`.
fn map_paper_reference(req: &FacturacionRequest, e: &mut Errors) -> Option<PaperReference> {
    let r = req.referencia_contingencia.as_ref()?;
    let number = r.numero.trim().to_string();
    if number.is_empty() || number.chars().count() > 50 {
        e.push(
            "referencia_contingencia.numero",
            "must be 1 to 50 characters: the paper invoice's number",
        );
    } else {
        e.text("referencia_contingencia.numero", &number);
    }
    e.date("referencia_contingencia.fecha", Some(r.fecha));
    Some(PaperReference {
        number,
        issue_date: r.fecha,
    })
}

fn map_payment(req: &FacturacionRequest, e: &mut Errors) -> Vec<Payment> {
    let Some(p) = &req.payment_form else {
        return Vec::new();
    };
    let form = p.id.as_deref().map(str::trim).unwrap_or("1").to_string();
    if !matches!(form.as_str(), "1" | "2") {
        e.push("payment_form.id", "must be 1 (cash) or 2 (credit)");
    }
    let method = p
        .method
        .as_deref()
        .map(str::trim)
        .unwrap_or("10")
        .to_string();
    if method.is_empty() || method.len() > 3 || !method.bytes().all(|b| b.is_ascii_alphanumeric()) {
        e.push(
            "payment_form.method",
            "must be a payment means code (10 cash, 42 deposit, 47 transfer, 48 credit card ...)",
        );
    }
    if form == "2" && p.due_date.is_none() {
        e.push("payment_form.due_date", "is required for credit (id 2)");
    }
    e.date("payment_form.due_date", p.due_date);
    vec![Payment {
        form,
        method,
        due_date: p.due_date,
    }]
}
