//! Starts the real `emisor` binary on port 0 with a fresh data dir and talks
//! HTTP to it. Each test gets its own server; nothing is shared.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, Response};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_emisor");

pub struct TestApp {
    pub url: String,
    pub dir: PathBuf,
    pub keys: Value,
    pub client: Client,
    child: Option<Child>,
    _tmp: Option<tempfile::TempDir>,
}

/// How to start a server.
#[derive(Default, Clone)]
pub struct Launch {
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
    /// Write the server's stderr to `<data dir>/server.log` (see
    /// [`TestApp::log`]) instead of the test's own stderr.
    pub capture_log: bool,
    /// Use the master key file (`<data dir>.key` unless configured) instead
    /// of the per-dir key every other test gives in the environment.
    pub key_file: bool,
}

impl Launch {
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.into());
        self
    }
    pub fn capture_log(mut self) -> Self {
        self.capture_log = true;
        self
    }
    pub fn key_file(mut self) -> Self {
        self.key_file = true;
        self
    }
    /// `[testing] shared_clock`: the service's business clock follows the
    /// in-process simulator's (`POST /__sim/clock`), whose test controls
    /// (`GET /__sim/issuers` among them) are then served.
    pub fn shared_clock(self) -> Self {
        self.env("EMISOR_TESTING__SHARED_CLOCK", "true")
    }
}

pub const MASTER_KEY_ENV: &str = "EMISOR_SECURITY__MASTER_KEY";

/// `TEST_STORE_ENGINE=postgres` runs every server on PostgreSQL (the
/// variables are not `EMISOR_…`: the server would read them as settings):
/// `TEST_PG_URL` names a role that may create databases, and each
/// data dir gets a database of its own (named after its path, so a restart
/// on the same dir finds it).
pub const ENGINE_ENV: &str = "TEST_STORE_ENGINE";
pub const PG_URL_ENV: &str = "TEST_PG_URL";

/// Whether the servers of this run store on PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var(ENGINE_ENV).is_ok_and(|e| e == "postgres")
}

/// Whether a test that reads or writes a data dir's sled files (or a
/// backup, which copies them) runs in this run: not on PostgreSQL, where
/// it says why it does nothing.
pub fn sled_only(why: &str) -> bool {
    if on_postgres() {
        eprintln!("skipped on PostgreSQL: {why}");
        return false;
    }
    true
}

/// A stopped server's store, on this run's engine.
pub fn open_stopped_store(dir: &Path) -> emisor_store::StoreHandle {
    let mut options = emisor_store::StoreOptions::default();
    if on_postgres() {
        options.engine = emisor_store::Engine::Postgres;
        options.url = Some(emisor_store::SecretText::new(database_url(&database_for(
            dir,
        ))));
    }
    emisor_store::open(dir, options, |_| Ok(keyring_for(dir))).expect("open the stopped store")
}

/// A stopped PostgreSQL server's document record, as stored.
pub fn stored_document(dir: &Path, id: u64) -> Option<Value> {
    let mut client = postgres::Client::connect(&database_url(&database_for(dir)), postgres::NoTls)
        .expect("connect to the server's database");
    let row = client
        .query_opt(
            "SELECT record::text FROM documents WHERE id = $1",
            &[&i64::try_from(id).expect("an id")],
        )
        .expect("read a document");
    row.map(|r| serde_json::from_str(r.get::<_, &str>(0)).expect("a record"))
}

/// The database of `dir`'s server on PostgreSQL.
fn database_for(dir: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::new()
        .chain_update(dir.as_os_str().as_encoded_bytes())
        .finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("emisor_api_{hex}")
}

/// The URL of `dir`'s database on the server of `TEST_PG_URL`.
pub fn database_url_of(dir: &Path) -> String {
    database_url(&database_for(dir))
}

/// The URL of `database` on the server of `TEST_PG_URL`.
fn database_url(database: &str) -> String {
    let admin = std::env::var(PG_URL_ENV).expect("TEST_PG_URL with TEST_STORE_ENGINE=postgres");
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b.to_string(), format!("?{q}")),
        None => (admin.clone(), String::new()),
    };
    let root = base
        .rsplit_once('/')
        .map_or(base.as_str(), |(root, _)| root);
    format!("{root}/{database}{query}")
}

