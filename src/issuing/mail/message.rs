//! The mail of a document as the authority prescribes it for the buyer
//! (protocol.md 5.3): the subject `NIT;issuer name;number;document type
//! code;trade name`, and one ZIP of at most 2 MB holding the signed
//! AttachedDocument (the signed document and the authority's
//! ApplicationResponse inside, protocol.md 5.2) and the PDF.
//!
//! A document without the authority's ApplicationResponse has no
//! AttachedDocument: its ZIP holds the signed XML instead, and the log
//! carries a note saying why there is none: accepted before responses were
//! kept, or accepted by an answer that carried none (the authority's
//! "already processed", say).

use std::io::{Cursor, Write};
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, TimeZone};
use emisor_store::{Company, DocumentFiles, DocumentRecord, EmailLog, MissingApplicationResponse};
use lettre::address::Envelope;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::Message;

use crate::engine::model::{colombia_offset, DocumentKind};
use crate::engine::signing_key::SigningKey;
use crate::engine::ubl::attached;
use crate::issuing::context::colombia_now;
use crate::issuing::Issuing;

/// The most a mail may carry (protocol.md 5.3).
pub const MAX_ATTACHMENT_BYTES: usize = 2 * 1024 * 1024;

/// Why there is no AttachedDocument in a mail: the document was accepted
/// before this service kept ApplicationResponses.
pub const NO_APPLICATION_RESPONSE: &str = "the document was accepted before the authority's ApplicationResponse was kept: the mail carries the signed XML and the PDF, not an AttachedDocument";

/// Why there is no AttachedDocument in a mail: the acceptance was the
/// authority's "already processed" answer, which brings no
/// ApplicationResponse.
pub const ALREADY_PROCESSED: &str = "the authority gave no ApplicationResponse for this acceptance: it answered that the document had already been processed (rule 90, an earlier send was accepted); the mail carries the signed XML and the PDF, not an AttachedDocument";

/// Why there is no AttachedDocument in a mail: the authority's accepting
/// answer carried no ApplicationResponse.
pub const NOT_IN_ANSWER: &str = "the authority gave no ApplicationResponse with its acceptance: the mail carries the signed XML and the PDF, not an AttachedDocument";

/// The note of a mail without an AttachedDocument: why `doc` has no
/// ApplicationResponse, as recorded when it was accepted.
pub fn missing_application_response_note(doc: &DocumentRecord) -> &'static str {
    match doc.application_response_missing {
        Some(MissingApplicationResponse::AlreadyProcessed) => ALREADY_PROCESSED,
        Some(MissingApplicationResponse::NotInAnswer) => NOT_IN_ANSWER,
        // Nothing recorded: accepted before responses (or their absence)
        // were kept.
        None => NO_APPLICATION_RESPONSE,
    }
}

/// Why no attempt can succeed (the log says failed at once) or why this one
/// could not be made (retried like a refused connection).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Permanent(String),
    #[error("{0}")]
    Transient(String),
}

impl From<emisor_store::StoreError> for BuildError {
    fn from(e: emisor_store::StoreError) -> Self {
        BuildError::Transient(format!("store: {e}"))
    }
}

/// A message ready for the mailer.
#[derive(Debug, Clone)]
pub struct Built {
    pub message_id: String,
    pub subject: String,
    pub envelope: Envelope,
    pub raw: Vec<u8>,
    pub note: Option<String>,
}

/// `<emisor.d<document>.m<log>@<domain of From>>`: the same for every
/// attempt of one log entry.
pub fn message_id(document_id: u64, log_id: u64, from: &Mailbox) -> String {
    format!("<emisor.d{document_id}.m{log_id}@{}>", from.email.domain())
}

/// `NIT;issuer name;number;document type code;trade name`.
pub fn subject(company: &Company, number: &str, type_code: &str) -> String {
    let trade = company.trade_name.as_deref().unwrap_or(&company.name);
    // `;` separates the fields: none may carry one (or a line break).
    let clean = |s: &str| s.replace([';', '\r', '\n'], " ").trim().to_string();
    format!(
        "{};{};{};{};{}",
        clean(&company.nit),
        clean(&company.name),
        clean(number),
        type_code,
        clean(trade)
    )
}

