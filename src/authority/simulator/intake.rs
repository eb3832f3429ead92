//! What happens to a received ZIP, in the authority's order (decisions.md
//! §2): file name, ZIP, well-formed XML, signature placement and XAdES, code
//! recomputation, number in range (the test set's in the testing
//! environment), contingency period of a T04, duplicate; then acceptance.

use super::app_response;
use super::checks::{signature_placement, DocumentChecks};
use super::conformance;
use super::contingency::ContingencyPeriods;
use super::copies::Parties;
use super::document::DocumentFacts;
use super::package::{self, XmlEntry};
use super::state::{AcceptedDoc, SimRegistry, SimState};
use super::test_set::{self, TEST_TECHNICAL_KEY};
use crate::authority::operation::Operation;
use crate::authority::soap::response::DianResponse;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, FixedOffset, NaiveDate, Utc};

pub const DESC_OK: &str = "Procesado Correctamente.";
pub const DESC_ERRORS: &str = "Validación contiene errores en campos mandatorios.";
pub const DESC_PENDING: &str = "Batch en proceso de validación.";
pub const DUPLICATE_ERROR: &str = "Regla: 90, Rechazo: Documento procesado anteriormente.";
/// The business rule every document gets in mode `reject`.
pub const REJECT_MODE_ERROR: &str =
    "Regla: FAJ44b, Rechazo: Nit o Documento de Identificación informado no se encuentra registrado en el RUT.";

/// Everything a reception needs.
pub struct Intake<'a> {
    pub registry: &'a SimRegistry,
    pub state: &'a SimState,
    pub checks: &'a dyn DocumentChecks,
    pub op: Operation,
    /// Mode `reject`: every valid document is answered with a business rule.
    pub reject_all: bool,
    pub now: DateTime<Utc>,
    /// The day of the reception in Colombia, on the simulator's clock
    /// (`crate::clock::simulator`), for the send-day rule (`same_day`).
    pub today: NaiveDate,
    /// Declared contingency periods (T04, rule CTG01).
    pub contingency: &'a ContingencyPeriods,
}

fn rule(code: &str, text: &str) -> String {
    format!("Regla: {code}, Rechazo: {text}")
}

/// A rejection (`IsValid` false, `99`).
pub fn rejected(errors: Vec<String>, code: Option<&str>, file_name: Option<&str>) -> DianResponse {
    DianResponse {
        error_messages: errors,
        is_valid: false,
        status_code: "99".into(),
        status_description: DESC_ERRORS.into(),
        status_message: None,
        xml_base64_bytes: None,
        xml_document_key: code.map(str::to_string),
        xml_file_name: file_name.map(str::to_string),
    }
}

/// An acceptance (`IsValid` true, `00`).
pub fn accepted(doc: &AcceptedDoc, code: &str) -> DianResponse {
    DianResponse {
        error_messages: Vec::new(),
        is_valid: true,
        status_code: "00".into(),
        status_description: DESC_OK.into(),
        status_message: Some(format!("{} {}, ha sido autorizada.", doc.label, doc.number)),
        xml_base64_bytes: Some(doc.application_response_b64.clone()),
        xml_document_key: Some(code.to_string()),
        xml_file_name: Some(doc.file_name.clone()),
    }
}

fn colombia(now: DateTime<Utc>) -> DateTime<FixedOffset> {
    match FixedOffset::west_opt(5 * 3600) {
        Some(tz) => now.with_timezone(&tz),
        None => now.fixed_offset(),
    }
}

