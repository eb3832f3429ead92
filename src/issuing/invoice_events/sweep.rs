//! The sweep of events on each company's own invoices (decisions.md §4
//! "WebSocket": `factura:evento`): it asks the authority (`GetStatusEvent`)
//! which events are registered on the company's sales invoices (export and
//! contingency ones too) issued within `[events_sweep] window_days` and not
//! yet known claimed or accepted, stores each new one on the invoice's
//! record once, and emits `factura:evento` for each registered by someone
//! else, on the invoice's rooms and its company's webhook.
//!
//! Pacing: at most `per_second` calls a second, all companies together,
//! each in the transmitter's background lane (it starts only when no
//! transmission or sale waits, and leaves them a start and a slot). The
//! companies and environments take turns, one invoice each, so a company
//! with many invoices does not hold back another's.
//!
//! Once: an event is stored (durable) before it is emitted, and an event
//! already on the record is never emitted again, whatever restarts or
//! sweeps come between; a crash between the two loses that one emission,
//! never repeats it. Where each company's sweep stands (the last invoice
//! asked about) is kept in the settings (`eventos_barrido:{company}:{env}`),
//! so a restart goes on from there instead of asking again from the top.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveDate, Utc};
use emisor_actors::panic_boundary::guarded;
use emisor_store::{
    state, AuthorityEvent, Company, DocumentRecord, Environment, Family, HistoryEntry, ListQuery,
    ServiceTask, StoreResult, EVENT_STANDING_KEY,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::authority::port::{AuthorityRequest, AuthorityResponse};
use crate::authority::{InvoiceEvents, RegisteredEvent};
use crate::config::EventsSweepSettings;
use crate::engine::model::DocumentKind;
use crate::issuing::kind::invoicing_kind;
use crate::issuing::Issuing;

/// The history actor of what the sweep writes.
pub const ACTOR: &str = "events_sweep";

/// Standings of an invoice from its events (the list key `evento`).
pub const CLAIMED: &str = "reclamada";
pub const ACCEPTED: &str = "aceptada";
pub const ACKNOWLEDGED: &str = "acuse_sin_aceptacion";
pub const STANDINGS: [&str; 3] = [CLAIMED, ACCEPTED, ACKNOWLEDGED];

/// Invoices read from the index at a time.
const PAGE: u32 = 100;

/// Where a company's sweep is saved after this many invoices.
const SAVE_EVERY: u32 = 20;

/// Why an invoice was not asked about, or its answer not used.
#[derive(Debug, thiserror::Error)]
enum AskError {
    /// The authority cannot be reached now (breaker open, transport):
    /// the sweep stops until the next one.
    #[error("the authority is unavailable: {0}")]
    Unavailable(String),
    /// The company cannot sign a call (no certificate…): its invoices
    /// wait for the next sweep.
    #[error("the company cannot ask: {0}")]
    Company(String),
    #[error("{0}")]
    Store(#[from] emisor_store::StoreError),
}

/// The standing the authority's events give an invoice: claimed (031);
/// accepted, expressly (033) or tacitly (034), or as the registry's
/// events imply (035 aval, 036 registration as a title, 037-039
/// endorsements: the authority's codes, protocol.md 7.5); acknowledged (a
/// receipt, 030, or the goods', 032) and neither of those; else none.
pub fn standing<'a>(codes: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    let mut acknowledged = false;
    let mut accepted = false;
    for code in codes {
        match code {
            "031" => return Some(CLAIMED),
            "033" | "034" | "035" | "036" | "037" | "038" | "039" => accepted = true,
            "030" | "032" => acknowledged = true,
            _ => {}
        }
    }
    if accepted {
        Some(ACCEPTED)
    } else if acknowledged {
        Some(ACKNOWLEDGED)
    } else {
        None
    }
}

/// Whether the sweep is done with an invoice: nothing the buyer can still
/// register changes what the company must know (spec 4.6).
fn settled(doc: &DocumentRecord) -> bool {
    matches!(
        doc.list_keys.get(EVENT_STANDING_KEY).map(String::as_str),
        Some(CLAIMED | ACCEPTED)
    )
}

/// Whether the sweep asks about `doc` at all: an accepted sales invoice
/// with its CUFE.
fn swept(doc: &DocumentRecord) -> bool {
    doc.state == state::ACCEPTED
        && doc.code.is_some()
        && invoicing_kind(doc).is_some_and(DocumentKind::is_sales_invoice)
}

/// The listed events not stored yet, as they are stored.
pub fn new_events(stored: &[AuthorityEvent], listed: &[RegisteredEvent]) -> Vec<AuthorityEvent> {
    let now = Utc::now();
    let mut out: Vec<AuthorityEvent> = Vec::new();
    for e in listed {
        let event = AuthorityEvent {
            code: e.code.clone(),
            name: e.description.clone(),
            date: e.date.clone(),
            time: e.time.clone(),
            number: e.number.clone(),
            cude: e.cude.clone(),
            issuer_nit: e.issuer_nit.clone(),
            recipient_nit: e.recipient_nit.clone(),
            learned_at: now,
        };
        let known = |s: &AuthorityEvent| s.identity() == event.identity();
        if !stored.iter().any(known) && !out.iter().any(known) {
            out.push(event);
        }
    }
    out
}

/// What `factura:evento` carries.
pub fn payload(doc: &DocumentRecord, e: &AuthorityEvent) -> serde_json::Value {
    json!({
        "id": doc.id,
        "prefijo": doc.prefix,
        "numero": doc.number.to_string(),
        "cufe": doc.code,
        "codigo_evento": e.code,
        "nombre_evento": e.name,
        "fecha_evento": e.date,
        "hora_evento": e.time,
        "numero_evento": e.number,
        "cude_evento": e.cude,
        "nit_emisor": e.issuer_nit,
        "nit_receptor": e.recipient_nit,
    })
}

/// Where a company's sweep in one environment stands: the last invoice
/// asked about (the index lists newest first: by issue day, then id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Cursor {
    day: NaiveDate,
    id: u64,
}

