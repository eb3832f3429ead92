//! Email over HTTP against a real SMTP server started here (Debian's
//! python3-aiosmtpd, saving what it receives as a maildir): the mail of an
//! accepted invoice as the authority prescribes it, retries while the server
//! is down, the outbox without SMTP, and no mail lost to a kill -9.

use std::collections::HashMap;
use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::checkers::{pdftotext, zbarimg};
use crate::support::flow::{fast_launch, sim_url};

/// A python with aiosmtpd: `python3`, else the system's own (Debian's
/// packages land there even when another python3 is first on PATH).
fn python() -> &'static str {
    let found = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import aiosmtpd"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    found.expect("python3-aiosmtpd is required for the mail tests")
}

/// A port held bound but not listening: a connection to it is refused
/// (an SMTP server that is down), and no other test's server can take it
/// meanwhile (a port found free and let go was, once, taken by a parallel
/// test's server, and the "down" server answered).
fn reserved_port() -> (u16, socket2::Socket) {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    socket.bind(&any.into()).unwrap();
    let port = socket.local_addr().unwrap().as_socket().unwrap().port();
    (port, socket)
}

/// `python3 -m aiosmtpd -n` on a port, keeping every message in a maildir
/// (the export tests mail through it too).
pub(crate) struct Smtp {
    port: u16,
    /// Holds the port until the server starts.
    reserved: Option<socket2::Socket>,
    maildir: PathBuf,
    child: Option<Child>,
    _tmp: tempfile::TempDir,
}

impl Smtp {
    /// A port and a maildir, no server yet (an SMTP server that is down).
    fn down() -> Smtp {
        let tmp = tempfile::tempdir().unwrap();
        let (port, reserved) = reserved_port();
        Smtp {
            port,
            reserved: Some(reserved),
            maildir: tmp.path().join("maildir"),
            child: None,
            _tmp: tmp,
        }
    }

    pub(crate) fn up() -> Smtp {
        let mut s = Smtp::down();
        s.start();
        s
    }

    fn start(&mut self) {
        self.reserved = None;
        let child = Command::new(python())
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(format!("127.0.0.1:{}", self.port))
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&self.maildir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start aiosmtpd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "aiosmtpd did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server settings of an emisor that mails through this one.
    pub(crate) fn launch(&self, launch: Launch) -> Launch {
        launch
            .env("EMISOR_SMTP__HOST", "127.0.0.1")
            .env("EMISOR_SMTP__PORT", &self.port.to_string())
            .env("EMISOR_SMTP__STARTTLS", "false")
            .env(
                "EMISOR_SMTP__FROM",
                "Facturas Demo <facturas@emisor.example>",
            )
    }

    /// Every message received so far, parsed.
    fn messages(&self) -> Vec<Mail> {
        let mut files = Vec::new();
        for sub in ["new", "cur"] {
            if let Ok(dir) = std::fs::read_dir(self.maildir.join(sub)) {
                files.extend(dir.map(|e| e.unwrap().path()));
            }
        }
        parse_mails(&files)
    }

    /// Waits until `pred` holds for the messages received.
    fn wait_for(&self, within: Duration, pred: impl Fn(&[Mail]) -> bool) -> Vec<Mail> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.messages();
            if pred(&got) {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "mail not received within {within:?}: {} messages",
                got.len()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Smtp {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A message as python's `email` package reads it.
#[derive(Debug, Clone)]
struct Mail {
    message_id: String,
    subject: String,
    rcpt: String,
    /// (file name, content type, bytes)
    attachments: Vec<(String, String, Vec<u8>)>,
    text: String,
}

const PARSE: &str = r#"
import sys, json, base64, email
from email import policy
out = []
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        m = email.message_from_binary_file(f, policy=policy.default)
    atts, text = [], ''
    for part in m.walk():
        if part.is_multipart():
            continue
        if part.get_filename():
            atts.append([part.get_filename(), part.get_content_type(),
                         base64.b64encode(part.get_payload(decode=True)).decode()])
        elif part.get_content_type() == 'text/plain':
            text += part.get_content()
    out.append({'message_id': str(m['Message-ID'] or ''), 'subject': str(m['Subject'] or ''),
                'rcpt': str(m['X-RcptTo'] or ''), 'attachments': atts, 'text': text})
print(json.dumps(out))
"#;

fn parse_mails(files: &[PathBuf]) -> Vec<Mail> {
    if files.is_empty() {
        return Vec::new();
    }
    let out = Command::new(python())
        .args(["-c", PARSE])
        .args(files)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    parsed
        .into_iter()
        .map(|m| Mail {
            message_id: m["message_id"].as_str().unwrap().to_string(),
            subject: m["subject"].as_str().unwrap().to_string(),
            rcpt: m["rcpt"].as_str().unwrap().to_string(),
            attachments: m["attachments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    (
                        a[0].as_str().unwrap().to_string(),
                        a[1].as_str().unwrap().to_string(),
                        b64.decode(a[2].as_str().unwrap()).unwrap(),
                    )
                })
                .collect(),
            text: m["text"].as_str().unwrap().to_string(),
        })
        .collect()
}

/// The files of a ZIP, by name.
fn unzip(bytes: &[u8]) -> HashMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut out = HashMap::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).unwrap();
        let mut content = Vec::new();
        f.read_to_end(&mut content).unwrap();
        out.insert(f.name().to_string(), content);
    }
    out
}

