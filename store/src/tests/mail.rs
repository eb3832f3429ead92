use chrono::Utc;

use crate::tests::{company, history, new_doc, open, resolution};
use crate::*;

fn log(document_id: u64, automatic: bool) -> EmailLog {
    EmailLog {
        id: 0,
        company_id: 1,
        document_id,
        to: vec!["a@example.test".into()],
        cc: vec![],
        status: email_status::QUEUED.into(),
        attempts: 0,
        last_error: None,
        created_at: Utc::now(),
        sent_at: None,
        message_id: String::new(),
        subject: "s".into(),
        automatic,
        resend_of: None,
        note: None,
        history: vec![],
    }
}

fn job() -> Job {
    Job {
        id: 0,
        kind: "email".into(),
        company_id: 1,
        document_id: Some(99),
        attempts: 0,
        run_at_ms: 0,
        in_flight: false,
        payload: serde_json::Value::Null,
        created_at: Utc::now(),
    }
}

#[test]
fn an_email_and_its_job_survive_reopen_and_list_by_document() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = {
        let s = open(dir.path());
        let (a, ja) = s.queue_email(log(5, false), job()).unwrap();
        let (b, _) = s.queue_email(log(5, true), job()).unwrap();
        s.queue_email(log(6, false), job()).unwrap();
        // The job names its log and no document (the document's job index
        // is its transmission job's).
        assert_eq!(ja.payload["email_id"], a.id);
        assert_eq!(ja.document_id, None);
        assert_eq!(s.job_for_document(99).unwrap(), None);
        // An attempt: the log is updated and the job removed together.
        let mut sent = a.clone();
        sent.status = email_status::SENT.into();
        sent.attempts = 1;
        s.update_email(&sent, EmailJob::Remove(ja.id)).unwrap();
        (sent, b)
    };
    let s = open(dir.path());
    assert_eq!(s.email_log(a.id).unwrap().unwrap(), a);
    let of5: Vec<u64> = s.email_logs(5).unwrap().iter().map(|l| l.id).collect();
    assert_eq!(of5, vec![a.id, b.id]);
    assert_eq!(s.email_logs(6).unwrap().len(), 1);
    assert!(s.email_logs(7).unwrap().is_empty());
    let jobs = s.jobs().unwrap();
    assert_eq!(jobs.len(), 2, "the sent one's job is gone");
    assert!(s.has_automatic_email(5).unwrap());
    assert!(!s.has_automatic_email(6).unwrap());
}

#[test]
fn an_acceptance_keeps_the_application_response_and_queues_one_automatic_email() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
    let mut doc = s.create_document(new_doc(&r, None)).unwrap();
    doc.pending_build = false;
    doc.state = state::ACCEPTED;
    let ar =
        "<ApplicationResponse>Documento validado por la DIAN ñ</ApplicationResponse>".repeat(20);
    let first = s
        .accept_document_unflushed(
            &doc,
            None,
            history("accepted"),
            Some(&ar),
            Some((log(doc.id, true), job())),
        )
        .unwrap();
    assert!(first.is_some());
    // Accepted again (a status query after a lost answer): no second email.
    let again = s
        .accept_document_unflushed(
            &doc,
            None,
            history("status_confirmed"),
            Some(&ar),
            Some((log(doc.id, true), job())),
        )
        .unwrap();
    assert_eq!(again, None);
    assert_eq!(s.email_logs(doc.id).unwrap().len(), 1);
    assert_eq!(
        s.application_response(doc.id).unwrap().as_deref(),
        Some(ar.as_str())
    );
    assert_eq!(s.application_response(doc.id + 1).unwrap(), None);
    // Stored compressed, apart from the record.
    let raw = s
        .application_responses
        .get(codec::id_key(doc.id))
        .unwrap()
        .unwrap();
    assert!(raw.len() < ar.len() / 4, "{} bytes", raw.len());
    assert_eq!(s.document(doc.id).unwrap().unwrap().state, state::ACCEPTED);
}

#[test]
fn an_acceptance_without_application_response_keeps_why() {
    let dir = tempfile::tempdir().unwrap();
    let doc = {
        let s = open(dir.path());
        let c = s.create_company(company()).unwrap();
        let r = s.add_resolution(c.id, resolution(1, 100)).unwrap();
        let mut doc = s.create_document(new_doc(&r, None)).unwrap();
        doc.pending_build = false;
        doc.state = state::ACCEPTED;
        doc.application_response_missing = Some(MissingApplicationResponse::AlreadyProcessed);
        s.accept_document_unflushed(&doc, None, history("accepted"), None, None)
            .unwrap();
        s.flush_now().unwrap();
        doc
    };
    let s = open(dir.path());
    let stored = s.document(doc.id).unwrap().unwrap();
    assert_eq!(
        stored.application_response_missing,
        Some(MissingApplicationResponse::AlreadyProcessed)
    );
    assert_eq!(s.application_response(doc.id).unwrap(), None);
    // A record that has its ApplicationResponse does not write the field.
    let mut kept = stored.clone();
    kept.application_response_missing = None;
    let json = serde_json::to_string(&kept).unwrap();
    assert!(!json.contains("application_response_missing"), "{json}");
}