/// The environment that puts `dir`'s server (or admin command) on the
/// engine of this run: nothing on sled; on PostgreSQL its database,
/// created when missing.
pub fn store_env(dir: &Path) -> Vec<(String, String)> {
    if !on_postgres() {
        return Vec::new();
    }
    let database = database_for(dir);
    let admin = std::env::var(PG_URL_ENV).expect("TEST_PG_URL with TEST_STORE_ENGINE=postgres");
    let mut client =
        postgres::Client::connect(&admin, postgres::NoTls).expect("connect to PostgreSQL");
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&database])
        .expect("list databases")
        .is_some();
    if !exists {
        // A concurrent start of the same dir may create it first.
        let _ = client.batch_execute(&format!("CREATE DATABASE {database}"));
    }
    vec![
        ("EMISOR_STORE__ENGINE".into(), "postgres".into()),
        ("EMISOR_STORE__URL".into(), database_url(&database)),
    ]
}

/// Lets `dir`'s database take connections again (`allow`), or refuses them
/// and ends the ones it has: the database gone, as a node sees it.
pub fn database_admin(dir: &Path, allow: bool) {
    let admin = std::env::var(PG_URL_ENV).expect("TEST_PG_URL");
    let mut client =
        postgres::Client::connect(&admin, postgres::NoTls).expect("connect to PostgreSQL");
    let database = database_for(dir);
    client
        .batch_execute(&format!(
            "ALTER DATABASE {database} ALLOW_CONNECTIONS {allow}"
        ))
        .expect("alter database");
    if !allow {
        client
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
                &[&database],
            )
            .expect("end the database's connections");
    }
}

/// A client of `dir`'s database on PostgreSQL.
pub fn database_client(dir: &Path) -> postgres::Client {
    postgres::Client::connect(&database_url(&database_for(dir)), postgres::NoTls)
        .expect("connect to the server's database")
}

/// Drops `dir`'s database (PostgreSQL runs), with its test's temporary dir.
pub fn drop_database(dir: &Path) {
    if !on_postgres() {
        return;
    }
    let Ok(admin) = std::env::var(PG_URL_ENV) else {
        return;
    };
    if let Ok(mut client) = postgres::Client::connect(&admin, postgres::NoTls) {
        let _ = client.batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            database_for(dir)
        ));
    }
}

/// The master key of a test's data dir: derived from its path, so every
/// start in one dir has the same key, parallel tests never share one, and
/// no key file is left beside a temporary dir.
pub fn master_key_for(dir: &Path) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::new()
        .chain_update(b"emisor test master key\0")
        .chain_update(dir.as_os_str().as_encoded_bytes())
        .finalize()
        .into()
}

/// [`master_key_for`] as `EMISOR_SECURITY__MASTER_KEY` carries it.
pub fn master_key_env(dir: &Path) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(master_key_for(dir))
}

/// The `--data-dir` an admin command names, if it names one.
fn data_dir_of(args: &[&str]) -> Option<PathBuf> {
    let at = args.iter().position(|a| *a == "--data-dir")?;
    args.get(at + 1).map(PathBuf::from)
}

/// `emisor admin …` with the master key of `key_of`'s data dir (on
/// PostgreSQL, the database of the `--data-dir` it names, else of
/// `key_of`): whether
/// it succeeded, its stdout and its stderr.
pub fn admin_command(key_of: &Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(BIN)
        .arg("admin")
        .args(args)
        .env(MASTER_KEY_ENV, master_key_env(key_of))
        .envs(store_env(
            &data_dir_of(args).unwrap_or_else(|| key_of.to_path_buf()),
        ))
        .output()
        .expect("run emisor admin");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The keys to open a stopped test server's store with.
pub fn keyring_for(dir: &Path) -> emisor_store::Keyring {
    emisor_store::Keyring::new(emisor_store::MasterKey::from_bytes(&master_key_for(dir)).unwrap())
}

pub fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client")
}

const SERVER_LOG: &str = "server.log";

/// The server's stderr: appended to its log file when captured, so a
/// restart on the same data dir keeps what came before.
fn stderr_for(dir: &Path, launch: &Launch) -> Stdio {
    if !launch.capture_log {
        return Stdio::inherit();
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(SERVER_LOG))
        .expect("server log file");
    Stdio::from(file)
}

impl TestApp {
    pub fn spawn() -> TestApp {
        Self::spawn_with(Launch::default())
    }

    pub fn spawn_with(launch: Launch) -> TestApp {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let mut app = Self::start_in(&dir, launch);
        app._tmp = Some(tmp);
        app
    }

