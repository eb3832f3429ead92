//! One event: who may, in order, inside its legal window; a title only of
//! a credit invoice; then its XML is built, signed and written with its job
//! before the caller hears of it, and sent at once through the transmitter
//! (a send that fails is retried by the job).

use chrono::{NaiveDate, SubsecRound, Utc};
use emisor_store::{
    EventFiles, EventState, InvoiceEvent, Job, PartyRef, ReceivedInvoice, SoftwareKind,
};
use rust_decimal::Decimal;

use super::title::{counted, find, invoice_terms, normalize_cufe, refresh_eligibility};
use super::{send, EventError, EVENT_JOB};
use crate::authority::Transmission;
use crate::engine::codes::nit_check_digit;
use crate::engine::events::application_response::{
    self, EventInput, EventParty, EventPerson, EventSoftware, IssuerParty,
};
use crate::engine::events::calendar::{
    claim_window_last_day, tacit_acceptance_allowed, tacit_acceptance_from, within_claim_window,
    TACIT_ACCEPTANCE_BUSINESS_DAYS,
};
use crate::engine::events::terms::{
    self, CustomTag, InvoiceTerms, NegotiationInput, RegistrationMode, SubType,
};
use crate::engine::events::{claim_concept, order, EventKind};
use crate::engine::model::colombia_offset;
use crate::engine::package;
use crate::engine::ubl::common::AUTHORITY_NIT;
use crate::issuing::issue::Caller;
use crate::issuing::Issuing;

/// The endorsee of an endorsement (spec 2.13 `endosatario`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endorsee {
    pub id_type: String,
    pub id_number: String,
    pub check_digit: Option<u8>,
    pub name: String,
    pub holder_quality: Option<String>,
}

/// Who received the invoice or the goods (030, 032), as a caller names
/// them (`recibido_por`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receiver {
    pub id_type: String,
    pub id_number: String,
    pub first_name: String,
    pub family_name: String,
    pub job_title: Option<String>,
    pub department: Option<String>,
}

/// The circulation terms of a registry event (decisions.md "Registry
/// terms").
#[derive(Debug, Clone)]
pub struct RegistryTerms {
    /// `tipo_inscripcion` of a registration (035).
    pub mode: RegistrationMode,
    /// `con_responsabilidad` of an endorsement in property (036).
    pub with_liability: bool,
    /// The negotiation values of `condiciones_financieras`.
    pub negotiation: NegotiationInput,
    /// `tasa_descuento_mensual` and `fecha_vencimiento_pago`: the event's
    /// note.
    pub monthly_rate: Option<Decimal>,
    pub payment_date: Option<NaiveDate>,
}

impl Default for RegistryTerms {
    /// A general registration; an endorsement with the endorser's
    /// liability; the invoice's values.
    fn default() -> Self {
        RegistryTerms {
            mode: RegistrationMode::General,
            with_liability: true,
            negotiation: NegotiationInput::default(),
            monthly_rate: None,
            payment_date: None,
        }
    }
}

/// An event as an API asks for it.
#[derive(Debug, Clone)]
pub struct EventRequest {
    pub kind: EventKind,
    pub cufe: String,
    pub notes: Option<String>,
    /// `motivo` of a claim (031).
    pub claim_concept: Option<String>,
    /// Endorsements (036-038 of the API).
    pub endorsee: Option<Endorsee>,
    /// `condiciones_financieras` as given, kept in the event's details.
    pub conditions: Option<serde_json::Value>,
    pub registry: RegistryTerms,
    /// `recibido_por` of 030 and 032.
    pub received_by: Option<Receiver>,
}

/// What an event came to.
#[derive(Debug, Clone)]
pub struct Registered {
    pub invoice: ReceivedInvoice,
    pub event: InvoiceEvent,
    /// The authority's answer, when one came.
    pub transmission: Option<Transmission>,
}

const AUTHORITY_NAME: &str = "Unidad Especial Dirección de Impuestos y Aduanas Nacionales";

fn event_party(p: &PartyRef) -> EventParty {
    let id_type = if p.id_type.is_empty() {
        "31".to_string()
    } else {
        p.id_type.clone()
    };
    EventParty {
        name: p.name.clone(),
        id_number: p.id_number.clone(),
        check_digit: p.check_digit.or_else(|| {
            (id_type == "31")
                .then(|| nit_check_digit(&p.id_number))
                .flatten()
        }),
        id_type,
        tax_level: "O-13".into(),
    }
}

