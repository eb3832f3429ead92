//! Warnings before anything runs out (issue "warnings"; decisions.md
//! "Operator events"): for each company, the numbers left in each of its
//! resolutions (and, from their recent rate, the days until they run out),
//! each resolution's validity end, its certificate's expiry and the month's
//! plan use, judged against `[warnings]` ([`evaluate`]).
//!
//! When one crosses its threshold, `operador:alerta` goes to the operator
//! (room and webhook) and to the company's room and webhook, once per
//! crossing: the crossings raised are stored (setting `alertas:{id}`, so a
//! restart does not raise them again), written before the event is sent,
//! and forgotten once the warning is no longer in force (a new certificate,
//! a raised limit), so that a later crossing is raised again.
//!
//! When: the watcher ([`start`]) checks every company at start and every
//! `check_interval_s`; between those, a document that takes one of the
//! last numbers of a resolution has its company checked at once. The
//! issuing path only compares its number with the range (no store read);
//! the store's reads happen on the watcher's task.

pub mod evaluate;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Datelike, Utc};
use emisor_actors::panic_boundary::guarded;
use emisor_actors::ws_hub::{Broadcast, Room};
use emisor_store::{
    AsyncStore, Company, CompanyId, Environment, Holding, NumberTaken, ServiceTask, StoreResult,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use self::evaluate::{evaluate, Alertas, CompanyFacts, Entry, ResolutionFacts, KINDS};
use super::{OperatorEvents, ALERT};
use crate::config::WarningSettings;
use crate::issuing::events::scope;

/// A number taken waits here for the watcher; past this the check waits
/// for the next periodic one (the issuing path never waits).
const NUMBERS_QUEUE: usize = 1024;

/// How often a resolution's next number is sampled for its rate.
const SAMPLE_EVERY_S: i64 = 3600;

/// What is remembered of a company (stored as JSON): the crossings raised
/// and when, and samples `(unix seconds, next number)` of each resolution
/// over the rate's window. A data dir without it has raised nothing yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Remembered {
    pub raised: BTreeMap<String, DateTime<Utc>>,
    pub samples: BTreeMap<u64, Vec<(i64, u64)>>,
}

fn setting_key(company: CompanyId) -> String {
    format!("alertas:{company}")
}

/// The company's remembered warnings (empty when none were stored, or
/// when what is stored cannot be read: then they are raised again).
pub async fn remembered(store: &AsyncStore, company: CompanyId) -> StoreResult<Remembered> {
    let Some(text) = store.setting(setting_key(company)).await? else {
        return Ok(Remembered::default());
    };
    Ok(serde_json::from_str(&text).unwrap_or_else(|e| {
        tracing::warn!(company, error = %e, "unreadable remembered warnings; starting afresh");
        Remembered::default()
    }))
}

/// `YYYYMM` of a day.
fn period_of(day: chrono::NaiveDate) -> u32 {
    day.year() as u32 * 100 + day.month()
}

/// Reads what [`evaluate`] needs for `company`.
async fn facts(
    store: &AsyncStore,
    company: &Company,
    remembered: &Remembered,
    today: chrono::NaiveDate,
    now: DateTime<Utc>,
) -> StoreResult<CompanyFacts> {
    let mut resolutions = Vec::new();
    for r in store.resolutions(company.id).await? {
        let next = store.next_number(r.clone()).await?;
        let window_start = now.timestamp() - evaluate::RATE_WINDOW_S;
        let earlier = remembered
            .samples
            .get(&r.id)
            .and_then(|s| s.iter().find(|(at, _)| *at >= window_start).copied());
        resolutions.push(ResolutionFacts {
            resolution: r,
            next,
            earlier,
        });
    }
    let period = period_of(today);
    Ok(CompanyFacts {
        company: company.id,
        resolutions,
        certificate: store.certificate(company.id).await?,
        period,
        used: store.monthly_usage(company.id, period).await?,
        limit: company
            .monthly_document_limit
            .map(u64::from)
            .unwrap_or(crate::issuing::issue::DEFAULT_MONTHLY_LIMIT),
    })
}