fn schemas() -> PathBuf {
    std::env::var_os("EMISOR_SCHEMAS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/schemas"))
}

/// `xmllint --schema` of the AttachedDocument schema; the one tolerated
/// failure is the X.509 serial longer than xmllint's integers (the schemas
/// README's known quirk).
fn xmllint_attached(xml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ad.xml");
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schemas().join("maindoc/UBL-AttachedDocument-2.1.xsd"))
        .arg(&file)
        .output()
        .expect("xmllint");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !l.contains("X509SerialNumber"))
        .collect();
    assert!(errors.is_empty(), "xmllint: {stderr}");
    assert!(
        out.status.success() || stderr.contains("X509SerialNumber"),
        "{stderr}"
    );
}

/// `xmlsec1 --verify` with the certificate the document carries.
fn xmlsec_verify(xml: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.xml");
    std::fs::write(&path, xml).unwrap();
    let start =
        xml.find("<ds:X509Certificate>").ok_or("no certificate")? + "<ds:X509Certificate>".len();
    let end = xml[start..].find("</ds:X509Certificate>").ok_or("no end")? + start;
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        &xml[start..end]
    );
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, pem).unwrap();
    let out = Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&path)
        .output()
        .expect("xmlsec1");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

/// The `cbc:Description` texts of the container: the document, then the
/// authority's ApplicationResponse.
fn embedded(attached: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(attached).unwrap();
    let cbc = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";
    doc.descendants()
        .filter(|n| n.has_tag_name((cbc, "Description")))
        .map(|n| n.text().unwrap_or_default().to_string())
        .collect()
}

/// `1190.00` → `1.190,00`, as a Colombian document prints it.
fn printed(amount: &str) -> String {
    let (int, frac) = amount.split_once('.').unwrap_or((amount, "00"));
    let mut frac = frac.to_string();
    while frac.len() < 2 {
        frac.push('0');
    }
    let digits: Vec<char> = int.chars().collect();
    let mut out = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('.');
        }
        out.push(*c);
    }
    format!("{out},{}", &frac[..2])
}

/// The mailed PDF read as a reader would: the code, the total, an accented
/// place name, and the QR code naming the verification URL.
fn check_pdf(pdf: &[u8], data: &Value) {
    assert!(pdf.starts_with(b"%PDF-"));
    let text = pdftotext(pdf);
    let flat: String = text.split_whitespace().collect();
    let code = data["cufe"].as_str().unwrap();
    assert!(flat.contains(code), "code {code} not in\n{text}");
    let total = data["documento"]["total"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| data["documento"]["total"].to_string());
    assert!(
        text.contains(&printed(&total)),
        "total {total} not in\n{text}"
    );
    assert!(text.contains("Bogotá"), "{text}");
    assert_eq!(zbarimg(pdf), data["qr_url"].as_str().unwrap());
}

