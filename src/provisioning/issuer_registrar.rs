//! Demo companies register themselves with the simulator they use
//! (decisions.md §5 "Simulator issuers"): `PUT /__sim/issuers` over HTTP, to
//! the in-process simulator or a separate `emisor tax-sim` alike. A
//! company is queued when it is made, at each start and after every change
//! to its software or resolutions; a simulator that does not answer is
//! tried again with exponential backoff until it does, so one started after
//! the server still learns every demo company.
//!
//! One task owns the queue: requests that arrive together are coalesced
//! (a company is sent once, with what the store holds at that moment).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use emisor_store::CompanyId;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::authority_registration::Registration;
use super::ProvisioningError;

/// Looks up what to register for a company and where; `None` when nothing
/// is (not a demo company, or gone). Runs on a blocking thread.
pub type Lookup =
    Arc<dyn Fn(CompanyId) -> Result<Option<Registration>, ProvisioningError> + Send + Sync>;

/// Retry timing and the bound of each call.
#[derive(Debug, Clone, Copy)]
pub struct RegistrarTiming {
    /// Delay after the first failure; doubled after each further one.
    pub first_retry: Duration,
    /// Longest delay between two attempts.
    pub max_retry: Duration,
    /// Bound of one `PUT`, and of a caller's wait for the first attempt.
    pub timeout: Duration,
}

impl RegistrarTiming {
    /// 1 s doubling up to 60 s, scaled by `[resilience] time_scale` like
    /// every other retry, so tests see it land in milliseconds.
    pub fn scaled(time_scale: f64) -> Self {
        let scale = |s: f64| Duration::from_secs_f64((s * time_scale).max(0.0));
        let first_retry = scale(1.0).max(Duration::from_millis(10));
        RegistrarTiming {
            first_retry,
            max_retry: scale(60.0).max(first_retry),
            timeout: Duration::from_secs(5),
        }
    }

    /// The wait after `failures` failed attempts in a row.
    pub fn delay(&self, failures: u32) -> Duration {
        let doubled = self
            .first_retry
            .saturating_mul(1u32 << failures.saturating_sub(1).min(16));
        doubled.min(self.max_retry)
    }
}

struct Request {
    companies: Vec<CompanyId>,
    /// Told whether the first attempt reached every simulator.
    done: Option<oneshot::Sender<bool>>,
}

/// Handle of the registration task; cheap to clone, `Send`.
#[derive(Clone, Debug)]
pub struct IssuerRegistrar {
    tx: mpsc::UnboundedSender<Request>,
    timeout: Duration,
}

impl IssuerRegistrar {
    /// Starts the task on the current actix arbiter (its HTTP client, awc,
    /// is not `Send`). It ends when every handle is dropped.
    pub fn start(lookup: Lookup, timing: RegistrarTiming) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        actix_web::rt::spawn(run(rx, lookup, timing));
        IssuerRegistrar {
            tx,
            timeout: timing.timeout,
        }
    }

    /// Queues companies without waiting.
    pub fn queue(&self, companies: Vec<CompanyId>) {
        let _ = self.tx.send(Request {
            companies,
            done: None,
        });
    }

    /// Queues companies and waits (boundedly) for their first attempt, so
    /// an answer that says "created" comes after the simulator knows the
    /// company. True when every simulator took every company; on false the
    /// task keeps trying in the background.
    pub async fn register(&self, companies: Vec<CompanyId>) -> bool {
        let (done, answer) = oneshot::channel();
        let request = Request {
            companies,
            done: Some(done),
        };
        if self.tx.send(request).is_err() {
            return false;
        }
        // Each company is one PUT per simulator, each bounded by `timeout`.
        let bound = self.timeout.saturating_mul(3);
        matches!(tokio::time::timeout(bound, answer).await, Ok(Ok(true)))
    }
}

/// Failed companies and when each is due again.
#[derive(Debug, Clone, Copy)]
struct Retry {
    failures: u32,
    due: Instant,
}