fn authority_party() -> PartyRef {
    PartyRef {
        id_number: AUTHORITY_NIT.into(),
        id_type: "31".into(),
        check_digit: Some(4),
        name: AUTHORITY_NAME.into(),
        company_id: None,
    }
}

/// Who may register `kind` (decisions.md §5 "Events"): the buyer its
/// events, the legitimate holder the tacit acceptance and the registry.
fn may_act(
    t: &ReceivedInvoice,
    kind: EventKind,
    company: u64,
    nit: &str,
) -> Result<(), EventError> {
    let is = |p: &PartyRef| p.company_id == Some(company) || p.id_number == nit;
    if kind.is_buyer_event() {
        if is(&t.buyer) {
            return Ok(());
        }
        return Err(EventError::Forbidden(format!(
            "event {} is the buyer's ({}) to register",
            kind.api_code(),
            t.buyer.id_number
        )));
    }
    if is(&t.holder) {
        return Ok(());
    }
    Err(EventError::Forbidden(format!(
        "event {} is the legitimate holder's ({}) to register",
        kind.api_code(),
        t.holder.id_number
    )))
}

/// The parties of the ApplicationResponse: the one acting sends it; the
/// vendor receives the buyer's events, the authority the tacit acceptance
/// (rule AAG01e) and the registration, the endorsee an endorsement.
async fn parties(
    issuing: &Issuing,
    t: &ReceivedInvoice,
    req: &EventRequest,
) -> Result<(PartyRef, PartyRef), EventError> {
    let sender = if req.kind.is_buyer_event() {
        t.buyer.clone()
    } else {
        t.holder.clone()
    };
    let receiver = match req.kind {
        k if k.is_buyer_event() => t.vendor.clone(),
        EventKind::TacitAcceptance | EventKind::Registration => authority_party(),
        _ => {
            let e = req
                .endorsee
                .as_ref()
                .ok_or_else(|| EventError::invalid("endosatario", "is required"))?;
            let mut p = super::title::party(issuing, &e.id_number, &e.name).await?;
            p.id_type = e.id_type.clone();
            p.check_digit = e.check_digit.or(p.check_digit);
            p
        }
    };
    Ok((sender, receiver))
}

fn notes(req: &EventRequest) -> Result<(Vec<String>, Option<&'static str>), EventError> {
    let mut notes = Vec::new();
    let mut concept = None;
    if req.kind == EventKind::Claim {
        let given = req
            .claim_concept
            .as_deref()
            .ok_or_else(|| EventError::invalid("motivo", "is required for a claim (031)"))?;
        let (code, text) = claim_concept(given).ok_or_else(|| {
            EventError::invalid("motivo", "must be a claim concept: 01, 02, 03 or 04")
        })?;
        concept = Some(code);
        notes.push(format!("Motivo del reclamo {code}: {text}"));
    }
    if let Some(e) = &req.endorsee {
        if let Some(q) = &e.holder_quality {
            notes.push(format!("Calidad del tenedor: {q}"));
        }
    }
    let r = &req.registry;
    let mut conditions = Vec::new();
    if let Some(rate) = r.monthly_rate {
        conditions.push(format!("tasa de descuento mensual {rate} %"));
    }
    if let Some(date) = r.payment_date {
        conditions.push(format!("fecha de vencimiento del pago {date}"));
    }
    if !conditions.is_empty() {
        notes.push(format!(
            "Condiciones financieras: {}",
            conditions.join("; ")
        ));
    }
    if let Some(n) = req.notes.as_deref().filter(|n| !n.trim().is_empty()) {
        notes.push(n.to_string());
    }
    Ok((notes, concept))
}

