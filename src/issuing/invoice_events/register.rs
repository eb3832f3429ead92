//! One event: who may, in order, not before its time; then its XML is
//! built, signed and written with its job before the caller hears of it,
//! and sent at once through the transmitter (a send that fails is retried
//! by the job).

use chrono::{SubsecRound, Utc};
use emisor_store::{
    EventFiles, EventState, InvoiceEvent, Job, PartyRef, ReceivedInvoice, SoftwareKind,
};

use super::title::{counted, find, normalize_cufe, settle};
use super::{send, EventError, EVENT_JOB};
use crate::authority::Transmission;
use crate::engine::events::application_response::{self, EventInput, EventParty, EventSoftware};
use crate::engine::events::calendar::tacit_acceptance_from;
use crate::engine::events::{claim_concept, order, EventKind};
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
    /// `condiciones_financieras`, kept and written as a note.
    pub conditions: Option<serde_json::Value>,
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
    EventParty {
        name: p.name.clone(),
        id_number: p.id_number.clone(),
        id_type: if p.id_type.is_empty() {
            "31".into()
        } else {
            p.id_type.clone()
        },
        check_digit: p.check_digit,
        tax_level: "O-13".into(),
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
/// vendor receives the buyer's events, the buyer the tacit acceptance, the
/// authority the registration, the endorsee an endorsement.
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
        EventKind::TacitAcceptance => t.buyer.clone(),
        EventKind::Registration => PartyRef {
            id_number: AUTHORITY_NIT.into(),
            id_type: "31".into(),
            check_digit: Some(4),
            name: AUTHORITY_NAME.into(),
            company_id: None,
        },
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
    if let Some(c) = &req.conditions {
        notes.push(format!("Condiciones financieras: {c}"));
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
    let (note_lines, concept) = notes(&req)?;
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
    order::check(&counted(&t), req.kind).map_err(|e| EventError::InvalidState(e.to_string()))?;
    let now = crate::clock::colombia_now().trunc_subsecs(0);
    if req.kind == EventKind::TacitAcceptance {
        let receipt = t
            .events
            .iter()
            .find(|e| {
                e.state != EventState::Rejected && e.code == EventKind::GoodsReceipt.api_code()
            })
            .map(|e| e.issued_at.date_naive());
        if let Some(from) = receipt.map(tacit_acceptance_from) {
            if now.date_naive() < from {
                return Err(EventError::InvalidState(format!(
                    "a tacit acceptance (034) is possible once 3 business days have passed since the goods' receipt (032): from {from}"
                )));
            }
        }
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
    settle(&mut t);
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
