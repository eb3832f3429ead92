//! The same-day rule of annex 1.9 of the sales invoice (Res. 000165/2023,
//! in force since 2024-05-01): a sales invoice, export invoice, credit
//! note or debit note is dated the day it reaches the authority, or it is
//! refused (rules FAD09e, CAD09e, DAD09e).
//!
//! A document of those types
//! ([`crate::engine::model::DocumentKind::dated_the_day_it_is_sent`]) not yet accepted whose send falls on a later
//! Colombian day (business clock, [`crate::clock`]) than its date is
//! re-dated before that send: built again from its request with the same
//! number and reference at now — new date, time, signing time and code —
//! and the new build committed with a history line naming the code it
//! replaces, then synced against a power cut, before anything is sent.
//! The authority is first asked about the code it carries (GetStatus):
//! an earlier attempt may have delivered it, and then that acceptance is
//! the document's, which is never accepted twice.
//!
//! Contingency invoices (T03, T04) keep their own rules; support documents
//! (dated the day of the operation, which may be sent later) and POS
//! receipts are under other annexes and keep their date; payroll too.

use chrono::{NaiveDate, Utc};
use emisor_actors::transmitter::TransmitFailure;
use emisor_store::{DocumentFiles, DocumentRecord, HistoryEntry};
use serde_json::json;

use super::issue::issued_at;
use super::kind::StoredKind;
use super::rebuild::{build_again, Again};
use super::transmit::TransmitError;
use super::Issuing;
use crate::authority::port::{AuthorityRequest, AuthorityResponse, AuthorityTarget};
use crate::authority::Transmission;

/// The authority's codes of the rule, by root: invoice, credit and debit
/// note.
const RULES: [&str; 3] = ["FAD09e", "CAD09e", "DAD09e"];

/// Whether `doc`, sent on `today`, must first be dated again: one
/// comparison of days on the issuing path.
pub fn due(doc: &DocumentRecord, today: NaiveDate) -> bool {
    StoredKind::of(doc).is_some_and(StoredKind::dated_the_day_it_is_sent)
        && issued_at(doc).date_naive() < today
}

/// The business clock's Colombian day.
pub fn today() -> NaiveDate {
    crate::clock::colombia_now().date_naive()
}

/// Whether an answer refuses the document for its date (the rule's code
/// among its errors): a document sent just before midnight that reached
/// the authority after it.
pub fn refused_for_its_date(t: &Transmission) -> bool {
    !t.is_valid
        && t.errors.iter().any(|e| {
            e.strip_prefix("Regla: ")
                .and_then(|r| r.split(',').next())
                .is_some_and(|code| RULES.contains(&code.trim()))
        })
}

/// Whether a status answer says the authority does not have the code
/// (`66`, "TrackId no encontrado"): only then may the document take
/// another. One in process (`98`) or pending may still be accepted.
pub fn absent(t: &Transmission) -> bool {
    !t.is_valid && t.status_code == "66"
}

/// What re-dating a document before its send came to.
pub(super) enum Redated {
    /// Dated today, committed and synced: the document now holds the new
    /// build, to send with these files.
    Ready(DocumentFiles),
    /// The authority already had its code: that verdict is recorded and
    /// nothing is sent.
    Known(Transmission),
    /// The authority could not be asked: this attempt is spent.
    Unasked(TransmitFailure<crate::authority::TransmitError>),
    /// The authority has the code in process: asked again next time.
    InProcess(Transmission),
    /// It cannot be built for today (a resolution that expired, a due
    /// date now past): a business error, nothing is sent.
    Unbuildable(String),
}

impl Issuing {
    /// Re-dates `doc` (see the module's comment) for a send today. `asked`:
    /// the authority has just said it does not have the code it holds
    /// ([`absent`]) or refused it for its date.
    pub(super) async fn redate(
        &self,
        doc: &mut DocumentRecord,
        target: &AuthorityTarget,
        asked: bool,
        actor: &str,
    ) -> Result<Redated, TransmitError> {
        let previous = doc.code.clone().unwrap_or_default();
        if !asked && !previous.is_empty() {
            let status = self
                .call_authority(
                    doc.company_id,
                    target.clone(),
                    AuthorityRequest::GetStatus {
                        track_id: previous.clone(),
                    },
                )
                .await;
            match status {
                Ok(AuthorityResponse::Verdict(t))
                    if t.accepted() || (t.known_rejection() && !refused_for_its_date(&t)) =>
                {
                    return Ok(Redated::Known(t));
                }
                // Not there, or refused for its date: a new code is safe.
                Ok(AuthorityResponse::Verdict(t)) if absent(&t) || refused_for_its_date(&t) => {}
                Ok(AuthorityResponse::Verdict(t)) => return Ok(Redated::InProcess(t)),
                Ok(_) => {
                    return Ok(Redated::InProcess(Transmission {
                        status_description: "unexpected answer to GetStatus".into(),
                        ..Transmission::default()
                    }))
                }
                Err(failure) => return Ok(Redated::Unasked(failure)),
            }
        }
        let previous_date = doc.issue_date;
        let (new, files) = match build_again(self, doc.clone(), Again::Now).await {
            Ok(built) => built,
            Err(super::error::IssueError::Invalid { message, .. }) => {
                return Ok(Redated::Unbuildable(format!(
                    "it could not be dated {} for its send (annex 1.9, one day per send): {message}",
                    today()
                )))
            }
            Err(e) => return Err(TransmitError::Redate(e.to_string())),
        };
        let entry = HistoryEntry {
            at: Utc::now(),
            actor: actor.into(),
            event: "redated".into(),
            from_state: Some(doc.state),
            to_state: Some(new.state),
            data: json!({
                "code": new.code,
                "previous_code": previous,
                "issue_date": new.issue_date,
                "previous_issue_date": previous_date,
            }),
        };
        let (_, files) = self
            .store
            .commit_document(new.clone(), files, None, entry)
            .await?;
        // The new code may be accepted once sent: its record must outlive
        // a power cut, or a restart would date the document yet again.
        self.store.sync_power_safe().await?;
        super::failpoint::stop_here("redated");
        *doc = new;
        Ok(Redated::Ready(files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(valid: bool, errors: &[&str]) -> Transmission {
        Transmission {
            is_valid: valid,
            errors: errors.iter().map(|e| e.to_string()).collect(),
            ..Transmission::default()
        }
    }

    #[test]
    fn only_a_code_the_authority_does_not_have_may_be_replaced() {
        let status = |code: &str| Transmission {
            status_code: code.into(),
            ..answer(false, &[])
        };
        assert!(absent(&status("66")));
        for other in ["98", "", "00", "99"] {
            assert!(!absent(&status(other)), "{other}");
        }
    }

    #[test]
    fn a_refusal_for_the_date_is_told_from_other_refusals() {
        for rule in RULES {
            let t = answer(
                false,
                &[&format!(
                    "Regla: {rule}, Rechazo: La fecha de generación ..."
                )],
            );
            assert!(refused_for_its_date(&t), "{rule}");
        }
        assert!(!refused_for_its_date(&answer(
            false,
            &["Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente."]
        )));
        assert!(!refused_for_its_date(&answer(
            false,
            &["Regla: FAD09a, Rechazo: Fecha de emisión anterior a la fecha de inicio."]
        )));
        assert!(!refused_for_its_date(&answer(true, &[])));
    }
}