impl Cursor {
    /// Whether `doc` comes after the cursor in the index's order.
    fn before(&self, doc: &DocumentRecord) -> bool {
        doc.issue_date < self.day || (doc.issue_date == self.day && doc.id < self.id)
    }
}

fn cursor_key(company: u64, environment: Environment) -> String {
    format!("eventos_barrido:{company}:{}", environment.authority_code())
}

/// One company's invoices in one environment, read page by page.
struct Lane {
    company: Company,
    environment: Environment,
    /// Where the sweep resumes (saved) and has come to (in memory).
    cursor: Option<Cursor>,
    /// The last issue day read: the saved cursor's, fixed for the whole
    /// pass so that its pages are pages of one list.
    to: Option<NaiveDate>,
    page: u32,
    buffer: VecDeque<DocumentRecord>,
    exhausted: bool,
    since_saved: u32,
    target: Option<crate::authority::port::AuthorityTarget>,
}

/// Starts the sweep on the current runtime (none when `per_second` is 0).
pub fn start(issuing: Arc<Issuing>) {
    let settings = issuing.settings.events_sweep.clone();
    if settings.per_second <= 0.0 {
        return;
    }
    let sweep = Sweep {
        issuing,
        spacing: Duration::from_secs_f64(1.0 / settings.per_second),
        settings,
        last_call: None,
        unavailable: false,
    };
    actix_web::rt::spawn(sweep.run());
}

struct Sweep {
    issuing: Arc<Issuing>,
    settings: EventsSweepSettings,
    spacing: Duration,
    last_call: Option<tokio::time::Instant>,
    /// Set when the authority could not be reached: the pass ends.
    unavailable: bool,
}

