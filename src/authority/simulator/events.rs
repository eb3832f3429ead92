//! What the simulator remembers of invoice events, to answer them as the
//! authority does: the terms of each invoice it accepted, each invoice's
//! events in order (protocol.md §7.5) with who sent them and when they were
//! signed, and from these the rules of the validator (`wscuellar/DIAN`,
//! June 2022): the order (LGC01, LGC03, LGC04), the legal windows after the
//! goods' receipt counted from the signing times (`Validator.cs`
//! ValidateSigningTime: DC24z, DC24c, DC24e), the first and subsequent
//! registrations (`LogicalEventRadian.cs` ValidateAvailabilityRequestEventPrev:
//! LGC23, LGC37), an endorsement only by a holder who registered the title
//! since it last changed hands (LGC24, LGC27, LGC30), and the content rules
//! of [`super::event_rules`].

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, NaiveDate};
use roxmltree::{Document, Node, ParsingOptions};

use super::document::{path, text};
use super::event_rules::{self, rule};
use crate::engine::events::calendar::{tacit_acceptance_allowed, within_claim_window};
use crate::engine::events::order::{self, OrderError};
use crate::engine::events::terms::{self, InvoiceTerms};
use crate::engine::events::EventKind;
use crate::engine::model::colombia_offset;

#[derive(Debug, Clone)]
struct Registered {
    kind: EventKind,
    /// Colombian date of its signing time.
    signed_on: NaiveDate,
    customization: String,
    /// What `GetStatusEvent` lists of it.
    listed: ListedEvent,
}

/// An accepted event as `GetStatusEvent` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEvent {
    /// The authority's code (030…) and the event's name.
    pub code: String,
    pub description: String,
    /// Its signing time in Colombia (else its issue date and time).
    pub date: String,
    pub time: String,
    /// The event's `cbc:ID` and `cbc:UUID` (CUDE).
    pub number: String,
    pub cude: String,
    /// The sender's and receiver's NITs and names.
    pub sender_nit: String,
    pub sender_name: String,
    pub receiver_nit: String,
    pub receiver_name: String,
}

/// What `GetStatusEvent` finds for a code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvoiceEventsLookup {
    /// Not an invoice the simulator accepted.
    NotAnInvoice,
    /// An accepted invoice and its events, oldest first (maybe none).
    Events(Vec<ListedEvent>),
}

#[derive(Debug, Default)]
struct Ledger {
    /// Events accepted, by the CUFE of their invoice.
    events: HashMap<String, Vec<Registered>>,
    /// The terms of the invoices accepted, by CUFE (one small record per
    /// invoice, as the accepted documents themselves are kept).
    invoices: HashMap<String, InvoiceTerms>,
    /// The CUFEs of the invoices accepted, terms readable or not.
    invoice_codes: HashSet<String>,
}

/// The simulator's memory of invoices and their events.
#[derive(Debug, Default)]
pub struct EventLedger {
    inner: Mutex<Ledger>,
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
        OrderError::Unregistered { event } => {
            let code = match *event {
                "036" => "LGC24",
                "037" => "LGC27",
                _ => "LGC30",
            };
            rule(
                code,
                "No se puede registrar este evento si previamente no se ha registrado el evento Inscripción de la factura electrónica de venta como título valor",
            )
        }
    }
}

/// The Colombian date an event was signed (`xades:SigningTime`, as the
/// validator reads it), else its issue date.
fn signed_on(root: Node<'_, '_>) -> Option<NaiveDate> {
    let signing = root
        .descendants()
        .find(|n| n.is_element() && n.tag_name().name() == "SigningTime")
        .and_then(|n| n.text())
        .and_then(|t| DateTime::parse_from_rfc3339(t.trim()).ok())
        .map(|t| t.with_timezone(&colombia_offset()).date_naive());
    signing.or_else(|| {
        text(path(root, &["IssueDate"]))
            .and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok())
    })
}

/// What `GetStatusEvent` lists of an event: its code and name, its signing
/// time in Colombia (`EffectiveTime` written `HH-mm-ss-05:00`, as the
/// authority's `XmlUtilEvents` formats it), number, CUDE and parties.
fn listed_event(root: Node<'_, '_>, kind: EventKind) -> ListedEvent {
    let signing = root
        .descendants()
        .find(|n| n.is_element() && n.tag_name().name() == "SigningTime")
        .and_then(|n| n.text())
        .and_then(|t| DateTime::parse_from_rfc3339(t.trim()).ok())
        .map(|t| t.with_timezone(&colombia_offset()));
    let (date, time) = match signing {
        Some(t) => (
            t.format("%Y-%m-%d").to_string(),
            t.format("%H-%M-%S-05:00").to_string(),
        ),
        None => (
            text(path(root, &["IssueDate"])).unwrap_or_default(),
            text(path(root, &["IssueTime"])).unwrap_or_default(),
        ),
    };
    let party = |name: &str, field: &str| {
        text(path(root, &[name, "PartyTaxScheme", field])).unwrap_or_default()
    };
    ListedEvent {
        code: kind.authority_code().to_string(),
        description: kind.name().to_string(),
        date,
        time,
        number: text(path(root, &["ID"])).unwrap_or_default(),
        cude: text(path(root, &["UUID"]))
            .unwrap_or_default()
            .to_ascii_lowercase(),
        sender_nit: party("SenderParty", "CompanyID"),
        sender_name: party("SenderParty", "RegistrationName"),
        receiver_nit: party("ReceiverParty", "CompanyID"),
        receiver_name: party("ReceiverParty", "RegistrationName"),
    }
}

