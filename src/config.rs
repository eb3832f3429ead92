//! Typed settings. Layers, later wins: the embedded `config.toml` → the file
//! given with `--config` → `EMISOR_<SECTION>__<KEY>` variables → flags.
//! Every struct denies unknown fields, so a misspelt key stops the start with
//! the key named.

use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// The repository's `config.toml`, compiled in: the embedded defaults.
pub const EMBEDDED_CONFIG: &str = include_str!("../config.toml");

/// Not `Serialize`: it holds secrets, which `Debug` prints as `[REDACTED]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub store: StoreSettings,
    pub authority: AuthoritySettings,
    pub uploads: UploadSettings,
    pub rate_limit: RateLimitSettings,
    pub smtp: SmtpSettings,
    pub resilience: ResilienceSettings,
    pub websocket: WebSocketSettings,
    pub admin: AdminSettings,
    pub demo: DemoSettings,
    pub security: SecuritySettings,
    pub backup: BackupSettings,
    pub testing: TestingSettings,
    pub operator: OperatorSettings,
    pub warnings: WarningSettings,
    pub events_sweep: EventsSweepSettings,
    pub reconciliation: ReconciliationSettings,
    pub console: ConsoleSettings,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub bind: String,
    pub workers: usize,
    pub shutdown_timeout_s: u64,
    /// Seconds a request body has to arrive in full (408 after).
    pub body_timeout_s: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    pub data_dir: PathBuf,
    /// sled's page cache, MiB.
    pub cache_mb: u64,
    /// How often, at most, sled's snapshot is written while documents are
    /// (ms): what a crash leaves to replay at the next start.
    pub checkpoint_ms: u64,
    /// `sled` (embedded, under `data_dir`) or `postgres` (at `url`).
    #[serde(default)]
    pub engine: emisor_store::Engine,
    /// The PostgreSQL connection URL (`EMISOR_STORE__URL`): it carries a
    /// password, so it is never serialized, logged or shown.
    #[serde(default = "no_secret", skip_serializing)]
    pub url: SecretString,
    /// PostgreSQL: connections opened at most to the database.
    pub pool_size: u32,
    /// PostgreSQL: the store's threads, each holding a connection while it
    /// runs (fewer than `pool_size`: phase one and the admin calls need
    /// connections of their own).
    pub threads: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthoritySettings {
    pub url: String,
    pub url_production: String,
    pub sim_bind: String,
    pub sim_async_delay_s: f64,
    pub timeout_ms: u64,
    pub max_requests_per_second: u32,
    pub max_in_flight: u32,
}

