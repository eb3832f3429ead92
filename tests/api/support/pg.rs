//! PostgreSQL for the crash tests: a private cluster a test may crash and
//! start again without disturbing the one every other test shares, and
//! what a database must hold after a crash (every number of a resolution
//! taken once, in a row, and no document left half-built).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

/// A PostgreSQL cluster of the test's own, in a temporary directory, on a
/// port of its own: `initdb`, then `pg_ctl`, run as the `postgres` user when
/// the test runs as root (PostgreSQL refuses root). Stopped on drop.
pub struct PrivateCluster {
    bin: PathBuf,
    data: PathBuf,
    log: PathBuf,
    port: u16,
    as_postgres: bool,
    tmp: tempfile::TempDir,
}

/// The newest installed server's programs (`/usr/lib/postgresql/<ver>/bin`,
/// Debian's layout): `None`, saying so, when there are none, and a panic
/// under `REQUIRE_CHECKERS`.
fn server_programs() -> Option<PathBuf> {
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version)
        .map(|(_, bin)| bin);
    if newest.is_none() {
        assert!(
            std::env::var_os("REQUIRE_CHECKERS").is_none(),
            "PostgreSQL's initdb and pg_ctl are required (REQUIRE_CHECKERS is set) but not installed"
        );
        eprintln!(
            "skipped: no /usr/lib/postgresql/<version>/bin/initdb to start a private cluster"
        );
    }
    newest
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

impl PrivateCluster {
    /// A new cluster, started, with a database `emisor`; `None` (said)
    /// when PostgreSQL's server programs are not installed.
    pub fn start() -> Option<PrivateCluster> {
        let bin = server_programs()?;
        let tmp = tempfile::tempdir().expect("tempdir");
        // SAFETY: geteuid(2) has no preconditions.
        let as_postgres = unsafe { libc::geteuid() } == 0;
        if as_postgres {
            let out = Command::new("chown")
                .arg("postgres:")
                .arg(tmp.path())
                .output()
                .expect("chown");
            assert!(out.status.success(), "chown: {out:?}");
        }
        let mut cluster = PrivateCluster {
            bin,
            data: tmp.path().join("data"),
            log: tmp.path().join("postgres.log"),
            port: 0,
            as_postgres,
            tmp,
        };
        let data = cluster.data.to_str().expect("path").to_string();
        let out = cluster.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        assert!(out.status.success(), "initdb: {}", text(&out));
        // Another process may take the chosen port before the server does.
        for _ in 0..3 {
            cluster.port = free_port();
            if cluster.try_start() {
                let mut client =
                    postgres::Client::connect(&cluster.url_of("postgres"), postgres::NoTls)
                        .expect("connect to the private cluster");
                client
                    .batch_execute("CREATE DATABASE emisor")
                    .expect("create the database");
                return Some(cluster);
            }
        }
        panic!(
            "the private cluster did not start: {}",
            cluster.server_log()
        );
    }

    /// The URL of its database `emisor`.
    pub fn url(&self) -> String {
        self.url_of("emisor")
    }

    fn url_of(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// A crash: `pg_ctl stop -m immediate`, every server process ended
    /// at once, no checkpoint (the next start replays the WAL).
    pub fn crash(&self) {
        let data = self.data.to_str().expect("path");
        let out = self.run("pg_ctl", &["-D", data, "-m", "immediate", "-w", "stop"]);
        assert!(out.status.success(), "pg_ctl stop: {}", text(&out));
    }

    /// Starts it again on its port after [`crash`](Self::crash), waiting
    /// until it takes connections (its crash recovery done).
    pub fn start_again(&self) {
        assert!(self.try_start(), "restart: {}", self.server_log());
    }

    fn try_start(&self) -> bool {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.tmp.path().display()
        );
        let data = self.data.to_str().expect("path");
        let log = self.log.to_str().expect("path");
        self.run(
            "pg_ctl",
            &[
                "-D", data, "-o", &options, "-l", log, "-w", "-t", "60", "start",
            ],
        )
        .status
        .success()
    }

    fn server_log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// One of the server's programs, as `postgres` when the test is root.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let path = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        cmd.args(args)
            .current_dir(self.tmp.path())
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"))
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let data = self.data.to_str().unwrap_or_default().to_string();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A stored document, as the crash checks read it.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: u64,
    pub company: i64,
    pub resolution: i64,
    pub number: i64,
    pub state: i16,
    pub pending_build: bool,
    pub code: Option<String>,
    /// Built again from its stored request (by a start, or once the store
    /// came back), not by the request that numbered it.
    pub rebuilt: bool,
}

/// Every document of the database at `url`.
pub fn documents(url: &str) -> Vec<Row> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .query(
            "SELECT id, company_id, resolution_id, number, state, pending_build, code,
                    EXISTS (SELECT 1 FROM document_history h
                            WHERE h.document_id = d.id AND h.entry->>'event' = 'rebuilt')
             FROM documents d ORDER BY id",
            &[],
        )
        .expect("read the documents")
        .iter()
        .map(|r| Row {
            id: u64::try_from(r.get::<_, i64>(0)).expect("an id"),
            company: r.get(1),
            resolution: r.get(2),
            number: r.get(3),
            state: r.get(4),
            pending_build: r.get(5),
            code: r.get(6),
            rebuilt: r.get(7),
        })
        .collect()
}

/// No document is left half-built, each resolution's numbers are taken
/// in a row from its first (none twice: the table's unique rule), and its
/// counter gives the one after its last.
pub fn assert_whole_and_gapless(url: &str) -> Vec<Row> {
    let rows = documents(url);
    let half_built: Vec<&Row> = rows.iter().filter(|r| r.pending_build).collect();
    assert!(half_built.is_empty(), "left half-built: {half_built:?}");
    let mut by_resolution: BTreeMap<(i64, i64), Vec<i64>> = BTreeMap::new();
    for r in &rows {
        by_resolution
            .entry((r.company, r.resolution))
            .or_default()
            .push(r.number);
    }
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    for ((company, resolution), numbers) in &mut by_resolution {
        numbers.sort_unstable();
        let first = numbers[0];
        let gaps: Vec<i64> = (first..=*numbers.last().expect("a number"))
            .filter(|n| numbers.binary_search(n).is_err())
            .collect();
        assert!(
            gaps.is_empty(),
            "resolution {resolution}: numbers {gaps:?} missing from {numbers:?}"
        );
        let next: i64 = client
            .query_one(
                "SELECT next FROM counters WHERE company_id = $1 AND resolution_id = $2",
                &[company, resolution],
            )
            .expect("the resolution's counter")
            .get(0);
        assert_eq!(
            next,
            numbers.last().expect("a number") + 1,
            "resolution {resolution}: the counter gives the number after its last"
        );
    }
    rows
}

/// The codes document `id` had before each of its re-datings (a document
/// sent after midnight, Colombia time, is dated again for its send, with a
/// new code).
pub fn codes_before_redating(url: &str, id: u64) -> Vec<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .query(
            "SELECT entry->'data'->>'previous_code' FROM document_history
             WHERE document_id = $1 AND entry->>'event' = 'redated'",
            &[&i64::try_from(id).expect("an id")],
        )
        .expect("read the history")
        .iter()
        .filter_map(|r| r.get::<_, Option<String>>(0))
        .collect()
}
