//! `emisor tax-sim` in its own process, as an operator runs it beside
//! `serve` (`[authority] url`).

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

use super::app::*;

/// The simulator process; killed on drop.
pub struct ExternalSim {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`), as it printed it.
    pub base: String,
    /// Kept open: the simulator must not write into a closed pipe.
    _stdout: BufReader<ChildStdout>,
}

impl ExternalSim {
    /// On a free port.
    pub fn start() -> ExternalSim {
        Self::start_on("127.0.0.1:0")
    }

    /// On `bind`; returns once it printed the address it listens on.
    pub fn start_on(bind: &str) -> ExternalSim {
        let mut child = Command::new(BIN)
            .args(["tax-sim", "--bind", bind])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tax-sim");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let base = loop {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read tax-sim stdout");
            assert!(n > 0, "tax-sim exited before listening");
            if let Some(i) = line.find("listening on http://") {
                break line[i + "listening on ".len()..].trim().to_string();
            }
        };
        ExternalSim {
            child,
            base,
            _stdout: stdout,
        }
    }

    /// What `[authority] url` names: its SOAP service.
    pub fn service_url(&self) -> String {
        service_url_of(&self.base)
    }
}

pub fn service_url_of(base: &str) -> String {
    format!("{base}/WcfDianCustomerServices.svc")
}

impl Drop for ExternalSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