/// The XML work of uploads (`cargar-documento`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadSettings {
    /// Threads of the upload pool (at least 1).
    pub workers: usize,
    /// Uploads waiting for a thread before one is answered 503 BUSY.
    pub queue: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSettings {
    pub requests_per_minute: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpSettings {
    pub host: String,
    pub port: u16,
    pub username: String,
    pub password: SecretString,
    pub from: String,
    pub starttls: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResilienceSettings {
    pub time_scale: f64,
    pub retry_delays_s: Vec<f64>,
    pub breaker_failures: u32,
    pub breaker_pause_s: Vec<f64>,
    pub breaker_successes: u32,
    pub recovery_interval_s: f64,
    pub duplicate_window_s: f64,
    pub mail_retry_delays_s: Vec<f64>,
    /// On a shared database (several nodes): how long a node's lease lasts
    /// unless renewed (every quarter of it); a node silent this long is
    /// dead and the others adopt its work ([`Self::node_lease`]).
    pub node_lease_s: f64,
    /// How often each node of a shared database looks for a dead node's
    /// work to adopt ([`Self::adopt_interval`]).
    pub adopt_interval_s: f64,
    /// No effect: the events' legal windows follow the business-day
    /// calendar on the business clock (decisions.md "Business days"), not a
    /// timing. Accepted so that a config that still sets it starts.
    #[serde(default)]
    pub tacit_acceptance_wait_s: f64,
}

impl ResilienceSettings {
    /// A configured number of seconds, multiplied by `time_scale`.
    pub fn scaled(&self, seconds: f64) -> Duration {
        Duration::from_secs_f64((seconds * self.time_scale).max(0.0))
    }

    /// The node lease, scaled, and never under 2 s: a busy machine may
    /// delay a renewal by that much, and a live node judged dead has its
    /// work run twice.
    pub fn node_lease(&self) -> Duration {
        self.scaled(self.node_lease_s).max(Duration::from_secs(2))
    }

    /// The adoption poll's period, scaled, and never under a quarter
    /// second.
    pub fn adopt_interval(&self) -> Duration {
        self.scaled(self.adopt_interval_s)
            .max(Duration::from_millis(250))
    }

    /// When to try again after `failed` attempts (the first send counts):
    /// one retry per configured delay (spec 8: 10, 20, 40, 80, 160 s), then
    /// `None`, no retry left.
    pub fn retry_delay(&self, failed: u32) -> Option<Duration> {
        let i = (failed.max(1) - 1) as usize;
        self.retry_delays_s.get(i).map(|&s| self.scaled(s))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSocketSettings {
    /// Seconds between the server's pings of each socket; a socket that
    /// has not answered two is closed.
    pub ping_interval_s: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminSettings {
    /// Read with `expose_secret()` only where it is checked or handed out.
    pub token: SecretString,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoSettings {
    pub bootstrap: bool,
}

/// The master key that seals the secrets in the store (`crate::security`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySettings {
    /// Where the key is (32 raw bytes); empty = `<data_dir>.key`, beside
    /// the data dir so that a copy of the data dir alone does not hold it.
    pub master_key_file: PathBuf,
    /// The key itself, base64, instead of the file
    /// (`EMISOR_SECURITY__MASTER_KEY`); not meant for a config file.
    #[serde(default = "no_secret")]
    pub master_key: SecretString,
}

fn no_secret() -> SecretString {
    SecretString::from(String::new())
}

/// Backups (`crate::backup`): where the admin API may write them, and the
/// scheduled ones.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupSettings {
    /// Backups through the admin API go under it; empty = none there.
    pub dir: PathBuf,
    pub interval_s: u64,
    pub keep: u32,
}

/// Test-only settings (never needed in production).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestingSettings {
    /// The business clock (`crate::clock`) follows the in-process
    /// simulator's test clock, and the simulator serves its test controls
    /// (`/__sim/clock`, `GET /__sim/issuers`). Off by default.
    #[serde(default)]
    pub shared_clock: bool,
    /// With `shared_clock`: seconds the clock starts ahead of the system
    /// clock; no effect otherwise.
    pub clock_offset_s: i64,
}

/// Operator events (decisions.md "Operator events"): where they are POSTed
/// and the HMAC key of their `X-Emisor-Signature`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSettings {
    pub webhook_url: String,
    #[serde(default = "no_secret")]
    pub webhook_secret: SecretString,
}

/// When a company is warned that something runs out (`crate::operator::warnings`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarningSettings {
    /// Numbers of a resolution, or documents of the month's plan, left at
    /// or below this percentage of the whole.
    pub percent_left: u8,
    /// A validity end, a certificate's expiry or a numbering's projected
    /// end this many days away or fewer.
    pub days_before: u32,
    /// Seconds between the checks of dates, rates and plans.
    pub check_interval_s: u64,
}

/// The sweep that asks the authority for the events on each company's own
/// invoices (`crate::issuing::invoice_events::sweep`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsSweepSettings {
    /// Invoices issued this many days ago or fewer are asked about.
    pub window_days: u32,
    /// Seconds between the end of a sweep and the start of the next.
    pub interval_s: u64,
    /// Most `GetStatusEvent` calls a second, all companies together
    /// (0 turns the sweep off).
    pub per_second: f64,
}

/// What the reconciliation with the authority compares, and how often
/// (`crate::operator::reconciliation`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconciliationSettings {
    /// Seconds between passes.
    pub interval_s: u64,
    /// A document queued (state 3) this many seconds since its last change
    /// is asked about.
    pub stuck_after_s: u64,
    /// Accepted documents (state 2) issued this many days back are sampled.
    pub sample_days: u32,
    /// Percentage of them asked about each pass (100 = all).
    pub sample_percent: u8,
}

/// The operator console under `/console` (`crate::console`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleSettings {
    /// `false` serves no console (API-only installs): `/console` is a 404.
    pub enabled: bool,
    /// Marks the session cookie `Secure` (behind a TLS proxy).
    pub secure_cookie: bool,
    /// A session ends this many seconds after sign-in.
    pub session_ttl_s: u64,
}