/// The company's warnings now (its admin answer's `alertas`).
pub async fn current(
    store: &AsyncStore,
    settings: &WarningSettings,
    company: &Company,
) -> StoreResult<Alertas> {
    let remembered = remembered(store, company.id).await?;
    let now = crate::clock::now();
    let today = crate::clock::colombia_now().date_naive();
    let facts = facts(store, company, &remembered, today, now).await?;
    Ok(evaluate(&facts, settings, today, now))
}

/// Starts the watcher on the current runtime and hooks it to the numbers
/// issuing takes.
pub fn start(operator: OperatorEvents) {
    let issuing = operator.issuing().clone();
    let settings = issuing.settings.warnings.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<NumberTaken>(NUMBERS_QUEUE);
    let percent = settings.percent_left;
    issuing.store.watch_numbers(Arc::new(move |n: NumberTaken| {
        if evaluate::number_may_warn(n.from, n.to, n.number, percent) {
            let _ = tx.try_send(n);
        }
    }));
    let watcher = Watcher {
        operator,
        settings,
        companies: HashMap::new(),
        in_warning: HashMap::new(),
    };
    actix_web::rt::spawn(watcher.run(rx));
}

struct Watcher {
    operator: OperatorEvents,
    settings: WarningSettings,
    /// Remembered warnings of the companies checked so far (this task is
    /// their only writer).
    companies: HashMap<CompanyId, Remembered>,
    /// Kinds in warning per company, for `/metrics`.
    in_warning: HashMap<CompanyId, BTreeSet<&'static str>>,
}