/// The authority's validation instant, from its ApplicationResponse.
fn validated_at(application_response: &str) -> Option<DateTime<FixedOffset>> {
    let doc = roxmltree::Document::parse(application_response).ok()?;
    let text = |local: &str| {
        doc.root_element()
            .children()
            .find(|n| n.tag_name().name() == local)
            .and_then(|n| n.text())
    };
    let date = NaiveDate::parse_from_str(text("IssueDate")?, "%Y-%m-%d").ok()?;
    let time = text("IssueTime")?;
    let time = NaiveTime::parse_from_str(time.get(..8)?, "%H:%M:%S").ok()?;
    colombia_offset()
        .from_local_datetime(&date.and_time(time))
        .single()
}

/// `fv0900…xml` → `ad0900…xml` (protocol.md 5.2: the document's prefix
/// replaced by `ad`).
pub fn attached_name(xml_name: &str) -> String {
    let digits = xml_name
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(xml_name.len());
    format!("ad{}", &xml_name[digits..])
}

fn zip(entries: &[(&str, &[u8])]) -> Result<Vec<u8>, BuildError> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        w.start_file(*name, options)
            .and_then(|_| w.write_all(bytes).map_err(Into::into))
            .map_err(|e| BuildError::Transient(format!("zipping {name}: {e}")))?;
    }
    w.finish()
        .map(Cursor::into_inner)
        .map_err(|e| BuildError::Transient(format!("zipping: {e}")))
}

/// The attachment's files: CPU work (signing, deflate), run on the pool.
struct Packing {
    files: DocumentFiles,
    application_response: Option<String>,
    key: Option<Arc<SigningKey>>,
    pdf: Option<(String, Vec<u8>)>,
    now: DateTime<FixedOffset>,
    fallback_validation: DateTime<FixedOffset>,
}

fn pack(p: Packing) -> Result<Vec<u8>, BuildError> {
    let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
    match (&p.application_response, &p.key) {
        (Some(ar), Some(key)) => {
            let validated = validated_at(ar).unwrap_or(p.fallback_validation);
            let unsigned = attached::build_for_signed(&p.files.xml, ar, validated, p.now)
                .map_err(|e| BuildError::Permanent(format!("AttachedDocument: {e}")))?;
            let signed = crate::engine::xades::sign(&unsigned, key, p.now)
                .map_err(|e| BuildError::Permanent(format!("signing the AttachedDocument: {e}")))?;
            entries.push((attached_name(&p.files.xml_name), signed.into_bytes()));
        }
        _ => entries.push((p.files.xml_name.clone(), p.files.xml.clone().into_bytes())),
    }
    if let Some((name, bytes)) = p.pdf {
        entries.push((name, bytes));
    }
    let refs: Vec<(&str, &[u8])> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    zip(&refs)
}

fn body_text(
    company: &Company,
    doc: &DocumentRecord,
    customer: Option<&str>,
    note: bool,
) -> String {
    let mut t = String::new();
    if let Some(c) = customer {
        t.push_str(&format!("Señor(a) {c}:\r\n\r\n"));
    }
    t.push_str(&format!(
        "{} le envía el documento electrónico {} por {} (código {}).\r\n",
        company.name,
        doc.full_number(),
        doc.total,
        doc.code.as_deref().unwrap_or_default()
    ));
    if let Some(url) = &doc.qr_url {
        t.push_str(&format!("Consulta: {url}\r\n"));
    }
    t.push_str(if note {
        "El archivo ZIP adjunto contiene el documento firmado y su representación gráfica.\r\n"
    } else {
        "El archivo ZIP adjunto contiene el AttachedDocument (el documento firmado y la respuesta de validación de la autoridad tributaria) y su representación gráfica.\r\n"
    });
    t
}