/// DC24z, DC24c, DC24e: a claim or an express acceptance within 3 business
/// days of the goods' receipt, a tacit acceptance only after.
fn window_rule(kind: EventKind, receipt: NaiveDate, on: NaiveDate) -> Option<String> {
    match kind {
        EventKind::Claim if !within_claim_window(receipt, on) => Some(rule(
            "DC24z",
            "No se puede generar el evento de Reclamo pasado los 3 dias hábiles de la fecha de generación del evento Recibo del bien y prestación del servicio.",
        )),
        EventKind::ExpressAcceptance if !within_claim_window(receipt, on) => Some(rule(
            "DC24c",
            "No se puede generar el evento Aceptación Expresa pasado los 3 dias hábiles de la fecha de generación del evento Recibo del bien y prestación del servicio.",
        )),
        EventKind::TacitAcceptance if !tacit_acceptance_allowed(receipt, on) => Some(rule(
            "DC24e",
            "No se puede generar el evento Aceptación Tácita antes de 3 días hábiles de la fecha de generación del evento Recibo del bien y prestación del servicio.",
        )),
        _ => None,
    }
}

/// LGC23, LGC37: a first registration (361/362) only once, a subsequent
/// one (363/364) only after an endorsement in property since the latest.
fn registration_rule(done: &[Registered], customization: &str) -> Option<String> {
    let first = matches!(customization, "361" | "362");
    let last = |k: EventKind| done.iter().rposition(|r| r.kind == k);
    let registered = last(EventKind::Registration);
    if first {
        let again = done
            .iter()
            .any(|r| r.kind == EventKind::Registration && r.customization == customization);
        return (again || registered.is_some()).then(|| {
            rule(
                "LGC23",
                "La factura electrónica de venta ya fue inscrita como título valor.",
            )
        });
    }
    let changed_hands = match (last(EventKind::EndorsementProperty), registered) {
        (Some(p), Some(r)) => p > r,
        _ => false,
    };
    (!changed_hands).then(|| {
        rule(
            "LGC37",
            "No existe un endoso en propiedad previo a la inscripción posterior de la factura electrónica de venta como título valor.",
        )
    })
}