impl Watcher {
    async fn run(mut self, mut numbers: tokio::sync::mpsc::Receiver<NumberTaken>) {
        let every = Duration::from_secs(self.settings.check_interval_s.max(1));
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                taken = numbers.recv() => match taken {
                    Some(n) => {
                        if !self.hold().await {
                            continue;
                        }
                        let key = format!("{}:{}", evaluate::NUMBERING, n.resolution);
                        let raised = self
                            .companies
                            .get(&n.company)
                            .is_some_and(|r| r.raised.contains_key(&key));
                        if !raised {
                            self.check(n.company).await;
                        }
                    }
                    None => return,
                },
                _ = ticks.tick() => {
                    if self.hold().await {
                        self.check_all().await;
                    }
                }
            }
        }
    }

    /// Whether this node raises the warnings now (once per service: the
    /// node holding the task's lease). What is remembered in memory is
    /// this task's only while it holds the lease: read again from the
    /// store once it is taken, since another node may have raised
    /// warnings meanwhile.
    async fn hold(&mut self) -> bool {
        let holding = self
            .operator
            .issuing()
            .store
            .hold_service_task(ServiceTask::Warnings)
            .await;
        if holding != Holding::Kept {
            self.companies.clear();
        }
        if !holding.runs() {
            // The holder reports the companies in warning.
            self.in_warning.clear();
            self.count();
        }
        holding.runs()
    }

    async fn check_all(&mut self) {
        let companies = match self.operator.issuing().store.companies().await {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "warnings: could not list the companies");
                return;
            }
        };
        for company in companies {
            self.check_company(&company).await;
        }
    }

    async fn check(&mut self, id: CompanyId) {
        match self.operator.issuing().store.company(id).await {
            Ok(Some(company)) => self.check_company(&company).await,
            Ok(None) => {}
            Err(e) => tracing::error!(company = id, error = %e, "warnings: reading the company"),
        }
    }

    /// Evaluates one company; raises the crossings not raised yet (stored
    /// first), forgets those no longer in force, samples its numbering.
    async fn check_company(&mut self, company: &Company) {
        // Behind a panic boundary: one company's records never stop the
        // watcher of every other.
        let failed = match guarded(|| self.try_check(company)).await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("panicked: {panic}"),
        };
        // Read again from the store next time.
        self.companies.remove(&company.id);
        tracing::error!(company = company.id, error = %failed, "warnings: checking the company");
    }

    async fn try_check(&mut self, company: &Company) -> StoreResult<()> {
        let store = self.operator.issuing().store.clone();
        let mut remembered = match self.companies.remove(&company.id) {
            Some(r) => r,
            None => remembered(&store, company.id).await?,
        };
        let before = remembered.clone();
        let now = crate::clock::now();
        let today = crate::clock::colombia_now().date_naive();
        let facts = facts(&store, company, &remembered, today, now).await?;
        let alertas = evaluate(&facts, &self.settings, today, now);
        let entries = alertas.entries();

        let in_force: BTreeSet<&str> = entries.iter().map(|e| e.key.as_str()).collect();
        remembered
            .raised
            .retain(|k, _| in_force.contains(k.as_str()));
        let new: Vec<&Entry> = entries
            .iter()
            .filter(|e| !remembered.raised.contains_key(&e.key))
            .collect();
        for e in &new {
            remembered.raised.insert(e.key.clone(), now);
        }
        sample(&mut remembered, &facts, now.timestamp());

        if remembered != before {
            let text = serde_json::to_string(&remembered).unwrap_or_default();
            // Durable before anything is sent: a crash after it never
            // raises the same crossing twice.
            store.put_setting(setting_key(company.id), text).await?;
        }
        self.companies.insert(company.id, remembered);
        for e in new {
            self.raise(company, e, now).await;
        }
        self.in_warning
            .insert(company.id, entries.iter().map(|e| e.kind).collect());
        self.count();
        Ok(())
    }

    /// `operador:alerta` to the operator, and to the company's webhook
    /// and rooms: production's for its own resolutions (they number
    /// production documents), both environments' for its certificate and plan.
    async fn raise(&self, company: &Company, e: &Entry, at: DateTime<Utc>) {
        let data = json!({
            "id_empresa": company.id,
            "nit": company.nit,
            "razon_social": company.name,
            "tipo": e.kind,
            "clave": e.key,
            "detalle": e.detail,
            "fecha": at.to_rfc3339(),
        });
        tracing::warn!(company = company.id, kind = e.kind, key = %e.key, "warning raised");
        let issuing = self.operator.issuing();
        crate::issuing::webhooks::enqueue(issuing, company.id, ALERT, &data).await;
        let production = Room::Company(scope(company.id, Environment::Live));
        let mut rooms = vec![production];
        if e.kind == evaluate::CERTIFICATE || e.kind == evaluate::PLAN {
            rooms.push(Room::Company(scope(company.id, Environment::Test)));
        }
        issuing
            .hub
            .addr()
            .do_send(Broadcast::to_rooms(rooms, ALERT, data.clone()));
        self.operator.send(ALERT, data).await;
    }

    /// `/metrics`: companies in warning by kind (never one company's figures).
    fn count(&self) {
        for kind in KINDS {
            let n = self
                .in_warning
                .values()
                .filter(|k| k.contains(kind))
                .count();
            metrics::gauge!(crate::metrics::COMPANIES_IN_WARNING, "tipo" => kind).set(n as f64);
        }
    }
}

/// Keeps a sample of each current resolution's next number an hour or more
/// after the last, over the rate's window.
fn sample(remembered: &mut Remembered, facts: &CompanyFacts, now_s: i64) {
    let current: BTreeSet<u64> = facts.resolutions.iter().map(|f| f.resolution.id).collect();
    remembered.samples.retain(|id, _| current.contains(id));
    for f in &facts.resolutions {
        let samples = remembered.samples.entry(f.resolution.id).or_default();
        samples.retain(|(at, _)| *at >= now_s - evaluate::RATE_WINDOW_S);
        if samples
            .last()
            .is_none_or(|(at, _)| now_s - at >= SAMPLE_EVERY_S)
        {
            samples.push((now_s, f.next));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_stored_or_a_part_stored_is_nothing_raised() {
        // A data dir of the previous format has no `alertas:{id}`: the
        // default; a value with one part only reads the other as empty.
        assert_eq!(Remembered::default().raised.len(), 0);
        let partial: Remembered =
            serde_json::from_str(r#"{"raised": {"plan:202611": "2026-11-28T12:00:00Z"}}"#).unwrap();
        assert!(partial.raised.contains_key("plan:202611"));
        assert!(partial.samples.is_empty());
        let round: Remembered =
            serde_json::from_str(&serde_json::to_string(&partial).unwrap()).unwrap();
        assert_eq!(round, partial);
    }
}