/// Issues an invoice synchronously; its record.
fn accepted_invoice(app: &TestApp) -> Value {
    let body = unique(examples::invoice());
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["id_estado_documento"], 2, "{res}");
    res["data"].clone()
}

fn doc_id(data: &Value) -> u64 {
    data["documento"]["id"].as_u64().unwrap()
}

fn logs(app: &TestApp, doc: u64) -> Vec<Value> {
    let (status, res) = json(app.get(
        &format!("/v1/api/email/logs/{doc}?limit=100"),
        &app.sk_test(),
    ));
    assert_eq!(status, 200, "{res}");
    res["data"]["items"].as_array().unwrap().clone()
}

fn log_of(app: &TestApp, doc: u64, id: u64) -> Value {
    logs(app, doc)
        .into_iter()
        .find(|l| l["id_correo"] == id)
        .unwrap_or_else(|| panic!("log {id} of document {doc}"))
}

/// Polls a document's emails until `pred` holds for all of them.
fn wait_logs(
    app: &TestApp,
    doc: u64,
    within: Duration,
    pred: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let l = logs(app, doc);
        if pred(&l) {
            return l;
        }
        assert!(Instant::now() < deadline, "logs of {doc}: {l:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn send(app: &TestApp, doc: u64, body: &Value) -> (u16, Value) {
    json(app.post(
        &format!("/v1/api/email/documento/{doc}"),
        &app.sk_test(),
        body,
    ))
}

#[test]
fn an_accepted_invoice_is_mailed_to_its_customer_as_the_authority_prescribes() {
    let smtp = Smtp::up();
    let app = TestApp::spawn_with(smtp.launch(Launch::default()));
    let data = accepted_invoice(&app);
    let id = doc_id(&data);
    let code = data["cufe"].as_str().unwrap().to_string();
    let number = format!(
        "{}{}",
        data["documento"]["prefijo"].as_str().unwrap(),
        data["documento"]["numero"].as_str().unwrap()
    );

    // Mailed by itself once accepted, to the customer of the request.
    let mails = smtp.wait_for(Duration::from_secs(30), |m| !m.is_empty());
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    assert_eq!(mail.rcpt, "cliente@example.test");
    let l = wait_logs(&app, id, Duration::from_secs(10), |l| {
        l.len() == 1 && l[0]["status"] == "sent"
    });
    let log = &l[0];
    assert_eq!(log["automatico"], true);
    assert_eq!(log["attempts"], 1);
    assert_eq!(log["message_id"], mail.message_id.as_str(), "{log}");
    assert!(
        mail.message_id.ends_with("@emisor.example>"),
        "{}",
        mail.message_id
    );
    // Subject: NIT;issuer name;number;document type code;trade name.
    let fields: Vec<&str> = mail.subject.split(';').collect();
    assert_eq!(fields.len(), 5, "{}", mail.subject);
    assert_eq!(fields[0], app.keys["nit"].as_str().unwrap());
    assert_eq!(fields[2], number, "{}", mail.subject);
    assert_eq!(fields[3], "01");
    assert_eq!(log["subject"], mail.subject.as_str());
    assert!(mail.text.contains(&code), "{}", mail.text);

    // One ZIP holding the signed AttachedDocument.
    assert_eq!(mail.attachments.len(), 1, "{:?}", mail.attachments);
    let (zip_name, content_type, zip) = &mail.attachments[0];
    assert_eq!(content_type, "application/zip");
    assert!(zip_name.ends_with(".zip"), "{zip_name}");
    assert!(zip.len() <= 2 * 1024 * 1024);
    let files = unzip(zip);
    let (ad_name, attached) = files
        .iter()
        .find(|(n, _)| n.starts_with("ad"))
        .unwrap_or_else(|| panic!("no AttachedDocument in {:?}", files.keys()));
    assert!(ad_name.ends_with(".xml"));
    let attached = String::from_utf8(attached.clone()).unwrap();
    xmllint_attached(&attached);
    xmlsec_verify(&attached).expect("the AttachedDocument's own signature");
    let inside = embedded(&attached);
    assert_eq!(inside.len(), 2, "the document and the ApplicationResponse");
    let stored_xml = app
        .get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test())
        .text()
        .unwrap();
    assert_eq!(inside[0], stored_xml, "the signed invoice as sent");
    xmlsec_verify(&inside[0]).expect("the embedded invoice's signature");
    let authority_ar = reqwest::blocking::get(format!(
        "{}/__sim/documents/{code}/application-response",
        sim_url(&app)
    ))
    .unwrap()
    .text()
    .unwrap();
    assert!(
        authority_ar.contains("<ApplicationResponse"),
        "{authority_ar}"
    );
    assert_eq!(
        inside[1], authority_ar,
        "the authority's own ApplicationResponse"
    );
    // And the PDF beside it.
    assert_eq!(files.len(), 2, "{:?}", files.keys());
    let (pdf_name, pdf) = files
        .iter()
        .find(|(n, _)| n.ends_with(".pdf"))
        .expect("the PDF");
    assert_eq!(pdf_name, &format!("{number}.pdf"));
    check_pdf(pdf, &data);
    assert!(log["nota"].is_null(), "{log}");

    // On demand, to other addresses; the list is newest first.
    let (status, res) = send(
        &app,
        id,
        &json!({"to": ["compras@cliente.example"], "cc": ["contabilidad@cliente.example"]}),
    );
    assert_eq!(status, 202, "{res}");
    let asked = res["data"]["id_correo"].as_u64().unwrap();
    assert_eq!(res["data"]["status"], "queued");
    assert_eq!(res["data"]["automatico"], false);
    let mails = smtp.wait_for(Duration::from_secs(30), |m| m.len() == 2);
    let second = mails
        .iter()
        .find(|m| m.rcpt.contains("compras@cliente.example"))
        .expect("the asked-for mail");
    assert!(
        second.rcpt.contains("contabilidad@cliente.example"),
        "{}",
        second.rcpt
    );
    let l = wait_logs(&app, id, Duration::from_secs(10), |l| {
        l.iter().all(|x| x["status"] == "sent")
    });
    assert_eq!(l[0]["id_correo"], asked, "newest first");
    assert_ne!(l[0]["message_id"], l[1]["message_id"]);

    // A sent email resent: a new email naming the first.
    let (status, res) = json(app.post(
        &format!("/v1/api/email/reenviar/{asked}"),
        &app.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 202, "{res}");
    assert_eq!(res["data"]["reenvio_de"], asked);
    smtp.wait_for(Duration::from_secs(30), |m| m.len() == 3);

    // Refusals change nothing.
    let (status, res) = send(&app, id, &json!({"to": ["not an address"]}));
    assert_eq!(status, 422, "{res}");
    assert_eq!(res["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(res["error"]["details"][0]["field"], "to[0]");
    let (status, res) = send(&app, id, &json!({"to": ["a@b.example"], "cc": ["x@"]}));
    assert_eq!(status, 422, "{res}");
    assert_eq!(res["error"]["details"][0]["field"], "cc[0]");
    let (status, res) = send(&app, id, &json!({"to": "a@b.example"}));
    assert_eq!(status, 400, "{res}");
    assert_error(
        app.post("/v1/api/email/documento/999999", &app.sk_test(), &json!({})),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.post("/v1/api/email/reenviar/999999", &app.sk_test(), &json!({})),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.get("/v1/api/email/logs/999999", &app.sk_test()),
        404,
        "NOT_FOUND",
    );
    assert_eq!(logs(&app, id).len(), 3);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(smtp.messages().len(), 3, "nothing more was sent");
}

#[test]
fn an_smtp_server_that_is_down_is_retried_and_logged_then_the_mail_goes_once() {
    let mut smtp = Smtp::down();
    // Mail retries 30, 60, 120, 240, 480 s scaled by 0.01.
    let app = TestApp::spawn_with(smtp.launch(fast_launch()));
    let data = accepted_invoice(&app);
    let id = doc_id(&data);
    let started = Instant::now();
    let (status, res) = send(&app, id, &json!({"to": ["compras@cliente.example"]}));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "an SMTP server that is down does not slow the answer: {:?}",
        started.elapsed()
    );
    assert_eq!(status, 202, "{res}");
    let asked = res["data"]["id_correo"].as_u64().unwrap();

    // Failed attempts are logged while it stays queued.
    let l = wait_logs(&app, id, Duration::from_secs(20), |l| {
        l.iter().all(|x| x["attempts"].as_u64() >= Some(2))
    });
    for x in &l {
        assert_eq!(x["status"], "queued", "{x}");
        assert!(
            x["last_error"].as_str().is_some_and(|e| !e.is_empty()),
            "{x}"
        );
        let tries = x["intentos"].as_array().unwrap();
        assert!(tries
            .iter()
            .all(|t| t["ok"] == false && t["error"].is_string()));
    }

    smtp.start();
    let l = wait_logs(&app, id, Duration::from_secs(30), |l| {
        l.len() == 2 && l.iter().all(|x| x["status"] == "sent")
    });
    let mine = log_of(&app, id, asked);
    assert!(mine["attempts"].as_u64().unwrap() >= 3, "{mine}");
    let tries = mine["intentos"].as_array().unwrap();
    assert_eq!(tries.last().unwrap()["ok"], true);
    assert!(mine["last_error"].is_null());
    // Sent once each: the retries before did not reach anyone.
    std::thread::sleep(Duration::from_millis(800));
    let mails = smtp.messages();
    assert_eq!(
        mails.len(),
        2,
        "{:?}",
        mails.iter().map(|m| &m.message_id).collect::<Vec<_>>()
    );
    for x in &l {
        let id = x["message_id"].as_str().unwrap();
        assert_eq!(
            mails.iter().filter(|m| m.message_id == id).count(),
            1,
            "{id}"
        );
    }
}

#[test]
fn after_the_last_retry_the_log_says_failed_and_a_resend_tries_again() {
    let mut smtp = Smtp::down();
    let app = TestApp::spawn_with(
        smtp.launch(fast_launch())
            .env("EMISOR_RESILIENCE__MAIL_RETRY_DELAYS_S", "[10, 20]"),
    );
    let data = accepted_invoice(&app);
    let id = doc_id(&data);
    // The automatic email: first attempt and two retries, then failed.
    let l = wait_logs(&app, id, Duration::from_secs(20), |l| {
        l.len() == 1 && l[0]["status"] == "failed"
    });
    let failed = &l[0];
    assert_eq!(failed["attempts"], 3, "{failed}");
    assert_eq!(failed["intentos"].as_array().unwrap().len(), 3);
    let mail_id = failed["id_correo"].as_u64().unwrap();
    let message_id = failed["message_id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(log_of(&app, id, mail_id)["attempts"], 3, "no more attempts");
    // The console's overview lists it as needing a person.
    let cookie = crate::console::harness::http_sign_in(&app, &app.sk_test()).unwrap();
    let (status, html) = crate::console::harness::page(&app, &cookie, "/console");
    assert_eq!(status, 200);
    let section = html
        .split("Correos que no se pudieron enviar")
        .nth(1)
        .unwrap_or_default();
    assert!(
        section.contains(&format!("/console/documentos/{id}")),
        "{section}"
    );

    smtp.start();
    let (status, res) = json(app.post(
        &format!("/v1/api/email/reenviar/{mail_id}"),
        &app.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 202, "{res}");
    assert_eq!(
        res["data"]["id_correo"], mail_id,
        "the same email, queued again"
    );
    assert_eq!(res["data"]["status"], "queued");
    let mails = smtp.wait_for(Duration::from_secs(30), |m| !m.is_empty());
    assert_eq!(mails[0].message_id, message_id, "the same message");
    let sent = wait_logs(&app, id, Duration::from_secs(10), |l| {
        l[0]["status"] == "sent"
    });
    assert_eq!(sent[0]["attempts"], 4);
}

#[test]
fn without_smtp_the_mail_is_an_eml_file_in_the_outbox() {
    let app = TestApp::spawn();
    let data = accepted_invoice(&app);
    let id = doc_id(&data);
    let l = wait_logs(&app, id, Duration::from_secs(30), |l| {
        l.len() == 1 && l[0]["status"] == "sent"
    });
    let outbox = app.dir.join("outbox");
    let files: Vec<PathBuf> = std::fs::read_dir(&outbox)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "eml"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let mails = parse_mails(&files);
    assert_eq!(mails[0].message_id, l[0]["message_id"].as_str().unwrap());
    let files = unzip(&mails[0].attachments[0].2);
    assert!(
        files.keys().any(|n| n.starts_with("ad")),
        "{:?}",
        files.keys()
    );
}

/// The names of a maildir's messages by Message-ID, with how many times each came.
fn counts(mails: &[Mail]) -> HashMap<String, usize> {
    let mut c = HashMap::new();
    for m in mails {
        *c.entry(m.message_id.clone()).or_insert(0) += 1;
    }
    c
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_kill_9_with_20_mails_queued_loses_none() {
    let mut smtp = Smtp::down();
    let launch = smtp.launch(fast_launch());
    let mut app = TestApp::spawn_with(launch.clone());
    let id = doc_id(&accepted_invoice(&app));
    let mut asked = Vec::new();
    for i in 0..20 {
        let (status, res) = send(
            &app,
            id,
            &json!({"to": [format!("buzon{i}@cliente.example")]}),
        );
        assert_eq!(status, 202, "{res}");
        asked.push(res["data"]["id_correo"].as_u64().unwrap());
    }
    app.kill();

    smtp.start();
    let dir = app.dir.clone();
    let app = TestApp::start_in(&dir, launch);
    let l = wait_logs(&app, id, Duration::from_secs(60), |l| {
        l.len() == 21 && l.iter().all(|x| x["status"] == "sent")
    });
    for a in &asked {
        assert!(l.iter().any(|x| x["id_correo"] == *a), "email {a} kept");
    }
    let mails = smtp.wait_for(Duration::from_secs(10), |m| m.len() >= 21);
    let c = counts(&mails);
    for x in &l {
        let mid = x["message_id"].as_str().unwrap();
        assert!(c.contains_key(mid), "{mid} delivered");
    }
    eprintln!(
        "kill -9 with 20 queued: {} messages for {} emails",
        mails.len(),
        c.len()
    );
    assert_eq!(c.len(), 21);
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_kill_9_while_mails_go_out_delivers_each_message_id_at_least_once() {
    let smtp = Smtp::up();
    let launch = smtp.launch(fast_launch());
    let mut app = TestApp::spawn_with(launch.clone());
    let id = doc_id(&accepted_invoice(&app));
    for i in 0..20 {
        let (status, res) = send(
            &app,
            id,
            &json!({"to": [format!("buzon{i}@cliente.example")]}),
        );
        assert_eq!(status, 202, "{res}");
    }
    // Killed while the queue drains: some sent, some not, maybe one sent
    // and not yet logged.
    app.kill();
    let dir = app.dir.clone();
    let app = TestApp::start_in(&dir, launch);
    let l = wait_logs(&app, id, Duration::from_secs(60), |l| {
        l.len() == 21 && l.iter().all(|x| x["status"] == "sent")
    });
    let mails = smtp.wait_for(Duration::from_secs(10), |m| m.len() >= 21);
    let c = counts(&mails);
    for x in &l {
        let mid = x["message_id"].as_str().unwrap();
        assert!(c.contains_key(mid), "{mid} delivered");
    }
    assert_eq!(c.len(), 21, "only the logged messages");
    eprintln!(
        "kill -9 while sending: {} messages for 21 emails ({} resent after the restart)",
        mails.len(),
        mails.len() - 21
    );
}

#[test]
fn a_document_accepted_before_the_application_response_was_kept_is_mailed_with_its_xml() {
    if !sled_only("it edits the stopped server's sled files") {
        return;
    }
    let smtp = Smtp::up();
    let launch = smtp.launch(Launch::default());
    let mut app = TestApp::spawn_with(launch.clone());
    let data = accepted_invoice(&app);
    let id = doc_id(&data);
    smtp.wait_for(Duration::from_secs(30), |m| m.len() == 1);
    wait_logs(&app, id, Duration::from_secs(10), |l| {
        l[0]["status"] == "sent"
    });
    app.stop();
    // As a data dir written before this change: no ApplicationResponse.
    {
        let db = sled::open(app.dir.join("sled")).unwrap();
        db.open_tree("application_responses")
            .unwrap()
            .clear()
            .unwrap();
        db.flush().unwrap();
    }
    let dir = app.dir.clone();
    let app = TestApp::start_in(&dir, launch);
    let (status, res) = send(&app, id, &json!({}));
    assert_eq!(status, 202, "{res}");
    assert_eq!(
        res["data"]["to"],
        json!(["cliente@example.test"]),
        "the customer"
    );
    let mails = smtp.wait_for(Duration::from_secs(30), |m| m.len() == 2);
    let l = wait_logs(&app, id, Duration::from_secs(10), |l| {
        l[0]["status"] == "sent"
    });
    let note = l[0]["nota"].as_str().expect("the log says why");
    assert!(note.contains("ApplicationResponse"), "{note}");
    let mail = mails
        .iter()
        .find(|m| m.message_id == l[0]["message_id"].as_str().unwrap())
        .unwrap();
    let files = unzip(&mail.attachments[0].2);
    assert!(
        !files.keys().any(|n| n.starts_with("ad")),
        "{:?}",
        files.keys()
    );
    let pdf = files
        .iter()
        .find(|(n, _)| n.ends_with(".pdf"))
        .map(|(_, b)| b)
        .expect("the PDF");
    check_pdf(pdf, &data);
    let stored_xml = app
        .get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test())
        .text()
        .unwrap();
    let xml = files
        .values()
        .find(|b| b.starts_with(b"<?xml"))
        .expect("the signed XML");
    assert_eq!(String::from_utf8_lossy(xml), stored_xml);
    xmlsec_verify(&stored_xml).unwrap();
}

#[test]
fn a_document_accepted_as_already_processed_says_so_not_that_it_is_old() {
    if !sled_only("it edits the stopped server's sled files") {
        return;
    }
    let smtp = Smtp::up();
    let launch = smtp.launch(Launch::default());
    let mut app = TestApp::spawn_with(launch.clone());
    let data = accepted_invoice(&app);
    let id = doc_id(&data);
    smtp.wait_for(Duration::from_secs(30), |m| m.len() == 1);
    let first = wait_logs(&app, id, Duration::from_secs(10), |l| {
        l[0]["status"] == "sent"
    });
    assert!(first[0]["nota"].is_null(), "{}", first[0]);
    app.stop();
    // As an acceptance by the authority's "Documento procesado
    // anteriormente" stores it: no ApplicationResponse, and the reason.
    {
        let db = sled::open(app.dir.join("sled")).unwrap();
        let key = id.to_be_bytes();
        db.open_tree("application_responses")
            .unwrap()
            .remove(key)
            .unwrap();
        let documents = db.open_tree("documents").unwrap();
        let raw = documents.get(key).unwrap().expect("the record");
        let tree = emisor_store::trees::DOCUMENTS;
        let mut record: Value = emisor_store::codec::decode(tree, &raw).unwrap();
        record["application_response_missing"] = json!("already_processed");
        let value = emisor_store::codec::encode(tree, &record).unwrap();
        documents.insert(key, value).unwrap();
        db.flush().unwrap();
    }
    let dir = app.dir.clone();
    let app = TestApp::start_in(&dir, launch);
    let (status, res) = send(&app, id, &json!({}));
    assert_eq!(status, 202, "{res}");
    let mails = smtp.wait_for(Duration::from_secs(30), |m| m.len() == 2);
    let l = wait_logs(&app, id, Duration::from_secs(10), |l| {
        l[0]["status"] == "sent"
    });
    let note = l[0]["nota"].as_str().expect("the log says why");
    assert!(note.contains("already been processed"), "{note}");
    assert!(
        !note.contains("before the authority's ApplicationResponse was kept"),
        "{note}"
    );
    let mail = mails
        .iter()
        .find(|m| m.message_id == l[0]["message_id"].as_str().unwrap())
        .unwrap();
    let files = unzip(&mail.attachments[0].2);
    assert!(
        !files.keys().any(|n| n.starts_with("ad")),
        "{:?}",
        files.keys()
    );
    assert!(
        files.values().any(|b| b.starts_with(b"<?xml")),
        "the signed XML"
    );
    assert!(files.keys().any(|n| n.ends_with(".pdf")), "the PDF");
}