impl EventLedger {
    pub fn reset(&self) {
        *self.lock() = Ledger::default();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps the terms of an invoice just accepted, for its events' rules.
    pub fn remember_invoice(&self, cufe: &str, xml: &str) {
        let cufe = cufe.to_ascii_lowercase();
        let terms = terms::invoice_terms(xml);
        let mut ledger = self.lock();
        if let Some(t) = terms {
            ledger.invoices.insert(cufe.clone(), t);
        }
        ledger.invoice_codes.insert(cufe);
    }

    /// The events accepted on the invoice `cufe`, for `GetStatusEvent`.
    pub fn listing(&self, cufe: &str) -> InvoiceEventsLookup {
        let cufe = cufe.to_ascii_lowercase();
        let ledger = self.lock();
        if !ledger.invoice_codes.contains(&cufe) {
            return InvoiceEventsLookup::NotAnInvoice;
        }
        let events = ledger
            .events
            .get(&cufe)
            .map(|list| list.iter().map(|r| r.listed.clone()).collect())
            .unwrap_or_default();
        InvoiceEventsLookup::Events(events)
    }

    /// Checks an ApplicationResponse against its invoice and the invoice's
    /// events and, when it may follow them, records it (one step under the
    /// lock). `Ok` carries the notifications of an accepted event.
    pub fn admit(
        &self,
        xml: &str,
        invoice_known: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, Vec<String>> {
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
        let on = signed_on(root)
            .ok_or_else(|| vec![rule("AAH07", "Fecha de emisión del evento inválida.")])?;
        let customization = text(path(root, &["CustomizationID"])).unwrap_or_default();
        let listed = listed_event(root, kind);
        let mut ledger = self.lock();
        let findings = event_rules::check(root, kind, ledger.invoices.get(&cufe));
        if !findings.rejections.is_empty() {
            return Err(findings.rejections);
        }
        let events = ledger.events.entry(cufe).or_default();
        let done: Vec<EventKind> = events.iter().map(|r| r.kind).collect();
        let subsequent = kind == EventKind::Registration && done.contains(&EventKind::Registration);
        if kind == EventKind::Registration {
            if let Some(refused) = registration_rule(events, &customization) {
                return Err(vec![refused]);
            }
        }
        if !subsequent {
            order::check(&done, kind).map_err(|e| vec![order_rule(&e)])?;
        }
        let receipt = events
            .iter()
            .find(|r| r.kind == EventKind::GoodsReceipt)
            .map(|r| r.signed_on);
        if let Some(refused) = receipt.and_then(|r| window_rule(kind, r, on)) {
            return Err(vec![refused]);
        }
        events.push(Registered {
            kind,
            signed_on: on,
            customization,
            listed,
        });
        Ok(findings.notifications)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal event: its code, invoice, issue date and sub-type; an
    /// endorsement in property with a consistent negotiation.
    fn event(code: &str, cufe: &str, date: &str, customization: &str) -> String {
        let negotiation = if code == "037" {
            "<ext:UBLExtensions xmlns:ext=\"urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2\"><ext:UBLExtension><ext:ExtensionContent><CustomTagGeneral><InformacionNegociacion><Name>ValorTotalEndoso</Name><Value>100.00</Value><Name>PrecioPagarseFEV</Name><Value>80.00</Value><Name>TasaDescuento</Name><Value>20</Value><Name>MedioPago</Name><Value>42</Value></InformacionNegociacion></CustomTagGeneral></ext:ExtensionContent></ext:UBLExtension></ext:UBLExtensions>"
        } else {
            ""
        };
        format!(
            r#"<ApplicationResponse xmlns="urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2" xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">{negotiation}<cbc:CustomizationID>{customization}</cbc:CustomizationID><cbc:ID>1</cbc:ID><cbc:IssueDate>{date}</cbc:IssueDate><cac:DocumentResponse><cac:Response><cbc:ResponseCode>{code}</cbc:ResponseCode></cac:Response><cac:DocumentReference><cbc:ID>F1</cbc:ID><cbc:UUID>{cufe}</cbc:UUID><cbc:DocumentTypeCode>01</cbc:DocumentTypeCode></cac:DocumentReference></cac:DocumentResponse></ApplicationResponse>"#
        )
    }

    fn rule_of(r: Result<Vec<String>, Vec<String>>) -> String {
        let errors = r.expect_err("refused");
        errors[0].split(',').next().unwrap_or_default().to_string()
    }

    #[test]
    fn events_follow_their_invoice_in_order() {
        let ledger = EventLedger::default();
        let known = |c: &str| c == "abc";
        let today = "2026-12-01"; // a Tuesday
        let admit = |code: &str, c: &str| ledger.admit(&event(code, "abc", today, c), known);
        assert_eq!(
            rule_of(ledger.admit(&event("030", "zzz", today, "1"), known)),
            "Regla: LGC02"
        );
        assert_eq!(rule_of(admit("032", "1")), "Regla: LGC03");
        assert_eq!(rule_of(admit("099", "1")), "Regla: AAH03");
        admit("030", "1").unwrap();
        assert_eq!(rule_of(admit("030", "1")), "Regla: LGC01");
        admit("032", "1").unwrap();
        // The tacit acceptance waits 3 business days after the receipt.
        assert_eq!(rule_of(admit("034", "1")), "Regla: DC24e");
        admit("033", "1").unwrap();
        assert_eq!(rule_of(admit("031", "1")), "Regla: LGC04");
        // Endorsing needs the registration (the authority's 036) first.
        assert_eq!(rule_of(admit("037", "371")), "Regla: LGC24");
        assert_eq!(rule_of(admit("036", "1")), "Regla: ZB01");
        assert_eq!(rule_of(admit("036", "363")), "Regla: LGC37");
        admit("036", "361").unwrap();
        assert_eq!(rule_of(admit("036", "362")), "Regla: LGC23");
        assert_eq!(rule_of(admit("037", "1")), "Regla: ZB01");
        admit("037", "371").unwrap();
        // The new holder registers the title again before endorsing it.
        assert_eq!(rule_of(admit("038", "038")), "Regla: LGC27");
        assert_eq!(rule_of(admit("039", "039")), "Regla: LGC30");
        assert_eq!(rule_of(admit("037", "372")), "Regla: LGC24");
        assert_eq!(rule_of(admit("036", "361")), "Regla: LGC23");
        admit("036", "363").unwrap();
        assert_eq!(rule_of(admit("038", "371")), "Regla: ZB01");
        admit("038", "038").unwrap();
        // After a guarantee, only an endorsement in property.
        assert_eq!(rule_of(admit("039", "039")), "Regla: LGC30");
        admit("037", "371").unwrap();
    }

    #[test]
    fn the_windows_count_business_days_from_the_receipt() {
        let known = |_: &str| true;
        // 032 on Tuesday 2026-12-01 (no holiday that week).
        for (code, date, ok) in [
            ("033", "2026-12-06", true),
            ("033", "2026-12-07", false),
            ("031", "2026-12-06", true),
            ("031", "2026-12-07", false),
            ("034", "2026-12-06", false),
            ("034", "2026-12-07", true),
        ] {
            let ledger = EventLedger::default();
            let cufe = "abc";
            ledger
                .admit(&event("030", cufe, "2026-12-01", "1"), known)
                .unwrap();
            ledger
                .admit(&event("032", cufe, "2026-12-01", "1"), known)
                .unwrap();
            let r = ledger.admit(&event(code, cufe, date, "1"), known);
            assert_eq!(r.is_ok(), ok, "{code} on {date}: {r:?}");
        }
    }
}