async fn run(mut rx: mpsc::UnboundedReceiver<Request>, lookup: Lookup, timing: RegistrarTiming) {
    let http = awc::Client::builder()
        .disable_redirects()
        .timeout(timing.timeout)
        .finish();
    let mut retries: BTreeMap<CompanyId, Retry> = BTreeMap::new();
    loop {
        let next_due = retries.values().map(|r| r.due).min();
        let first = match next_due {
            Some(due) => tokio::select! {
                r = rx.recv() => match r { Some(r) => Some(r), None => return },
                _ = tokio::time::sleep_until(due) => None,
            },
            None => match rx.recv().await {
                Some(r) => Some(r),
                None => return,
            },
        };
        // Everything already waiting goes in the same round.
        let mut requests: Vec<Request> = first.into_iter().collect();
        while let Ok(r) = rx.try_recv() {
            requests.push(r);
        }
        let now = Instant::now();
        let mut round: BTreeSet<CompanyId> = requests
            .iter()
            .flat_map(|r| r.companies.iter().copied())
            .collect();
        round.extend(
            retries
                .iter()
                .filter(|(_, r)| r.due <= now)
                .map(|(id, _)| *id),
        );

        let mut landed = BTreeMap::new();
        for company in round {
            let outcome = attempt(&http, &lookup, company).await;
            let ok = outcome.is_ok();
            if let Err(error) = outcome {
                let failures = retries.get(&company).map_or(0, |r| r.failures) + 1;
                let delay = timing.delay(failures);
                retries.insert(
                    company,
                    Retry {
                        failures,
                        due: Instant::now() + delay,
                    },
                );
                // Said once; the retries that follow are quiet.
                if failures == 1 {
                    tracing::warn!(company, %error, "demo company not registered with its simulator; trying again in the background");
                } else {
                    tracing::debug!(company, failures, ?delay, %error, "simulator registration retry");
                }
            } else if let Some(r) = retries.remove(&company) {
                tracing::info!(
                    company,
                    failures = r.failures,
                    "demo company registered with its simulator"
                );
            }
            landed.insert(company, ok);
        }
        for r in requests {
            if let Some(done) = r.done {
                let all = r
                    .companies
                    .iter()
                    .all(|c| landed.get(c).copied().unwrap_or(false));
                let _ = done.send(all);
            }
        }
    }
}

/// One company to every simulator it uses (nothing to send counts as
/// done); the error says what failed.
async fn attempt(http: &awc::Client, lookup: &Lookup, company: CompanyId) -> Result<(), String> {
    let find = lookup.clone();
    let registration = match tokio::task::spawn_blocking(move || find(company)).await {
        Ok(Ok(Some(r))) => r,
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(format!("reading the company: {e}")),
        Err(e) => return Err(format!("reading the company: {e}")),
    };
    let mut failed = Vec::new();
    for base in &registration.simulators {
        let url = format!("{base}/__sim/issuers");
        match http.put(&url).send_json(&registration.record).await {
            Ok(res) if res.status().is_success() => {}
            Ok(res) => failed.push(format!("{url}: HTTP {}", res.status())),
            Err(e) => failed.push(format!("{url}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::simulator::SimOptions;
    use crate::fixtures::{self, Sim};

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let t = RegistrarTiming {
            first_retry: Duration::from_millis(100),
            max_retry: Duration::from_millis(1000),
            timeout: Duration::from_secs(1),
        };
        let delays: Vec<u128> = (1..=6).map(|n| t.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(t.delay(u32::MAX), Duration::from_millis(1000));
    }

    fn fast() -> RegistrarTiming {
        RegistrarTiming {
            first_retry: Duration::from_millis(20),
            max_retry: Duration::from_millis(100),
            timeout: Duration::from_secs(2),
        }
    }

    async fn issuers(base: &str) -> Vec<String> {
        let list: serde_json::Value = awc::Client::default()
            .get(format!("{base}/__sim/issuers"))
            .send()
            .await
            .expect("issuers")
            .json()
            .await
            .expect("json");
        list.as_array()
            .expect("list")
            .iter()
            .map(|i| i["nit"].as_str().expect("nit").to_string())
            .collect()
    }

    #[actix_web::test]
    async fn registers_what_the_lookup_gives_and_skips_the_rest() {
        let sim = Sim::start([], SimOptions::default()).await;
        let base = sim.url("");
        let lookup: Lookup = {
            let base = base.clone();
            Arc::new(move |company| {
                // Company 1 is a demo company, 2 is not (nothing to send).
                Ok((company == 1).then(|| Registration {
                    record: fixtures::issuer("900000001"),
                    simulators: vec![base.clone()],
                }))
            })
        };
        let registrar = IssuerRegistrar::start(lookup, fast());
        assert!(registrar.register(vec![1, 2]).await);
        assert_eq!(issuers(&base).await, ["900000001"]);
        sim.stop().await;
    }

    #[actix_web::test]
    async fn keeps_trying_until_the_simulator_answers() {
        // A port nobody listens on yet; the simulator starts there later.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let lookup: Lookup = {
            let base = base.clone();
            Arc::new(move |_| {
                Ok(Some(Registration {
                    record: fixtures::issuer("900000001"),
                    simulators: vec![base.clone()],
                }))
            })
        };
        let registrar = IssuerRegistrar::start(lookup, fast());
        assert!(!registrar.register(vec![1]).await, "nobody answered");
        tokio::time::sleep(Duration::from_millis(150)).await;

        let registry = Arc::new(crate::authority::simulator::SimRegistry::new());
        let (_, handle) = crate::authority::simulator::start(
            &format!("127.0.0.1:{port}"),
            registry.clone(),
            SimOptions::default(),
        )
        .await
        .expect("start the simulator");
        let deadline = Instant::now() + Duration::from_secs(5);
        while registry.issuer("900000001").is_none() {
            assert!(Instant::now() < deadline, "registration never landed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        handle.stop(false).await;
    }
}