/// Registers one event and sends it.
pub async fn register(
    issuing: &Issuing,
    caller: &Caller,
    caller_nit: &str,
    req: EventRequest,
) -> Result<Registered, EventError> {
    let cufe = normalize_cufe(&req.cufe)?;
    let (mut note_lines, concept) = notes(&req)?;
    let t = find(issuing, caller, caller_nit, &cufe)
        .await?
        .ok_or_else(|| EventError::NotFound(format!("invoice with CUFE {cufe}")))?;
    let mut t = super::copy_check::vouched(issuing, t).await?;
    may_act(&t, req.kind, caller.company, caller_nit)?;
    if let Some(p) = t.events.iter().find(|e| e.state == EventState::Pending) {
        return Err(EventError::InvalidState(format!(
            "event {} of this invoice is still being sent to the authority",
            p.code
        )));
    }
    let done = counted(&t);
    order::check(&done, req.kind).map_err(|e| EventError::InvalidState(e.to_string()))?;
    let now = crate::clock::colombia_now().trunc_subsecs(0);
    within_window(&t, req.kind, now.date_naive())?;
    let content = circulation_content(issuing, &t, &req, &done).await?;
    if req.kind == EventKind::TacitAcceptance {
        note_lines.insert(
            0,
            terms::tacit_acceptance_statement(&t.buyer.name, &t.buyer.id_number),
        );
    }
    let (sender, receiver) = parties(issuing, &t, &req).await?;

    // Build and sign.
    let company = issuing
        .store
        .company(caller.company)
        .await?
        .ok_or_else(|| EventError::NotFound("company".into()))?;
    let software = issuing
        .store
        .software(caller.company, SoftwareKind::Invoicing)
        .await?
        .ok_or_else(|| {
            EventError::invalid(
                "software",
                "the company has no registered invoicing software",
            )
        })?;
    let cert = issuing
        .store
        .certificate(caller.company)
        .await?
        .ok_or_else(|| {
            EventError::invalid("certificado", "the company has no signing certificate")
        })?;
    let key = issuing
        .keys
        .get_or_load(caller.company, &cert.serial, || {
            crate::engine::signing_key::SigningKey::from_pkcs12(
                cert.pkcs12_der.expose(),
                cert.password.expose(),
            )
        })
        .map_err(|e| EventError::invalid("certificado", e.to_string()))?;
    let event_id = issuing.store.next_event_id().await?;
    let number = format!("EV{event_id}");
    let (sender_xml, receiver_xml) = (event_party(&sender), event_party(&receiver));
    let input = EventInput {
        kind: req.kind,
        number: &number,
        environment: caller.environment.authority_code(),
        issued_at: now,
        sender: &sender_xml,
        receiver: &receiver_xml,
        invoice_number: &t.number,
        invoice_cufe: &t.cufe,
        software: EventSoftware {
            id: &software.software_id,
            pin: software.pin.expose(),
            provider_nit: &software.provider_nit,
            provider_check_digit: software.provider_dv,
        },
        claim_concept: concept,
        notes: &note_lines,
        customization_id: content.sub_type.customization_id(),
        custom_tag: content.tag.as_ref(),
        validity_end: content.validity_end,
        issuer_party: content.issuer_party(),
    };
    let built =
        application_response::build(&input).map_err(|e| EventError::Internal(e.to_string()))?;
    // One RSA signature (about a millisecond): done here rather than
    // queued behind the documents on the signer pool.
    let xml = crate::engine::xades::sign(&built.unsigned_xml, &key, now)
        .map_err(|e| EventError::Internal(format!("signing the event: {e}")))?;
    let stem = format!("ar{:0>10}{:08}", company.nit, event_id % 100_000_000);
    let zip = package::zip_single(&format!("{stem}.xml"), xml.as_bytes(), now)
        .map_err(|e| EventError::Internal(e.to_string()))?;
    let details = serde_json::json!({
        "notes": req.notes,
        "motivo": concept,
        "endosatario": req.endorsee.as_ref().map(|e| serde_json::json!({
            "tipo_documento": e.id_type, "numero_documento": e.id_number, "dv": e.check_digit,
            "nombre": e.name, "calidad_tenedor": e.holder_quality,
        })),
        "condiciones_financieras": req.conditions,
        "subtipo": content.sub_type.customization_id(),
        "extension": content.tag.as_ref().map(|tag| {
            let pairs: serde_json::Map<String, serde_json::Value> = tag
                .pairs
                .iter()
                .map(|(n, v)| (n.to_string(), serde_json::Value::from(v.as_str())))
                .collect();
            serde_json::json!({ tag.group: pairs })
        }),
        "fecha_fin_validez": content.validity_end,
        "recibido_por": req.received_by.as_ref().map(|r| serde_json::json!({
            "tipo_documento": r.id_type, "numero_documento": r.id_number,
            "nombres": r.first_name, "apellidos": r.family_name,
            "cargo": r.job_title, "area": r.department,
        })),
    });
    let stamp = Utc::now();
    let event = InvoiceEvent {
        id: event_id,
        code: req.kind.api_code().into(),
        authority_code: req.kind.authority_code().into(),
        name: req.kind.name().into(),
        number,
        cude: built.cude,
        issued_at: now,
        company_id: caller.company,
        environment: caller.environment,
        sender,
        receiver,
        state: EventState::Pending,
        attempts: 0,
        transmission: None,
        details,
        created_at: stamp,
        updated_at: stamp,
    };
    t.events.push(event);
    t.updated_at = stamp;
    refresh_eligibility(issuing, &mut t).await;
    let job = Job {
        id: 0,
        kind: EVENT_JOB.into(),
        company_id: caller.company,
        document_id: None,
        attempts: 0,
        run_at_ms: stamp.timestamp_millis(),
        in_flight: false,
        payload: serde_json::json!({ "received_id": t.id, "event_id": event_id }),
        created_at: stamp,
    };
    let files = EventFiles {
        xml,
        zip_name: format!("z{}.zip", &stem[2..]),
        zip,
    };
    let (t, job) = issuing
        .store
        .save_received_event(t, event_id, files, job)
        .await?;
    // Sent now, answered with the verdict; a failure leaves the job to
    // the scheduler.
    let transmission = send::send(issuing, job.clone()).await;
    if matches!(transmission, send::Sent::Retry { .. }) {
        issuing.schedule(&job_after(issuing, job.id).await.unwrap_or(job));
    }
    let invoice = issuing.store.received(t.id).await?.unwrap_or(t);
    let event = invoice
        .events
        .iter()
        .find(|e| e.id == event_id)
        .cloned()
        .ok_or_else(|| EventError::Internal("the event vanished".into()))?;
    Ok(Registered {
        transmission: transmission.transmission(),
        invoice,
        event,
    })
}

