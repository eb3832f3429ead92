//! TLS to PostgreSQL as the URL's `sslmode` asks, against a PostgreSQL of
//! the test's own (`initdb` into a temporary directory, a self-signed
//! certificate made with the `openssl` CLI, `ssl` off then on): the
//! shared cluster of the suite is left as it is. Runs where `TEST_PG_URL`
//! is set (the PostgreSQL runs), with Debian's PostgreSQL binaries; as root
//! the instance runs as the `postgres` user, which PostgreSQL requires.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::keys;
use crate::engine::postgres::{db_error, PgOptions, PgStore, Sql};
use crate::*;

/// A PostgreSQL server of one test, stopped when dropped.
struct OwnServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

/// Whether this process runs as root (its `/proc/self` is its own).
fn root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `program args…` as the instance's owner: `postgres` when root.
fn as_owner(program: &Path, args: &[&str]) -> Command {
    if root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program).args(args);
        cmd
    } else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    }
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl OwnServer {
    /// A new cluster with a certificate for `names` (subjectAltName),
    /// started with `ssl` as given.
    fn start(names: &str, ssl: bool) -> Option<OwnServer> {
        if std::env::var("TEST_PG_URL").is_err() {
            eprintln!("skipped: TEST_PG_URL is not set (the PostgreSQL runs start a server of their own here)");
            return None;
        }
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("Debian's PostgreSQL under /usr/lib/postgresql")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|b| b.join("initdb").exists())
            .max()
            .expect("initdb under /usr/lib/postgresql/*/bin");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        run(
            {
                let mut c = Command::new("openssl");
                c.args([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                ])
                .args(["-subj", "/CN=emisor-test-db"])
                .args(["-addext", &format!("subjectAltName={names}")])
                .arg("-keyout")
                .arg(d.join("server.key"))
                .arg("-out")
                .arg(d.join("server.crt"));
                c
            },
            "openssl req",
        );
        if root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["-R", "postgres:postgres"]).arg(d);
                    c
                },
                "chown",
            );
        }
        let data = d.join("data");
        run(
            as_owner(
                &bin.join("initdb"),
                &[
                    "-D",
                    data.to_str().unwrap(),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "--no-sync",
                ],
            ),
            "initdb",
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = OwnServer { bin, dir, port };
        server.pg_ctl("start", ssl);
        Some(server)
    }

    fn pg_ctl(&self, action: &str, ssl: bool) {
        let d = self.dir.path();
        let options = format!(
            "-c port={} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c ssl={} \
             -c ssl_cert_file={} -c ssl_key_file={} -c fsync=off",
            self.port,
            d.display(),
            if ssl { "on" } else { "off" },
            d.join("server.crt").display(),
            d.join("server.key").display(),
        );
        let data = d.join("data");
        let log = d.join("server.log");
        run(
            as_owner(
                &self.bin.join("pg_ctl"),
                &[
                    action,
                    "-w",
                    "-D",
                    data.to_str().unwrap(),
                    "-l",
                    log.to_str().unwrap(),
                    "-o",
                    &options,
                ],
            ),
            &format!("pg_ctl {action}"),
        );
    }

    fn url(&self, query: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?{query}",
            self.port
        )
    }

    fn cert(&self) -> String {
        self.dir.path().join("server.crt").display().to_string()
    }

    fn open(&self, query: &str) -> StoreResult<PgStore> {
        let mut options = PgOptions::new(SecretText::new(self.url(query)));
        options.connect_timeout = Duration::from_secs(2);
        PgStore::open(&options, |_| Ok(keys()))
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = as_owner(
            &self.bin.join("pg_ctl"),
            &["stop", "-m", "immediate", "-D", data.to_str().unwrap()],
        )
        .output();
    }
}

/// Whether the store's connections are encrypted, as the server sees them.
fn encrypted(store: &PgStore) -> bool {
    store
        .conn()
        .unwrap()
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .map_err(db_error)
        .unwrap()
        .get(0)
}

fn refused(opened: StoreResult<PgStore>) -> String {
    match opened {
        Ok(_) => panic!("connected"),
        Err(e) => {
            assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
            e.to_string()
        }
    }
}

#[test]
fn sslmode_is_honoured_against_a_server_without_tls_then_with_it() {
    // The certificate names another host than the one connected to.
    let Some(server) = OwnServer::start("DNS:db.example", false) else {
        return;
    };
    // No TLS on the server: require refuses, naming TLS; disable and
    // prefer connect in the clear.
    let e = refused(server.open("sslmode=require"));
    assert!(e.contains("TLS"), "{e}");
    assert!(!encrypted(&server.open("sslmode=disable").unwrap()));
    assert!(!encrypted(&server.open("").unwrap()));

    server.pg_ctl("restart", true);
    // prefer (the default) and require encrypt without checking the
    // certificate; disable does not encrypt.
    assert!(encrypted(&server.open("").unwrap()));
    let required = server.open("sslmode=require").unwrap();
    assert!(encrypted(&required));
    required.companies().unwrap();
    assert!(!encrypted(&server.open("sslmode=disable").unwrap()));
    // verify-ca: signed by sslrootcert; the system's CAs do not know it.
    let cert = server.cert();
    let ca = server
        .open(&format!("sslmode=verify-ca&sslrootcert={cert}"))
        .unwrap();
    assert!(encrypted(&ca));
    let e = refused(server.open("sslmode=verify-ca"));
    assert!(e.contains("certificate"), "{e}");
    // require with sslrootcert checks the CA, as libpq does.
    assert!(encrypted(
        &server
            .open(&format!("sslmode=require&sslrootcert={cert}"))
            .unwrap()
    ));
    // verify-full: the certificate must name 127.0.0.1, and it does not.
    let e = refused(server.open(&format!("sslmode=verify-full&sslrootcert={cert}")));
    assert!(e.contains("certificate"), "{e}");
}

#[test]
fn verify_full_connects_to_the_host_its_certificate_names() {
    let Some(server) = OwnServer::start("IP:127.0.0.1,DNS:localhost", true) else {
        return;
    };
    let cert = server.cert();
    let full = server
        .open(&format!("sslmode=verify-full&sslrootcert={cert}"))
        .unwrap();
    assert!(encrypted(&full));
    // A point of the store (an export's) connects the same way.
    assert!(encrypted(&full.at_point().unwrap()));
}