impl Intake<'_> {
    /// The XML entries of the request's ZIP, or a rule-89 message.
    pub fn unzip(
        &self,
        file_name: Option<&str>,
        content_b64: Option<&str>,
    ) -> Result<Vec<XmlEntry>, String> {
        if self.op.has_file_name() {
            match file_name.map(str::trim) {
                None | Some("") => {
                    return Err(rule("89", "Falta el nombre del archivo (fileName)."))
                }
                Some(n) if !n.to_ascii_lowercase().ends_with(".zip") => {
                    return Err(rule(
                        "89",
                        "El nombre del archivo debe tener extensión .zip.",
                    ))
                }
                Some(_) => {}
            }
        }
        let content = content_b64
            .map(|c| {
                c.chars()
                    .filter(|ch| !ch.is_ascii_whitespace())
                    .collect::<String>()
            })
            .filter(|c| !c.is_empty())
            .ok_or_else(|| rule("89", "Falta el contenido del archivo (contentFile)."))?;
        let zip = B64
            .decode(content)
            .map_err(|_| rule("89", "El contenido del archivo no está en base64."))?;
        let entries = package::xml_entries(&zip).map_err(|m| rule("89", &m))?;
        if self.op.is_sync_send() && entries.len() != 1 {
            return Err(rule(
                "89",
                "El método síncrono solo puede recibir un documento.",
            ));
        }
        Ok(entries)
    }

    /// A synchronous send: one verdict.
    pub fn receive_sync(&self, file_name: Option<&str>, content_b64: Option<&str>) -> DianResponse {
        match self.unzip(file_name, content_b64) {
            Ok(entries) => match entries.first() {
                Some(entry) => self.receive_document(entry),
                None => self.reject(
                    vec![rule("89", "El archivo ZIP no contiene documentos XML.")],
                    None,
                    None,
                ),
            },
            Err(message) => self.reject(vec![message], None, None),
        }
    }

    fn reject(
        &self,
        errors: Vec<String>,
        code: Option<&str>,
        file_name: Option<&str>,
    ) -> DianResponse {
        self.state.record_rejection(code, &errors);
        rejected(errors, code, file_name)
    }

    /// One XML document, through every check.
    pub fn receive_document(&self, entry: &XmlEntry) -> DianResponse {
        let stem = entry
            .name
            .rsplit_once('.')
            .map(|(s, _)| s)
            .unwrap_or(&entry.name)
            .to_string();
        let file = Some(stem.as_str());
        let xml = match std::str::from_utf8(&entry.bytes) {
            Ok(s) => s.trim_start_matches('\u{feff}'),
            Err(_) => {
                return self.reject(
                    vec![rule(
                        "ZB01",
                        "Fallo en el esquema XML del archivo: no es UTF-8.",
                    )],
                    None,
                    file,
                )
            }
        };
        let facts = match DocumentFacts::read(xml) {
            Ok(f) => f,
            Err(reason) => {
                let text = format!("Fallo en el esquema XML del archivo: {reason}");
                return self.reject(vec![rule("ZB01", &text)], None, file);
            }
        };
        let code = facts.code.as_str();
        self.state.count_reception(code);
        let rejected_with = |errors: Vec<String>| self.reject(errors, Some(code), file);

        // Signature.
        if let Err(reason) =
            signature_placement(xml, &facts).and_then(|_| self.checks.verify_signature(xml))
        {
            return rejected_with(vec![rule(
                "ZE02",
                &format!("Valor de la firma inválido. {reason}"),
            )]);
        }

        // Issuer and the key of its code.
        let Some(issuer) = self.registry.issuer(&facts.issuer_nit) else {
            return rejected_with(vec![rule(
                "92",
                &format!(
                    "El NIT {} no está habilitado para emitir documentos electrónicos.",
                    facts.issuer_nit
                ),
            )]);
        };
        let range = issuer.range_for(&facts.number);
        // The testing environment codes and numbers from the authority's
        // test sets, whatever the issuer registered (protocol.md 7.5c).
        let testing = test_set::is_testing(xml, &facts);
        let key = if facts.uses_technical_key() && testing {
            TEST_TECHNICAL_KEY.to_string()
        } else if facts.uses_technical_key() {
            match range.and_then(|(r, _)| r.technical_key.clone()) {
                Some(k) => k,
                None => {
                    return rejected_with(vec![rule(
                        "FAD05d",
                        "Número de factura no se encuentra dentro del rango autorizado.",
                    )])
                }
            }
        } else {
            let pin = facts
                .software_id
                .as_deref()
                .and_then(|id| issuer.pin_of(id));
            match pin {
                Some(p) => p.to_string(),
                None => {
                    return rejected_with(vec![rule(
                        "92",
                        &format!(
                            "El software {} no está registrado para el NIT {}.",
                            facts.software_id.as_deref().unwrap_or("(sin SoftwareID)"),
                            facts.issuer_nit
                        ),
                    )])
                }
            }
        };

        // Code.
        match self.checks.recompute_code(xml, &facts, &key) {
            Ok(computed) if computed.eq_ignore_ascii_case(code) => {}
            Ok(_) => {
                return rejected_with(vec![rule(
                    facts.code_rule(),
                    &format!(
                        "Valor del {} no está calculado correctamente.",
                        facts.code_name()
                    ),
                )])
            }
            Err(reason) => {
                return rejected_with(vec![rule(
                    "ZB01",
                    &format!("Fallo en el esquema XML del archivo: {reason}"),
                )])
            }
        }

        // Number in range: the test set's in the testing environment.
        if let Some(set) = test_set::serving(testing, &facts) {
            let errors = set.numbering_errors(xml, &facts);
            if !errors.is_empty() {
                return rejected_with(errors);
            }
        } else if facts.needs_range() {
            let inside = range.is_some_and(|(r, n)| (r.from_number..=r.to_number).contains(&n));
            if !inside {
                return rejected_with(vec![rule(
                    "FAD05d",
                    "Número de factura no se encuentra dentro del rango autorizado.",
                )]);
            }
        }

        // A T04 signed inside a declared contingency period.
        if let Err(error) = self.contingency.check(xml, &facts) {
            return rejected_with(vec![error]);
        }
        // The rules on the content (operation type, support-document
        // vendor, POS extensions); notifications go with the acceptance.
        let verdict = conformance::check(xml, &facts);
        if !verdict.rejections.is_empty() {
            return rejected_with(verdict.rejections);
        }

        // Duplicate, then the send day, then mode reject, then acceptance:
        // an accepted document sent again on a later day is still answered
        // as the duplicate it is (its acceptance).
        if self.state.is_accepted(code) {
            return rejected(vec![DUPLICATE_ERROR.into()], Some(code), file);
        }
        if let Some(error) = super::same_day::check(&facts, self.today) {
            return rejected_with(vec![error]);
        }
        if self.reject_all {
            return rejected_with(vec![REJECT_MODE_ERROR.into()]);
        }
        // An event follows its invoice's earlier events and its terms
        // (checked and recorded in one step).
        let mut notifications = verdict.notifications;
        if facts.family == super::document::Family::Event {
            match self
                .state
                .events
                .admit(xml, |cufe| self.state.is_accepted(cufe))
            {
                Ok(notes) => notifications.extend(notes),
                Err(errors) => return rejected_with(errors),
            }
        }
        let response_id = uuid::Uuid::new_v4().simple().to_string();
        let ar = app_response::build(&facts, &response_id, colombia(self.now));
        let doc = AcceptedDoc {
            number: facts.number.clone(),
            issuer_nit: facts.issuer_nit.clone(),
            operation: self.op.name().to_string(),
            file_name: stem.clone(),
            label: facts.label().to_string(),
            application_response_b64: B64.encode(ar.as_bytes()),
        };
        if !self.state.accept(code, doc.clone()) {
            return rejected(vec![DUPLICATE_ERROR.into()], Some(code), file);
        }
        if facts.family == super::document::Family::Invoice {
            // Its terms, for the rules of its events.
            self.state.events.remember_invoice(code, xml);
        }
        // The file as received, for GetXmlByDocumentKey.
        self.state.copies.keep(
            &code.to_ascii_lowercase(),
            &entry.bytes,
            Parties {
                sender: facts.issuer_nit.clone(),
                receiver: facts.receiver_id.clone(),
            },
        );
        let mut answer = accepted(&doc, code);
        answer.error_messages = notifications;
        answer
    }
}