fn mailbox(field: &str, a: &str) -> Result<Mailbox, BuildError> {
    a.parse::<Mailbox>()
        .map_err(|e| BuildError::Permanent(format!("{field} {a:?} is not an email address: {e}")))
}

/// The PDF of the document (its usual layout), or why there is none: a
/// PDF that cannot be drawn does not keep the signed document from the
/// buyer.
async fn pdf(issuing: &Issuing, doc: &DocumentRecord) -> Result<(String, Vec<u8>), String> {
    crate::issuing::files::rendered_pdf(issuing, (doc.company_id, doc.environment), doc.id, None)
        .await
        .map(|p| (p.name, p.bytes))
        .map_err(|e| format!("the PDF could not be made ({e}): the mail carries the XML alone"))
}

/// Builds the email of `log` for `doc`.
pub async fn build(
    issuing: &Issuing,
    doc: &DocumentRecord,
    log: &EmailLog,
) -> Result<Built, BuildError> {
    let store = &issuing.store;
    let from = mailbox("from", &issuing.settings.smtp.from)?;
    let company = store
        .company(doc.company_id)
        .await?
        .ok_or_else(|| BuildError::Permanent("the company no longer exists".into()))?;
    let files = store
        .document_files(doc.id)
        .await?
        .ok_or_else(|| BuildError::Permanent("the document has no signed XML".into()))?;
    let application_response = store.application_response(doc.id).await?;
    let customer = match doc.customer_id {
        Some(id) => store.customer(doc.company_id, id).await?.map(|c| c.name),
        None => None,
    };
    let key = match application_response {
        Some(_) => {
            let cert = store.certificate(doc.company_id).await?.ok_or_else(|| {
                BuildError::Permanent(
                    "the company has no certificate to sign the AttachedDocument".into(),
                )
            })?;
            let key = issuing
                .keys
                .get_or_load(doc.company_id, &cert.serial, || {
                    SigningKey::from_pkcs12(cert.pkcs12_der.expose(), cert.password.expose())
                })
                .map_err(|e| BuildError::Permanent(format!("signing key: {e}")))?;
            Some(key)
        }
        None => None,
    };
    let pdf = pdf(issuing, doc).await;
    let notes: Vec<String> = [
        application_response
            .is_none()
            .then(|| missing_application_response_note(doc).to_string()),
        pdf.as_ref().err().cloned(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    let zip_name = files.zip_name.clone();
    let without_ar = application_response.is_none();
    let packing = Packing {
        files,
        application_response,
        key,
        pdf: pdf.ok(),
        now: colombia_now(),
        fallback_validation: doc.updated_at.with_timezone(&colombia_offset()),
    };
    let zip = issuing
        .mail
        .pool
        .run(move || pack(packing))
        .await
        .map_err(|e| BuildError::Transient(format!("building the attachment: {e}")))??;
    if zip.len() > MAX_ATTACHMENT_BYTES {
        return Err(BuildError::Permanent(format!(
            "the attachment is {} bytes, over the {MAX_ATTACHMENT_BYTES} a mail may carry",
            zip.len()
        )));
    }

    let type_code = DocumentKind::from_code(doc.document_type)
        .map(|k| k.type_code())
        .unwrap_or("01");
    let subject = subject(&company, &doc.full_number(), type_code);
    let message_id = if log.message_id.is_empty() {
        message_id(doc.id, log.id, &from)
    } else {
        log.message_id.clone()
    };
    let mut b = Message::builder()
        .from(from)
        .subject(subject.clone())
        .message_id(Some(message_id.clone()));
    for a in &log.to {
        b = b.to(mailbox("to", a)?);
    }
    for a in &log.cc {
        b = b.cc(mailbox("cc", a)?);
    }
    let text = body_text(&company, doc, customer.as_deref(), without_ar);
    let message = b
        .multipart(
            MultiPart::mixed()
                .singlepart(SinglePart::plain(text))
                .singlepart(
                    Attachment::new(zip_name).body(
                        zip,
                        ContentType::parse("application/zip")
                            .map_err(|e| BuildError::Permanent(format!("content type: {e}")))?,
                    ),
                ),
        )
        .map_err(|e| BuildError::Permanent(format!("building the message: {e}")))?;
    Ok(Built {
        message_id,
        subject,
        envelope: message.envelope().clone(),
        raw: message.formatted(),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The note says why there is no AttachedDocument as the record
    /// knows it: a record from before responses were kept has no reason
    /// stored, one accepted as "already processed" says so.
    #[test]
    fn the_note_says_why_there_is_no_application_response() {
        // As written before the reason was recorded: no such field.
        let old: DocumentRecord = serde_json::from_value(serde_json::json!({
            "id": 5, "company_id": 1, "environment": "test", "document_type": 1,
            "resolution_id": 1, "prefix": "SETP", "number": 990000001, "state": 2,
            "issue_date": "2026-01-02", "transmission": {"is_valid": true,
            "status_code": "00", "status_description": "Documento procesado anteriormente.",
            "errors": [], "zip_key": null, "retryable": false},
            "created_at": "2026-01-02T00:00:00Z", "updated_at": "2026-01-02T00:00:00Z",
        }))
        .unwrap();
        assert_eq!(old.application_response_missing, None);
        assert_eq!(
            missing_application_response_note(&old),
            NO_APPLICATION_RESPONSE
        );
        let mut doc = old.clone();
        doc.application_response_missing = Some(MissingApplicationResponse::AlreadyProcessed);
        let note = missing_application_response_note(&doc);
        assert!(note.contains("already been processed"), "{note}");
        assert!(!note.contains("accepted before"), "{note}");
        // Kept through the store's encoding.
        let stored: DocumentRecord =
            serde_json::from_value(serde_json::to_value(&doc).unwrap()).unwrap();
        assert_eq!(stored, doc);
        doc.application_response_missing = Some(MissingApplicationResponse::NotInAnswer);
        assert_eq!(missing_application_response_note(&doc), NOT_IN_ANSWER);
        for note in [NO_APPLICATION_RESPONSE, ALREADY_PROCESSED, NOT_IN_ANSWER] {
            assert!(note.contains("ApplicationResponse"), "{note}");
        }
    }

    #[test]
    fn names_subject_and_message_id() {
        assert_eq!(
            attached_name("fv09000000010002600000001.xml"),
            "ad09000000010002600000001.xml"
        );
        assert_eq!(attached_name("nc0900.xml"), "ad0900.xml");
        let from: Mailbox = "emisor <no-reply@facturas.example>".parse().unwrap();
        assert_eq!(message_id(7, 3, &from), "<emisor.d7.m3@facturas.example>");
        let company = Company {
            id: 1,
            nit: "900000001".into(),
            dv: 9,
            name: "Empresa; Demo".into(),
            trade_name: Some("Demo\r\nTienda".into()),
            address: String::new(),
            municipality_code: String::new(),
            municipality_name: String::new(),
            department_code: String::new(),
            department_name: String::new(),
            email: None,
            phone: None,
            organization_type: 1,
            tax_regime: "48".into(),
            tax_responsibilities: "O-13".into(),
            rate_limit_per_minute: None,
            monthly_document_limit: None,
            webhook_url: None,
            webhook_secret: None,
            demo: true,
            created_at: chrono::Utc::now(),
        };
        assert_eq!(
            subject(&company, "SETP990000001", "01"),
            "900000001;Empresa  Demo;SETP990000001;01;Demo  Tienda"
        );
    }

    #[test]
    fn the_validation_instant_is_the_application_responses() {
        let ar = "<ApplicationResponse xmlns:cbc=\"urn:x\"><cbc:IssueDate>2026-11-22</cbc:IssueDate><cbc:IssueTime>21:05:09-05:00</cbc:IssueTime></ApplicationResponse>";
        let at = validated_at(ar).unwrap();
        assert_eq!(at.to_rfc3339(), "2026-11-22T21:05:09-05:00");
        assert_eq!(validated_at("<x/>"), None);
    }
}
