//! What the simulator remembers of invoice events, to answer them as the
//! authority does: each invoice's events in order (protocol.md §7.5), the
//! tacit acceptance only 3 business days after the goods' receipt
//! (decisions.md "Business days", on its test clock `crate::clock::simulator`),
//! and only for invoices it has accepted.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::NaiveDate;
use roxmltree::{Document, ParsingOptions};

use super::document::{path, text};
use crate::engine::events::calendar::tacit_acceptance_from;
use crate::engine::events::order::{self, OrderError};
use crate::engine::events::EventKind;

#[derive(Debug, Clone)]
struct Registered {
    kind: EventKind,
    date: NaiveDate,
}

/// Events accepted, by the CUFE of their invoice.
#[derive(Debug, Default)]
pub struct EventLedger {
    by_invoice: Mutex<HashMap<String, Vec<Registered>>>,
}

fn rule(code: &str, text: &str) -> String {
    format!("Regla: {code}, Rechazo: {text}")
}

fn order_rule(e: &OrderError) -> String {
    match e {
        OrderError::AlreadyRegistered(code) => rule(
            "LGC01",
            &format!("Evento {code} registrado previamente para este CUFE."),
        ),
        OrderError::Missing { event, missing } => rule(
            "LGC03",
            &format!("No se puede registrar el evento {event} sin el evento previo {missing}."),
        ),
        OrderError::Closed { event, after } => rule(
            "LGC04",
            &format!("No se puede registrar el evento {event} después del evento {after}."),
        ),
    }
}

impl EventLedger {
    pub fn reset(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Registered>>> {
        self.by_invoice
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks an ApplicationResponse against its invoice's events and, when
    /// it may follow them, records it (one step under the lock).
    pub fn admit(
        &self,
        xml: &str,
        invoice_known: impl Fn(&str) -> bool,
    ) -> Result<(), Vec<String>> {
        let opts = ParsingOptions {
            allow_dtd: false,
            ..ParsingOptions::default()
        };
        let doc = Document::parse_with_options(xml, opts)
            .map_err(|e| vec![rule("ZB01", &format!("XML mal formado: {e}"))])?;
        let root = doc.root_element();
        let code = text(path(
            root,
            &["DocumentResponse", "Response", "ResponseCode"],
        ))
        .unwrap_or_default();
        let kind = EventKind::from_authority_code(&code).ok_or_else(|| {
            vec![rule(
                "AAH03",
                &format!("Código de evento {code} no soportado."),
            )]
        })?;
        let reference = path(root, &["DocumentResponse", "DocumentReference"]);
        let cufe = text(reference.and_then(|r| path(r, &["UUID"])))
            .unwrap_or_default()
            .to_ascii_lowercase();
        let type_code =
            text(reference.and_then(|r| path(r, &["DocumentTypeCode"]))).unwrap_or_default();
        if type_code != "01" {
            return Err(vec![rule(
                "AAH26",
                "El tipo de documento referenciado no es una factura electrónica de venta (01).",
            )]);
        }
        if cufe.is_empty() || !invoice_known(&cufe) {
            return Err(vec![rule(
                "LGC02",
                "El CUFE referenciado no corresponde a una factura electrónica validada.",
            )]);
        }
        let date = text(path(root, &["IssueDate"]))
            .and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok())
            .ok_or_else(|| vec![rule("AAH07", "Fecha de emisión del evento inválida.")])?;
        let mut ledger = self.lock();
        let events = ledger.entry(cufe).or_default();
        let done: Vec<EventKind> = events.iter().map(|r| r.kind).collect();
        order::check(&done, kind).map_err(|e| vec![order_rule(&e)])?;
        if kind == EventKind::TacitAcceptance {
            let receipt = events
                .iter()
                .find(|r| r.kind == EventKind::GoodsReceipt)
                .map(|r| r.date);
            let today = crate::clock::simulator::colombia_now().date_naive();
            if let Some(from) = receipt.map(tacit_acceptance_from) {
                if today < from {
                    return Err(vec![rule(
                        "LGC14",
                        &format!(
                            "La aceptación tácita solo procede transcurridos 3 días hábiles desde el evento 032 (desde {from})."
                        ),
                    )]);
                }
            }
        }
        events.push(Registered { kind, date });
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn event(code: &str, cufe: &str, date: &str) -> String {
        format!(
            r#"<ApplicationResponse xmlns="urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2" xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"><cbc:ID>1</cbc:ID><cbc:IssueDate>{date}</cbc:IssueDate><cac:DocumentResponse><cac:Response><cbc:ResponseCode>{code}</cbc:ResponseCode></cac:Response><cac:DocumentReference><cbc:ID>F1</cbc:ID><cbc:UUID>{cufe}</cbc:UUID><cbc:DocumentTypeCode>01</cbc:DocumentTypeCode></cac:DocumentReference></cac:DocumentResponse></ApplicationResponse>"#
        )
    }

    fn rule_of(r: Result<(), Vec<String>>) -> String {
        let errors = r.expect_err("refused");
        errors[0].split(',').next().unwrap_or_default().to_string()
    }

    #[test]
    fn events_follow_their_invoice_in_order() {
        let ledger = EventLedger::default();
        let known = |c: &str| c == "abc";
        let today = crate::clock::simulator::colombia_now()
            .date_naive()
            .to_string();
        assert_eq!(
            rule_of(ledger.admit(&event("030", "zzz", &today), known)),
            "Regla: LGC02"
        );
        assert_eq!(
            rule_of(ledger.admit(&event("032", "abc", &today), known)),
            "Regla: LGC03"
        );
        assert_eq!(
            rule_of(ledger.admit(&event("099", "abc", &today), known)),
            "Regla: AAH03"
        );
        ledger.admit(&event("030", "abc", &today), known).unwrap();
        assert_eq!(
            rule_of(ledger.admit(&event("030", "abc", &today), known)),
            "Regla: LGC01"
        );
        ledger.admit(&event("032", "abc", &today), known).unwrap();
        // The tacit acceptance waits 3 business days after the receipt.
        assert_eq!(
            rule_of(ledger.admit(&event("034", "abc", &today), known)),
            "Regla: LGC14"
        );
        ledger.admit(&event("033", "abc", &today), known).unwrap();
        assert_eq!(
            rule_of(ledger.admit(&event("031", "abc", &today), known)),
            "Regla: LGC04"
        );
        // The registration is the authority's 036, then endorsements.
        assert_eq!(
            rule_of(ledger.admit(&event("037", "abc", &today), known)),
            "Regla: LGC03"
        );
        ledger.admit(&event("036", "abc", &today), known).unwrap();
        ledger.admit(&event("037", "abc", &today), known).unwrap();
        ledger.admit(&event("038", "abc", &today), known).unwrap();
    }

    #[test]
    fn a_receipt_long_ago_allows_the_tacit_acceptance() {
        let ledger = EventLedger::default();
        let known = |_: &str| true;
        ledger
            .admit(&event("030", "abc", "2020-01-02"), known)
            .unwrap();
        ledger
            .admit(&event("032", "abc", "2020-01-02"), known)
            .unwrap();
        let today = crate::clock::simulator::colombia_now()
            .date_naive()
            .to_string();
        ledger.admit(&event("034", "abc", &today), known).unwrap();
    }
}