impl Sweep {
    async fn run(mut self) {
        let pause = Duration::from_secs(self.settings.interval_s.max(1));
        loop {
            // Once per service: the node holding the task's lease sweeps,
            // from the cursors every node reads from the store.
            if !self.holds().await {
                tokio::time::sleep(pause).await;
                continue;
            }
            // Behind a panic boundary: one bad record never stops the sweep.
            match guarded(|| self.pass()).await {
                Ok(Ok(())) => {
                    metrics::gauge!(crate::metrics::EVENTS_SWEEP_LAST_PASS)
                        .set(Utc::now().timestamp() as f64);
                }
                Ok(Err(e)) => tracing::error!(error = %e, "events sweep: a pass failed"),
                Err(panic) => tracing::error!(%panic, "events sweep: a pass panicked"),
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Whether this node holds the sweep's lease (always, on sled).
    async fn holds(&self) -> bool {
        self.issuing
            .store
            .hold_service_task(ServiceTask::EventsSweep)
            .await
            .runs()
    }

    /// One sweep of every company's invoices in both environments, the
    /// lanes taking turns.
    async fn pass(&mut self) -> StoreResult<()> {
        let store = self.issuing.store.clone();
        let mut lanes = Vec::new();
        for company in store.companies().await? {
            for environment in [Environment::Test, Environment::Live] {
                let cursor = store
                    .setting(cursor_key(company.id, environment))
                    .await?
                    .and_then(|text| serde_json::from_str::<Cursor>(&text).ok());
                lanes.push(Lane {
                    company: company.clone(),
                    environment,
                    cursor,
                    to: cursor.map(|c| c.day),
                    page: 1,
                    buffer: VecDeque::new(),
                    exhausted: false,
                    since_saved: 0,
                    target: None,
                });
            }
        }
        let today = crate::clock::colombia_now().date_naive();
        let from = today - chrono::Days::new(u64::from(self.settings.window_days));
        self.unavailable = false;
        while !lanes.is_empty() {
            if self.unavailable {
                // Each company goes on from where it stands next time.
                for lane in &lanes {
                    self.save(lane).await?;
                }
                return Ok(());
            }
            let mut i = 0;
            while !self.unavailable {
                let Some(lane) = lanes.get_mut(i) else { break };
                match self.next(lane, from, today).await? {
                    Some(doc) => {
                        self.ask(lane, doc).await;
                        i += 1;
                        // A long pass stops once another node holds the
                        // sweep: it goes on from the saved cursors.
                        if !self.holds().await {
                            return Ok(());
                        }
                    }
                    None => {
                        // A finished sweep starts from the top next time.
                        if lane.cursor.is_some() {
                            let key = cursor_key(lane.company.id, lane.environment);
                            store.put_setting(key, "".into()).await?;
                        }
                        lanes.remove(i);
                    }
                }
            }
        }
        Ok(())
    }

    /// The lane's next invoice to ask about, read from the index.
    async fn next(
        &self,
        lane: &mut Lane,
        from: NaiveDate,
        today: NaiveDate,
    ) -> StoreResult<Option<DocumentRecord>> {
        loop {
            if let Some(doc) = lane.buffer.pop_front() {
                let after_cursor = lane.cursor.is_none_or(|c| c.before(&doc));
                if after_cursor && swept(&doc) && !settled(&doc) {
                    return Ok(Some(doc));
                }
                continue;
            }
            if lane.exhausted {
                return Ok(None);
            }
            let to = lane.to.map_or(today, |d| d.min(today));
            let page = self
                .issuing
                .store
                .list_documents(ListQuery {
                    company_id: lane.company.id,
                    environment: lane.environment,
                    family: Family::Invoices,
                    from: Some(from),
                    to: Some(to),
                    states: vec![state::ACCEPTED],
                    keys: Vec::new(),
                    page: lane.page,
                    limit: PAGE,
                })
                .await?;
            lane.page += 1;
            lane.exhausted = page.items.len() < PAGE as usize;
            lane.buffer.extend(page.items);
        }
    }

    /// Asks about one invoice; stores and emits what is new. A failure
    /// leaves the invoice for the next sweep.
    async fn ask(&mut self, lane: &mut Lane, doc: DocumentRecord) {
        let id = doc.id;
        let company = lane.company.id;
        match guarded(|| self.try_ask(lane, doc)).await {
            Ok(Ok(())) => {}
            Ok(Err(AskError::Unavailable(e))) => {
                tracing::info!(error = %e, "events sweep: paused until the next sweep");
                self.unavailable = true;
            }
            Ok(Err(AskError::Company(e))) => {
                tracing::warn!(company, error = %e, "events sweep: the company's invoices wait");
                lane.buffer.clear();
                lane.exhausted = true;
            }
            Ok(Err(e)) => tracing::warn!(company, document = id, error = %e, "events sweep"),
            Err(panic) => tracing::error!(company, document = id, %panic, "events sweep panicked"),
        }
    }

    async fn try_ask(&mut self, lane: &mut Lane, doc: DocumentRecord) -> Result<(), AskError> {
        let Some(cufe) = doc.code.clone() else {
            return Ok(());
        };
        let target = match &lane.target {
            Some(t) => t.clone(),
            None => {
                let t = self
                    .issuing
                    .target(lane.company.id, lane.environment)
                    .await
                    .map_err(|e| AskError::Company(e.to_string()))?;
                lane.target = Some(t.clone());
                t
            }
        };
        if let Some(last) = self.last_call {
            tokio::time::sleep_until(last + self.spacing).await;
        }
        self.last_call = Some(tokio::time::Instant::now());
        let answer = self
            .issuing
            .call_in_background(
                lane.company.id,
                target,
                AuthorityRequest::GetStatusEvent { cufe },
            )
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(f) if f.is_retryable() => return Err(AskError::Unavailable(f.to_string())),
            Err(f) => {
                // A refusal of this call alone: the next sweep asks again.
                tracing::warn!(document = doc.id, error = %f, "events sweep: GetStatusEvent failed");
                return Ok(());
            }
        };
        metrics::counter!(crate::metrics::EVENTS_SWEEP_ASKED).increment(1);
        lane.cursor = Some(Cursor {
            day: doc.issue_date,
            id: doc.id,
        });
        lane.since_saved += 1;
        if lane.since_saved >= SAVE_EVERY {
            lane.since_saved = 0;
            self.save(lane).await?;
        }
        let listed = match answer {
            AuthorityResponse::InvoiceEvents(InvoiceEvents {
                status_code,
                events,
                ..
            }) if status_code == InvoiceEvents::LISTED => events,
            AuthorityResponse::InvoiceEvents(InvoiceEvents { status_code, .. })
                if status_code == InvoiceEvents::NO_EVENTS =>
            {
                return Ok(())
            }
            // An invoice the authority does not know (66) or not as an
            // invoice (68), or one still in process (98): nothing to learn
            // now; a mismatch with the authority is reconciliation's.
            other => {
                tracing::debug!(document = doc.id, answer = ?other, "events sweep: no events listed");
                return Ok(());
            }
        };
        if new_events(&doc.authority_events, &listed).is_empty() {
            return Ok(());
        }
        Ok(self.learn(&lane.company, doc.id, &listed).await?)
    }

    async fn save(&self, lane: &Lane) -> StoreResult<()> {
        let Some(cursor) = lane.cursor else {
            return Ok(());
        };
        let text = serde_json::to_string(&cursor).unwrap_or_default();
        self.issuing
            .store
            .put_setting(cursor_key(lane.company.id, lane.environment), text)
            .await
    }

    /// Stores the new events on the invoice's record (read again just
    /// before), durable, then emits those registered by someone else.
    async fn learn(
        &self,
        company: &Company,
        id: u64,
        listed: &[RegisteredEvent],
    ) -> StoreResult<()> {
        let store = &self.issuing.store;
        let Some(mut doc) = store.document(id).await? else {
            return Ok(());
        };
        let new = new_events(&doc.authority_events, listed);
        if new.is_empty() {
            return Ok(());
        }
        doc.authority_events.extend(new.iter().cloned());
        match standing(doc.authority_events.iter().map(|e| e.code.as_str())) {
            Some(s) => doc.list_keys.insert(EVENT_STANDING_KEY.into(), s.into()),
            None => doc.list_keys.remove(EVENT_STANDING_KEY),
        };
        doc.updated_at = Utc::now();
        let history = HistoryEntry {
            at: Utc::now(),
            actor: ACTOR.into(),
            event: "tax_events".into(),
            from_state: None,
            to_state: None,
            data: json!({ "codigos": new.iter().map(|e| e.code.as_str()).collect::<Vec<_>>() }),
        };
        store.update_document(doc.clone(), history).await?;
        metrics::counter!(crate::metrics::EVENTS_SWEEP_LEARNED).increment(new.len() as u64);
        for e in &new {
            if e.issuer_nit.as_deref() == Some(company.nit.as_str()) {
                continue;
            }
            tracing::info!(company = company.id, document = id, code = %e.code, "invoice event learned");
            crate::issuing::events::invoice_event(&self.issuing, &doc, payload(&doc, e)).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(code: &str, cude: &str) -> RegisteredEvent {
        RegisteredEvent {
            code: code.into(),
            description: format!("evento {code}"),
            date: "2026-11-28".into(),
            time: "10:00:00-05:00".into(),
            number: format!("EV{code}"),
            cude: cude.into(),
            issuer_nit: Some("800197268".into()),
            recipient_nit: Some("900000001".into()),
        }
    }

    #[test]
    fn a_claim_wins_then_an_acceptance_then_an_acknowledgement() {
        assert_eq!(standing([]), None);
        assert_eq!(standing(["030"]), Some(ACKNOWLEDGED));
        assert_eq!(standing(["030", "032"]), Some(ACKNOWLEDGED));
        assert_eq!(standing(["030", "032", "031"]), Some(CLAIMED));
        assert_eq!(standing(["030", "032", "033"]), Some(ACCEPTED));
        assert_eq!(standing(["030", "032", "034", "036"]), Some(ACCEPTED));
        assert_eq!(standing(["040"]), None);
    }

    #[test]
    fn only_events_not_stored_are_new_and_each_once() {
        let a = listed("030", "a");
        let b = listed("032", "b");
        let first = new_events(&[], &[a.clone(), a.clone()]);
        assert_eq!(first.len(), 1);
        let again = new_events(&first, &[a.clone(), b]);
        assert_eq!(
            again.iter().map(|e| e.code.as_str()).collect::<Vec<_>>(),
            ["032"]
        );
        // Without a CUDE, the code and number tell them apart.
        let plain = new_events(&[], &[listed("030", ""), listed("032", "")]);
        assert_eq!(plain.len(), 2);
        assert!(new_events(&plain, &[listed("030", "")]).is_empty());
    }

    #[test]
    fn the_cursor_goes_newest_first() {
        let day = NaiveDate::from_ymd_opt(2026, 11, 20).unwrap();
        let c = Cursor { day, id: 50 };
        let doc = |d: NaiveDate, id: u64| -> DocumentRecord {
            serde_json::from_value(json!({
                "id": id, "company_id": 1, "environment": "test", "document_type": 1,
                "resolution_id": 1, "prefix": "SETP", "number": id, "state": 2,
                "issue_date": d, "created_at": "2026-11-20T00:00:00Z",
                "updated_at": "2026-11-20T00:00:00Z",
            }))
            .unwrap()
        };
        assert!(c.before(&doc(day, 49)));
        assert!(!c.before(&doc(day, 50)));
        assert!(!c.before(&doc(day.succ_opt().unwrap(), 10)));
        assert!(c.before(&doc(day.pred_opt().unwrap(), 90)));
    }
}