async fn job_after(issuing: &Issuing, id: u64) -> Option<Job> {
    issuing.store.job(id).await.ok().flatten()
}

/// The date of the goods' receipt (032) that counts, in Colombia.
pub fn receipt_date(t: &ReceivedInvoice) -> Option<NaiveDate> {
    t.events
        .iter()
        .find(|e| e.state != EventState::Rejected && e.code == EventKind::GoodsReceipt.api_code())
        .map(|e| e.issued_at.with_timezone(&colombia_offset()).date_naive())
}

/// The legal windows (decisions.md "Business days"; rules DC24z, DC24c,
/// DC24e): a claim (031) or an express acceptance (033) within 3 business
/// days of the goods' receipt (032), a tacit acceptance (034) only after.
pub fn within_window(
    t: &ReceivedInvoice,
    kind: EventKind,
    today: NaiveDate,
) -> Result<(), EventError> {
    let Some(receipt) = receipt_date(t) else {
        return Ok(());
    };
    let days = TACIT_ACCEPTANCE_BUSINESS_DAYS;
    match kind {
        EventKind::Claim | EventKind::ExpressAcceptance if !within_claim_window(receipt, today) => {
            Err(EventError::InvalidState(format!(
                "{} ({}) is possible only within {days} business days of the goods' receipt (032 of {receipt}): the deadline was {}",
                match kind {
                    EventKind::Claim => "a claim",
                    _ => "an express acceptance",
                },
                kind.api_code(),
                claim_window_last_day(receipt)
            )))
        }
        EventKind::TacitAcceptance if !tacit_acceptance_allowed(receipt, today) => {
            Err(EventError::InvalidState(format!(
                "a tacit acceptance (034) is possible once {days} business days have passed since the goods' receipt (032 of {receipt}): from {}",
                tacit_acceptance_from(receipt)
            )))
        }
        _ => Ok(()),
    }
}

/// What a circulation event carries besides its parties.
struct Content {
    sub_type: SubType,
    tag: Option<CustomTag>,
    validity_end: Option<NaiveDate>,
    /// The invoice's buyer as the invoice names it (endorsements).
    buyer: Option<EventParty>,
    /// Who received (030, 032).
    person: Option<EventPerson>,
}