/// Values given on the command line; they win over everything.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub bind: Option<String>,
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {0} does not exist")]
    MissingFile(PathBuf),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl Settings {
    /// Loads the layers from the real process environment.
    pub fn load(overrides: &Overrides) -> Result<Settings, ConfigError> {
        Self::load_from(overrides, Env::prefixed("EMISOR_").split("__"))
    }

    fn load_from(overrides: &Overrides, env: Env) -> Result<Settings, ConfigError> {
        let mut figment = Figment::from(Toml::string(EMBEDDED_CONFIG));
        if let Some(path) = &overrides.config_file {
            if !path.exists() {
                return Err(ConfigError::MissingFile(path.clone()));
            }
            figment = figment.merge(Toml::file(path));
        }
        figment = figment.merge(env);
        if let Some(bind) = &overrides.bind {
            figment = figment.merge(Serialized::default("server.bind", bind));
        }
        if let Some(dir) = &overrides.data_dir {
            figment = figment.merge(Serialized::default("store.data_dir", dir));
        }
        let settings: Settings = figment
            .extract()
            .map_err(|e| ConfigError::Invalid(describe(e)))?;
        settings.check()?;
        Ok(settings)
    }

    fn check(&self) -> Result<(), ConfigError> {
        let r = &self.resilience;
        if r.time_scale.is_nan() || r.time_scale <= 0.0 {
            return Err(ConfigError::Invalid(
                "resilience.time_scale must be greater than 0".into(),
            ));
        }
        let positive = |v: f64| v > 0.0 && (v * r.time_scale).is_finite();
        if !positive(r.node_lease_s) || !positive(r.adopt_interval_s) {
            return Err(ConfigError::Invalid(
                "resilience.node_lease_s and adopt_interval_s must be greater than 0".into(),
            ));
        }
        if r.breaker_pause_s.is_empty() || r.retry_delays_s.is_empty() {
            return Err(ConfigError::Invalid(
                "resilience.breaker_pause_s and retry_delays_s need at least one value".into(),
            ));
        }
        if self.authority.max_requests_per_second == 0 || self.authority.max_in_flight == 0 {
            return Err(ConfigError::Invalid(
                "authority.max_requests_per_second and max_in_flight must be at least 1".into(),
            ));
        }
        if self.websocket.ping_interval_s == 0 || self.server.body_timeout_s == 0 {
            return Err(ConfigError::Invalid(
                "websocket.ping_interval_s and server.body_timeout_s must be at least 1".into(),
            ));
        }
        if self.uploads.workers == 0 {
            return Err(ConfigError::Invalid(
                "uploads.workers must be at least 1".into(),
            ));
        }
        use secrecy::ExposeSecret;
        if !self.operator.webhook_url.is_empty()
            && self.operator.webhook_secret.expose_secret().is_empty()
        {
            return Err(ConfigError::Invalid(
                "operator.webhook_secret is required when operator.webhook_url is set".into(),
            ));
        }
        if self.warnings.percent_left > 100 || self.warnings.check_interval_s == 0 {
            return Err(ConfigError::Invalid(
                "warnings.percent_left must be 0 to 100 and warnings.check_interval_s at least 1"
                    .into(),
            ));
        }
        let sweep = &self.events_sweep;
        if !sweep.per_second.is_finite()
            || sweep.per_second < 0.0
            || sweep.per_second > f64::from(self.authority.max_requests_per_second)
            || sweep.window_days == 0
        {
            return Err(ConfigError::Invalid(
                "events_sweep.per_second must be 0 (off) up to authority.max_requests_per_second, \
                 and events_sweep.window_days at least 1"
                    .into(),
            ));
        }
        let r = &self.reconciliation;
        if r.sample_percent > 100 || r.interval_s == 0 {
            return Err(ConfigError::Invalid(
                "reconciliation.sample_percent must be 0 to 100 and reconciliation.interval_s at least 1"
                    .into(),
            ));
        }
        if self.console.session_ttl_s < 60 {
            return Err(ConfigError::Invalid(
                "console.session_ttl_s must be at least 60".into(),
            ));
        }
        let store = &self.store;
        if store.threads == 0
            || u64::from(store.pool_size) <= store.threads as u64
            || store.pool_size > 10_000
        {
            return Err(ConfigError::Invalid(format!(
                "store.threads must be at least 1 and store.pool_size greater than it, at most \
                 10000 (each store thread holds a connection; phase one and the admin calls \
                 need others): threads = {}, pool_size = {}",
                store.threads, store.pool_size
            )));
        }
        if self.rate_limit.requests_per_minute == 0 {
            return Err(ConfigError::Invalid(
                "rate_limit.requests_per_minute must be at least 1".into(),
            ));
        }
        Ok(())
    }

    pub fn data_dir(&self) -> &Path {
        &self.store.data_dir
    }

    /// `[security] master_key_file`, or `<data_dir>.key` when empty
    /// (`./data` → `./data.key`).
    pub fn master_key_file(&self) -> Result<PathBuf, ConfigError> {
        let configured = &self.security.master_key_file;
        if !configured.as_os_str().is_empty() {
            return Ok(configured.clone());
        }
        let dir = self.data_dir();
        let named = |dir: &Path| {
            dir.file_name()
                .map(|name| dir.with_file_name(format!("{}.key", name.to_string_lossy())))
        };
        // `.` or `dir/..` have no name of their own: name the key after
        // the directory they are.
        named(dir)
            .or_else(|| std::fs::canonicalize(dir).ok().as_deref().and_then(named))
            .ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "no default master key file beside data dir {}: set security.master_key_file",
                    dir.display()
                ))
            })
    }
}