    /// Starts (or restarts) a server on an existing data dir.
    pub fn start_in(dir: &Path, launch: Launch) -> TestApp {
        let listening = dir.join("listening");
        let _ = std::fs::remove_file(&listening);
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(dir)
            .args(&launch.args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr_for(dir, &launch));
        // A launch naming its database (several nodes on one, a private
        // cluster) keeps it, on the engine of the run.
        if !launch.env.iter().any(|(k, _)| k == "EMISOR_STORE__URL") {
            cmd.envs(store_env(dir));
        } else if on_postgres() {
            cmd.env("EMISOR_STORE__ENGINE", "postgres");
        }
        if launch.key_file {
            cmd.env_remove(MASTER_KEY_ENV);
        } else {
            cmd.env(MASTER_KEY_ENV, master_key_env(dir));
        }
        for (k, v) in &launch.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start emisor");
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = loop {
            if let Ok(url) = std::fs::read_to_string(&listening) {
                if url.starts_with("http://") {
                    break url;
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("emisor exited before listening: {status}");
            }
            assert!(Instant::now() < deadline, "emisor did not start in 60 s");
            std::thread::sleep(Duration::from_millis(50));
        };
        let keys = std::fs::read_to_string(dir.join("demo-keys.json"))
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null);
        TestApp {
            url,
            dir: dir.to_path_buf(),
            keys,
            client: client(),
            child: Some(child),
            _tmp: None,
        }
    }

    /// What the server wrote to stderr (with [`Launch::capture_log`]).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join(SERVER_LOG)).unwrap_or_default()
    }

    pub fn sk_test(&self) -> String {
        self.keys["sk_test"].as_str().expect("sk_test").to_string()
    }
    pub fn sk_live(&self) -> String {
        self.keys["sk_live"].as_str().expect("sk_live").to_string()
    }
    pub fn admin_token(&self) -> String {
        self.keys["admin_token"]
            .as_str()
            .expect("admin_token")
            .to_string()
    }

    pub fn get(&self, path: &str, key: &str) -> Response {
        self.client
            .get(format!("{}{path}", self.url))
            .header("X-Api-Key", key)
            .send()
            .expect("GET")
    }

    pub fn post_raw(
        &self,
        path: &str,
        key: &str,
        body: impl Into<reqwest::blocking::Body>,
    ) -> Response {
        self.client
            .post(format!("{}{path}", self.url))
            .header("X-Api-Key", key)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .expect("POST")
    }

    pub fn post(&self, path: &str, key: &str, body: &Value) -> Response {
        self.post_raw(path, key, body.to_string())
    }

    pub fn admin_get(&self, path: &str) -> Response {
        self.client
            .get(format!("{}{path}", self.url))
            .bearer_auth(self.admin_token())
            .send()
            .expect("admin GET")
    }

    pub fn admin_post(&self, path: &str, body: &Value) -> Response {
        self.client
            .post(format!("{}{path}", self.url))
            .bearer_auth(self.admin_token())
            .json(body)
            .send()
            .expect("admin POST")
    }

    /// SIGTERM and wait: the graceful path.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the pid of our own child, not yet waited for.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("emisor did not stop within 30 s of SIGTERM");
        }
    }

    /// SIGKILL: the crash path.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.kill();
        if self._tmp.is_some() {
            drop_database(&self.dir);
        }
    }
}

/// Body as JSON, with the status, for assertions.
pub fn json(res: Response) -> (u16, Value) {
    let status = res.status().as_u16();
    let text = res.text().expect("body");
    let value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    (status, value)
}

/// Asserts the error envelope of decisions.md §3.
pub fn assert_error(res: Response, status: u16, code: &str) -> Value {
    let (got, body) = json(res);
    assert_eq!(got, status, "status for {code}: {body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    body
}

/// Runs `emisor admin …` on a data dir; returns (exit ok, stdout JSON or text).
pub fn admin_cli(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env(MASTER_KEY_ENV, master_key_env(dir))
        .envs(store_env(dir))
        .output()
        .expect("run emisor admin");
    let text = if out.status.success() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    (out.status.success(), text)
}

/// Waits so that `n` requests fit in the current rate-limit minute.
pub fn wait_for_fresh_minute_if_needed() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let into_minute = now % 60;
    if into_minute > 50 {
        std::thread::sleep(Duration::from_secs(61 - into_minute));
    }
}
