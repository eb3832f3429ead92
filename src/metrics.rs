//! Prometheus metrics. Names live here as constants; the recorder is
//! process-global (the `metrics` crate's design), installed once.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub const HTTP_REQUESTS: &str = "emisor_http_requests_total";
pub const HTTP_LATENCY: &str = "emisor_http_request_duration_seconds";
pub const DOCUMENTS: &str = "emisor_documents";
pub const ACTOR_RESTARTS: &str = "emisor_actor_restarts_total";
pub const ACTOR_UP: &str = "emisor_actor_up";
/// 0 closed, 1 half-open, 2 open.
pub const BREAKER_STATE: &str = "emisor_breaker_state";
/// Companies with a warning in force, by `tipo` (`crate::operator::warnings`).
pub const COMPANIES_IN_WARNING: &str = "emisor_companies_in_warning";
/// Reconciliation with the authority (`crate::operator::reconciliation`):
/// findings by `tipo`, documents asked about by `estado` (2, 3), and the
/// last pass's end (Unix seconds).
pub const RECONCILIATION_FINDINGS: &str = "emisor_reconciliation_findings_total";
pub const RECONCILIATION_ASKED: &str = "emisor_reconciliation_documents_asked_total";
pub const RECONCILIATION_LAST_PASS: &str = "emisor_reconciliation_last_pass_timestamp_seconds";
/// The events sweep (`crate::issuing::invoice_events::sweep`): invoices the
/// authority answered about, events learned, and the last sweep's end
/// (Unix seconds).
pub const EVENTS_SWEEP_ASKED: &str = "emisor_events_sweep_invoices_asked_total";
pub const EVENTS_SWEEP_LEARNED: &str = "emisor_events_sweep_events_learned_total";
pub const EVENTS_SWEEP_LAST_PASS: &str = "emisor_events_sweep_last_pass_timestamp_seconds";
/// The last scheduled backup that completed: when (Unix seconds), its
/// size, how long it took and how long issuing was held for its point.
pub const BACKUP_LAST_SUCCESS: &str = "emisor_backup_last_success_timestamp_seconds";
pub const BACKUP_BYTES: &str = "emisor_backup_last_bytes";
pub const BACKUP_DURATION: &str = "emisor_backup_last_duration_seconds";
pub const BACKUP_PAUSE: &str = "emisor_backup_last_pause_seconds";
pub const BACKUP_FAILURES: &str = "emisor_backup_failures_total";

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
}

impl Metrics {
    /// Installs the global recorder on first use; later calls share it.
    pub fn install() -> Result<Metrics, String> {
        if let Some(h) = HANDLE.get() {
            return Ok(Metrics { handle: h.clone() });
        }
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(HTTP_LATENCY.into()), LATENCY_BUCKETS)
            .map_err(|e| e.to_string())?
            .install_recorder()
            .map_err(|e| e.to_string())?;
        let mut first = false;
        let handle = HANDLE
            .get_or_init(|| {
                first = true;
                handle
            })
            .clone();
        if first {
            spawn_upkeep(handle.clone());
        }
        Ok(Metrics { handle })
    }

    /// The exposition text, with the document gauges set from `counts`
    /// (documents per type and state).
    pub fn render(&self, counts: Vec<((u8, u8), u64)>) -> String {
        for ((doc_type, state), n) in counts {
            metrics::gauge!(DOCUMENTS, "tipo" => doc_type.to_string(), "estado" => state.to_string())
                .set(n as f64);
        }
        self.handle.render()
    }
}

/// How often the recorded latencies are folded into their buckets.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// `install_recorder` leaves the upkeep to us: until it runs (or a scrape
/// renders), every latency recorded is kept, 8 bytes a request for ever.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_EVERY);
            handle.run_upkeep();
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "metrics upkeep thread not started");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upkeep_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
            .filter(|name| name.trim() == "metrics-upkeep")
            .count()
    }

    /// Latencies are folded into their buckets by a thread of their own,
    /// started with the recorder and only then, however often `install`
    /// is called.
    #[test]
    fn the_recorder_comes_with_one_upkeep_thread() {
        Metrics::install().unwrap();
        Metrics::install().unwrap();
        // A new thread names itself once it runs.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while upkeep_threads() == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(upkeep_threads(), 1);
    }
}
