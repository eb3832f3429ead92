//! Mailer: sends one built message. It owns the transport — an SMTP client
//! (lettre, STARTTLS and credentials when configured) or, with no SMTP
//! host, the outbox folder where each message becomes an `.eml` file.
//! Building the message, the durable job, retries and the log are the
//! caller's: the mailer only says whether this attempt got through.
//!
//! Messages are handled concurrently (each send is its own future), so a
//! slow server holds up only the sends waiting on it, never the callers of
//! other actors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use actix::{Actor, Context, Handler, Message, MessageResult, ResponseFuture};
use lettre::address::Envelope;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use crate::{Ping, Pong};

/// Where messages go.
#[derive(Debug, Clone)]
pub enum MailTransport {
    Smtp(SmtpConfig),
    /// `.eml` files in this folder (created when missing).
    Outbox(PathBuf),
}

#[derive(Clone)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    /// Require STARTTLS before anything is sent (certificate checked
    /// against `host`); false = plain SMTP, for a local relay.
    pub starttls: bool,
    /// Empty = no authentication.
    pub username: String,
    pub password: String,
    /// For each SMTP command.
    pub timeout: Duration,
}

impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("starttls", &self.starttls)
            .field("username", &self.username)
            .field("password", &"[REDACTED]")
            .finish()
    }
}

/// Sends one message: its envelope (SMTP `MAIL FROM`/`RCPT TO`) and its
/// bytes as built. `message_id` names the outbox file, so a message sent
/// again (after a crash, say) replaces its own file.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Delivered, String>")]
pub struct SendMail {
    pub message_id: String,
    pub envelope: Envelope,
    pub raw: Vec<u8>,
}

/// How a message left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// The SMTP server's answer to the data (`250 …`).
    Smtp(String),
    /// The file written in the outbox.
    Outbox(PathBuf),
}

enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Outbox(PathBuf),
}

pub struct Mailer {
    transport: Result<Transport, String>,
}

impl Mailer {
    /// A configuration error (a host TLS cannot be set up for) does not
    /// stop the server: every send answers it, and the log shows it.
    pub fn new(config: &MailTransport) -> Self {
        let transport = match config {
            MailTransport::Outbox(dir) => Ok(Transport::Outbox(dir.clone())),
            MailTransport::Smtp(c) => smtp(c).map(Transport::Smtp),
        };
        Mailer { transport }
    }
}

fn smtp(c: &SmtpConfig) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(c.host.as_str())
        .port(c.port)
        .timeout(Some(c.timeout));
    if c.starttls {
        let tls =
            TlsParameters::new(c.host.clone()).map_err(|e| format!("TLS for {}: {e}", c.host))?;
        b = b.tls(Tls::Required(tls));
    }
    if !c.username.is_empty() {
        b = b.credentials(Credentials::new(c.username.clone(), c.password.clone()));
    }
    Ok(b.build())
}

/// The outbox file of a message: its Message-ID with anything but
/// letters, digits, `.`, `-` and `_` replaced.
pub fn outbox_file_name(message_id: &str) -> String {
    let stem: String = message_id
        .trim_matches(|c| c == '<' || c == '>')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{stem}.eml")
}

/// Writes the message whole or not at all (a temporary file renamed into
/// place), on disk before it reports success.
fn write_eml(dir: &Path, message_id: &str, raw: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let name = outbox_file_name(message_id);
    let path = dir.join(&name);
    let tmp = dir.join(format!(".{name}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(raw)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(path)
}

impl Actor for Mailer {
    type Context = Context<Self>;
}

impl Handler<SendMail> for Mailer {
    type Result = ResponseFuture<Result<Delivered, String>>;

    fn handle(&mut self, m: SendMail, _: &mut Context<Self>) -> Self::Result {
        match &self.transport {
            Err(e) => {
                let e = e.clone();
                Box::pin(async move { Err(e) })
            }
            Ok(Transport::Smtp(t)) => {
                let t = t.clone();
                Box::pin(async move {
                    match t.send_raw(&m.envelope, &m.raw).await {
                        Ok(answer) => Ok(Delivered::Smtp(format!(
                            "{} {}",
                            answer.code(),
                            answer.message().collect::<Vec<_>>().join(" ")
                        ))),
                        Err(e) => Err(smtp_error(&e)),
                    }
                })
            }
            Ok(Transport::Outbox(dir)) => {
                let dir = dir.clone();
                Box::pin(async move {
                    // File writes and fsync off the actor's thread.
                    let written =
                        tokio::task::spawn_blocking(move || write_eml(&dir, &m.message_id, &m.raw))
                            .await;
                    match written {
                        Ok(Ok(path)) => Ok(Delivered::Outbox(path)),
                        Ok(Err(e)) => Err(format!("writing to the outbox: {e}")),
                        Err(e) => Err(format!("writing to the outbox: {e}")),
                    }
                })
            }
        }
    }
}

/// lettre's error with its causes (the top one alone says only "network
/// error").
fn smtp_error(e: &lettre::transport::smtp::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl Handler<Ping> for Mailer {
    type Result = MessageResult<Ping>;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Pong)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbox_names_come_from_the_message_id() {
        assert_eq!(
            outbox_file_name("<emisor.7.3@900000001.emisor>"),
            "emisor.7.3_900000001.emisor.eml"
        );
        assert_eq!(outbox_file_name("<a/../b>"), "a_.._b.eml");
    }

    #[actix::test]
    async fn the_outbox_gets_one_file_per_message_id() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = dir.path().join("outbox");
        let mailer = Mailer::new(&MailTransport::Outbox(outbox.clone())).start();
        let envelope = Envelope::new(
            Some("a@example.test".parse().unwrap()),
            vec!["b@example.test".parse().unwrap()],
        )
        .unwrap();
        let send = |raw: &str| SendMail {
            message_id: "<m.1@x>".into(),
            envelope: envelope.clone(),
            raw: raw.as_bytes().to_vec(),
        };
        let first = mailer.send(send("one")).await.unwrap().unwrap();
        let Delivered::Outbox(path) = first else {
            panic!("{first:?}")
        };
        // Sent again (a retry after a crash): the same file, replaced.
        mailer.send(send("two")).await.unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::read_dir(&outbox).unwrap().count(), 1);
    }

    #[actix::test]
    async fn a_refused_connection_is_an_error_not_a_wait() {
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mailer = Mailer::new(&MailTransport::Smtp(SmtpConfig {
            host: "127.0.0.1".into(),
            port,
            starttls: false,
            username: String::new(),
            password: String::new(),
            timeout: Duration::from_secs(5),
        }))
        .start();
        let envelope = Envelope::new(
            Some("a@example.test".parse().unwrap()),
            vec!["b@example.test".parse().unwrap()],
        )
        .unwrap();
        let started = std::time::Instant::now();
        let r = mailer
            .send(SendMail {
                message_id: "<m@x>".into(),
                envelope,
                raw: b"Subject: x\r\n\r\nx\r\n".to_vec(),
            })
            .await
            .unwrap();
        assert!(r.is_err(), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }
}