impl Content {
    fn issuer_party(&self) -> Option<IssuerParty<'_>> {
        if let Some(b) = &self.buyer {
            return Some(IssuerParty::Party(b));
        }
        self.person.as_ref().map(IssuerParty::Person)
    }
}

/// The person of 030 and 032: the one the caller names, else the buyer
/// itself (its identification and name).
fn received_by(req: &EventRequest, t: &ReceivedInvoice) -> Option<EventPerson> {
    if !matches!(
        req.kind,
        EventKind::Acknowledgement | EventKind::GoodsReceipt
    ) {
        return None;
    }
    Some(match &req.received_by {
        Some(r) => EventPerson {
            check_digit: (r.id_type == "31")
                .then(|| nit_check_digit(&r.id_number))
                .flatten(),
            id_number: r.id_number.clone(),
            id_type: r.id_type.clone(),
            first_name: r.first_name.clone(),
            family_name: r.family_name.clone(),
            job_title: r.job_title.clone(),
            department: r.department.clone(),
        },
        None => {
            let buyer = event_party(&t.buyer);
            EventPerson {
                id_number: buyer.id_number,
                id_type: buyer.id_type,
                check_digit: buyer.check_digit,
                first_name: buyer.name.clone(),
                family_name: buyer.name,
                job_title: None,
                department: None,
            }
        }
    })
}

/// The invoice's terms, which a circulation event needs.
async fn terms_of(issuing: &Issuing, t: &ReceivedInvoice) -> Result<InvoiceTerms, EventError> {
    invoice_terms(issuing, t).await?.ok_or_else(|| {
        EventError::InvalidState(
            "the invoice's XML is not at hand: its payment terms cannot be read".into(),
        )
    })
}

/// Sub-type, extension, validity end date and named parties of `req`
/// (decisions.md "Registry terms", "Events"): a title only of a credit
/// invoice with a due date (rule LGC62).
async fn circulation_content(
    issuing: &Issuing,
    t: &ReceivedInvoice,
    req: &EventRequest,
    done: &[EventKind],
) -> Result<Content, EventError> {
    let r = &req.registry;
    let sub_type = SubType::of(
        req.kind,
        order::registration_stage(done),
        r.mode,
        r.with_liability,
    );
    let mut content = Content {
        sub_type,
        tag: None,
        validity_end: None,
        buyer: None,
        person: received_by(req, t),
    };
    if req.kind != EventKind::Registration && !req.kind.is_endorsement() {
        return Ok(content);
    }
    let terms = terms_of(issuing, t).await?;
    let total = terms
        .payable
        .or_else(|| t.total.parse().ok())
        .unwrap_or_default();
    if req.kind == EventKind::Registration {
        if terms.is_cash() {
            return Err(EventError::InvalidState(
                "the invoice's payment form is cash (PaymentMeans/cbc:ID 1): only a credit invoice with a due date can be registered as a title".into(),
            ));
        }
        let Some(due) = terms.payment_due_date else {
            return Err(EventError::InvalidState(
                "the invoice has no due date (PaymentMeans/cbc:PaymentDueDate): only a credit invoice with a due date can be registered as a title".into(),
            ));
        };
        content.validity_end = Some(due);
        content.tag = Some(terms::payment_record(total));
        return Ok(content);
    }
    let negotiation = terms::negotiation(total, &r.negotiation).map_err(|problems| {
        let first = problems.into_iter().next();
        match first {
            Some(p) => {
                EventError::invalid(format!("condiciones_financieras.{}", p.field), p.message)
            }
            None => EventError::invalid("condiciones_financieras", "are not valid"),
        }
    })?;
    content.tag = Some(if req.kind == EventKind::EndorsementProperty {
        negotiation.property_tag()
    } else {
        negotiation.value_tag()
    });
    let mut buyer = event_party(&t.buyer);
    if !terms.buyer_id.is_empty() {
        buyer.id_number = terms.buyer_id.clone();
    }
    if !terms.buyer_name.is_empty() {
        buyer.name = terms.buyer_name.clone();
    }
    content.buyer = Some(buyer);
    Ok(content)
}
