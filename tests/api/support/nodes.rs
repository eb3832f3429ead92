//! Several `emisor serve` processes on one PostgreSQL database, as an
//! installation runs them behind a load balancer (docs/operations.md,
//! "Several nodes"): each node on port 0 with a data dir of its own, the
//! same master key file beside each, the same settings and the same
//! authority (one `emisor tax-sim`). A client spreads requests over them.
//! PostgreSQL only: on sled a data dir belongs to one process.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, MutexGuard, PoisonError};

use reqwest::blocking::Response;
use serde_json::Value;

use super::app::*;
use super::external_sim::ExternalSim;

/// The nodes, their simulator and the database they share; all stopped
/// and the database dropped on drop.
pub struct Nodes {
    pub nodes: Vec<TestApp>,
    pub sim: ExternalSim,
    /// What every node was started with (its own data dir and the shared
    /// database added at each start).
    pub launch: Launch,
    root: tempfile::TempDir,
    next: AtomicUsize,
    /// One set of nodes at a time in this test process: each node keeps
    /// its pool of connections open, and three pools use a good share of
    /// a default server's `max_connections`.
    _one_at_a_time: MutexGuard<'static, ()>,
}

static ONE_SET: Mutex<()> = Mutex::new(());

/// Whether the several-node tests run: on PostgreSQL only; elsewhere the
/// test says why it does nothing.
pub fn on_shared_database() -> bool {
    if on_postgres() {
        return true;
    }
    eprintln!("skipped: several nodes share a PostgreSQL database, not a sled data dir");
    false
}

impl Nodes {
    /// `n` nodes started with `launch` (plus the simulator's URL). The
    /// first starts alone on the empty database and makes the demo company
    /// (its keys serve every node); the others start once it is ready.
    pub fn start(n: usize, launch: Launch) -> Nodes {
        Nodes::started(n, launch, false)
    }

    /// `n` nodes started at the same instant on the empty database: one of
    /// them makes the demo company, whose keys then serve every node.
    pub fn start_together(n: usize, launch: Launch) -> Nodes {
        Nodes::started(n, launch, true)
    }

    fn started(n: usize, launch: Launch, together: bool) -> Nodes {
        let one_at_a_time = ONE_SET.lock().unwrap_or_else(PoisonError::into_inner);
        let root = tempfile::tempdir().expect("tempdir");
        let sim = ExternalSim::start();
        let launch = launch
            .env("EMISOR_AUTHORITY__URL", &sim.service_url())
            .key_file();
        let key = master_key_for(root.path());
        let mut nodes = Nodes {
            nodes: Vec::new(),
            sim,
            launch,
            root,
            next: AtomicUsize::new(0),
            _one_at_a_time: one_at_a_time,
        };
        for i in 0..n {
            nodes.make_dir(i, &key);
            if !together {
                let app = nodes.start_node(i);
                nodes.nodes.push(app);
            }
        }
        if together {
            let barrier = Barrier::new(n);
            let started: Vec<TestApp> = std::thread::scope(|s| {
                let starting: Vec<_> = (0..n)
                    .map(|i| {
                        let (nodes, barrier) = (&nodes, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            nodes.start_node(i)
                        })
                    })
                    .collect();
                starting
                    .into_iter()
                    .map(|t| t.join().expect("a node started"))
                    .collect()
            });
            nodes.nodes = started;
        }
        // The node that made the demo company wrote its keys; no other did.
        let made: Vec<&TestApp> = nodes
            .nodes
            .iter()
            .filter(|node| node.dir.join("demo-keys.json").exists())
            .collect();
        assert_eq!(made.len(), 1, "one node made the demo company");
        let keys = made[0].keys.clone();
        assert!(keys.is_object(), "its demo-keys.json");
        for node in &mut nodes.nodes {
            node.keys = keys.clone();
        }
        nodes
    }

    /// Node `i`'s data dir, made with the key.
    fn make_dir(&self, i: usize, key: &[u8; 32]) {
        let dir = self.node_dir(i);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .expect("node data dir");
        write_key(&dir, key);
    }

    /// One more node joins the running ones.
    pub fn join(&mut self) -> &TestApp {
        let key = master_key_for(self.root.path());
        let i = self.nodes.len();
        self.make_dir(i, &key);
        let app = self.start_node(i);
        self.nodes.push(app);
        self.nodes.last().expect("the node joined")
    }

    fn node_dir(&self, i: usize) -> PathBuf {
        self.root.path().join(format!("node-{i}"))
    }

    /// Starts node `i` on its data dir (again, after a stop or a kill).
    pub fn start_node(&self, i: usize) -> TestApp {
        let dir = self.node_dir(i);
        let mut launch = self.launch.clone();
        launch.env.extend(store_env(self.root.path()));
        let mut app = TestApp::start_in(&dir, launch);
        if let Some(first) = self.nodes.first() {
            app.keys = first.keys.clone();
        }
        app
    }

    /// The node the next request goes to, round-robin.
    pub fn next(&self) -> &TestApp {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.nodes.len();
        &self.nodes[i]
    }

    pub fn first(&self) -> &TestApp {
        &self.nodes[0]
    }

    pub fn sk_test(&self) -> String {
        self.first().sk_test()
    }

    pub fn post(&self, path: &str, key: &str, body: &Value) -> Response {
        self.next().post(path, key, body)
    }

    pub fn get(&self, path: &str, key: &str) -> Response {
        self.next().get(path, key)
    }

    /// The shared database's URL.
    pub fn database_url(&self) -> String {
        database_url_of(self.root.path())
    }

    /// The shared database gone for every node (connections refused and
    /// ended: `away`), or back.
    pub fn database_away(&self, away: bool) {
        database_admin(self.root.path(), !away);
    }

    /// The shared database, for the test's own reads.
    pub fn database(&self) -> postgres::Client {
        database_client(self.root.path())
    }
}

/// The master key file beside `dir` (`<dir>.key`, 0600), as an operator
/// copies it to each node.
fn write_key(dir: &Path, key: &[u8; 32]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut path = dir.as_os_str().to_owned();
    path.push(".key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(PathBuf::from(path))
        .expect("master key file");
    file.write_all(key).expect("write the master key");
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
        }
        drop_database(self.root.path());
    }
}