/// figment's errors name the key path; keep every message of a multi-error.
fn describe(e: figment::Error) -> String {
    e.into_iter()
        .map(|e| {
            let path = e.path.join(".");
            if path.is_empty() {
                e.kind.to_string()
            } else {
                format!("{} (key `{path}`)", e.kind)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    /// An env provider that sees nothing: env precedence is covered by the
    /// integration tests, which start the real binary with variables set.
    fn no_env() -> Env {
        Env::prefixed("EMISOR_UNIT_TEST_UNSET_").split("__")
    }

    #[test]
    fn embedded_defaults_are_the_spec_values() {
        let s = Settings::load_from(&Overrides::default(), no_env()).unwrap();
        assert_eq!(s.server.bind, "127.0.0.1:8080");
        assert_eq!(s.store.data_dir, PathBuf::from("./data"));
        assert_eq!(s.rate_limit.requests_per_minute, 100);
        assert_eq!(
            s.resilience.retry_delays_s,
            vec![10.0, 20.0, 40.0, 80.0, 160.0]
        );
        assert_eq!(s.resilience.breaker_pause_s, vec![60.0, 120.0, 300.0]);
        assert!(s.demo.bootstrap);
        assert_eq!(s.websocket.ping_interval_s, 30);
        assert_eq!(s.server.body_timeout_s, 30);
        assert_eq!(s.master_key_file().unwrap(), PathBuf::from("./data.key"));
        assert!(s.security.master_key.expose_secret().is_empty());
        assert_eq!((s.warnings.percent_left, s.warnings.days_before), (10, 30));
        assert!(s.operator.webhook_url.is_empty());
    }

    #[test]
    fn an_operator_webhook_needs_its_secret() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "[operator]\nwebhook_url = \"https://ops.example/hook\"\n",
        )
        .unwrap();
        let mut o = Overrides {
            config_file: Some(file.clone()),
            ..Default::default()
        };
        let err = Settings::load_from(&o, no_env()).unwrap_err().to_string();
        assert!(err.contains("operator.webhook_secret"), "{err}");
        std::fs::write(
            &file,
            "[operator]\nwebhook_url = \"https://ops.example/hook\"\nwebhook_secret = \"s\"\n",
        )
        .unwrap();
        o.config_file = Some(file);
        assert!(Settings::load_from(&o, no_env()).is_ok());
    }

    #[test]
    fn the_master_key_file_sits_beside_the_data_dir() {
        let mut s = Settings::load_from(&Overrides::default(), no_env()).unwrap();
        for (dir, key) in [
            ("/var/lib/emisor", "/var/lib/emisor.key"),
            ("/var/lib/emisor/", "/var/lib/emisor.key"),
            ("data", "data.key"),
        ] {
            s.store.data_dir = PathBuf::from(dir);
            assert_eq!(s.master_key_file().unwrap(), PathBuf::from(key), "{dir}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let inside = tmp.path().join("d");
        std::fs::create_dir(&inside).unwrap();
        s.store.data_dir = inside.join(".");
        let key = s.master_key_file().unwrap();
        assert_eq!(key.file_name().unwrap(), "d.key");
        s.security.master_key_file = PathBuf::from("/etc/emisor/master.key");
        assert_eq!(
            s.master_key_file().unwrap(),
            PathBuf::from("/etc/emisor/master.key")
        );
    }

    #[test]
    fn one_retry_per_delay_after_the_first_send() {
        let mut r = Settings::load_from(&Overrides::default(), no_env())
            .unwrap()
            .resilience;
        let delays: Vec<_> = (1..=6).map(|failed| r.retry_delay(failed)).collect();
        let s = Duration::from_secs;
        assert_eq!(
            delays,
            [
                Some(s(10)),
                Some(s(20)),
                Some(s(40)),
                Some(s(80)),
                Some(s(160)),
                None
            ]
        );
        r.time_scale = 0.01;
        assert_eq!(r.retry_delay(1), Some(Duration::from_millis(100)));
    }

    #[test]
    fn the_node_lease_and_adoption_poll_are_scaled_with_floors() {
        let mut r = Settings::load_from(&Overrides::default(), no_env())
            .unwrap()
            .resilience;
        assert_eq!(r.node_lease(), Duration::from_secs(20));
        assert_eq!(r.adopt_interval(), Duration::from_secs(5));
        r.time_scale = 0.5;
        assert_eq!(r.node_lease(), Duration::from_secs(10));
        r.time_scale = 0.01;
        assert_eq!(r.node_lease(), Duration::from_secs(2), "never under 2 s");
        assert_eq!(r.adopt_interval(), Duration::from_millis(250));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[resilience]\nnode_lease_s = 0\n").unwrap();
        let o = Overrides {
            config_file: Some(file),
            ..Default::default()
        };
        let refused = Settings::load_from(&o, no_env()).unwrap_err();
        assert!(refused.to_string().contains("node_lease_s"), "{refused}");
    }

    #[test]
    fn file_then_env_then_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "[server]\nbind = \"127.0.0.1:1111\"\n[rate_limit]\nrequests_per_minute = 7\n[resilience]\ntime_scale = 0.5\n",
        )
        .unwrap();
        let mut o = Overrides {
            config_file: Some(file),
            ..Default::default()
        };
        let s = Settings::load_from(&o, no_env()).unwrap();
        assert_eq!(s.server.bind, "127.0.0.1:1111");
        assert_eq!(s.rate_limit.requests_per_minute, 7);
        assert_eq!(s.resilience.time_scale, 0.5);
        o.bind = Some("127.0.0.1:0".into());
        let s = Settings::load_from(&o, no_env()).unwrap();
        assert_eq!(s.server.bind, "127.0.0.1:0", "flag wins over file");
    }

    #[test]
    fn secrets_never_reach_debug_output() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "[admin]\ntoken = \"adm_do-not-print\"\n[smtp]\npassword = \"smtp-do-not-print\"\n\
             [security]\nmaster_key = \"key-do-not-print\"\n",
        )
        .unwrap();
        let o = Overrides {
            config_file: Some(file),
            ..Default::default()
        };
        let s = Settings::load_from(&o, no_env()).unwrap();
        assert_eq!(s.admin.token.expose_secret(), "adm_do-not-print");
        assert_eq!(s.smtp.password.expose_secret(), "smtp-do-not-print");
        assert_eq!(s.security.master_key.expose_secret(), "key-do-not-print");
        for shown in [format!("{s:?}"), format!("{s:#?}")] {
            assert!(!shown.contains("do-not-print"), "{shown}");
            assert!(shown.contains("REDACTED"), "{shown}");
        }
    }

    #[test]
    fn unknown_key_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[server]\nbindd = \"x\"\n").unwrap();
        let o = Overrides {
            config_file: Some(file),
            ..Default::default()
        };
        let err = Settings::load_from(&o, no_env()).unwrap_err().to_string();
        assert!(err.contains("bindd"), "{err}");
    }
}
