//! A copy of a running server taken while it issues (issue 53, decisions.md
//! "Data commands"): documents of every family and state, then either
//! `POST /admin/export` → `emisor admin import`, or `POST /admin/backup` →
//! `verify` → `restore`. The copy answers every read as the original did at
//! the copy's point (PDFs by their text), issues nothing until the
//! operator confirms the next number, still refuses a used
//! `referencia_externa`, and a document queued at the point asks the
//! authority first and is accepted once.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::email::Smtp;
use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::checkers::pdftotext;
use crate::support::events::{accepted_event, key_of, new_company, BUYER_NIT};
use crate::support::external_sim::ExternalSim;
use crate::support::flow::*;
use crate::support::payroll::{employee_number, monthly, salary_replacement};

/// `emisor admin ARGS` with the key of `key_of`'s data dir and the store
/// named by `store`.
fn admin_on(
    key_of: &std::path::Path,
    store: Vec<(String, String)>,
    args: &[&str],
) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("admin")
        .args(args)
        .env(MASTER_KEY_ENV, master_key_env(key_of))
        .envs(store)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `emisor admin --data-dir INTO import --from FROM` with the key of
/// `key_of`'s data dir.
fn import_into(
    key_of: &std::path::Path,
    into: &std::path::Path,
    from: &std::path::Path,
) -> (bool, String, String) {
    admin_command(
        key_of,
        &[
            "--data-dir",
            into.to_str().unwrap(),
            "import",
            "--from",
            from.to_str().unwrap(),
        ],
    )
}

fn ok_post(app: &TestApp, path: &str, key: &str, body: &Value) -> Value {
    let (status, res) = json(app.post(path, key, body));
    assert_eq!(status, 200, "{path}: {res}");
    res["data"].clone()
}

fn doc_id(data: &Value) -> u64 {
    data["documento"]["id"]
        .as_u64()
        .or_else(|| data["id"].as_u64())
        .unwrap_or_else(|| panic!("no id in {data}"))
}

/// What the original answered, path by path.
type Reads = Vec<(String, String, Vec<u8>)>;

/// The admin token's reads are named by this instead of a key.
const ADMIN: &str = "admin";

fn read(app: &TestApp, key: &str, path: &str) -> (String, String, Vec<u8>) {
    let res = if key == ADMIN {
        app.admin_get(path)
    } else {
        app.get(path, key)
    };
    assert_eq!(res.status().as_u16(), 200, "{path}");
    (
        path.to_string(),
        key.to_string(),
        res.bytes().unwrap().to_vec(),
    )
}

/// Every read endpoint of the documents and lists named.
fn reads(app: &TestApp, paths: &[(String, String)]) -> Reads {
    paths
        .iter()
        .map(|(key, path)| read(app, key, path))
        .collect()
}

/// A list's items but the document still moving (the one queued at the
/// point, which the original and the copy each go on sending).
fn without(list: &[u8], moving: u64) -> Value {
    let mut v: Value = serde_json::from_slice(list).unwrap();
    if let Some(items) = v["data"]["items"].as_array_mut() {
        items.retain(|i| i["id"] != moving);
    }
    v
}

fn same(original: &Reads, copy: &TestApp, moving: u64) {
    for (path, key, bytes) in original {
        let (_, _, now) = read(copy, key, path);
        if path.contains("?limit=") {
            assert_eq!(
                without(bytes, moving),
                without(&now, moving),
                "{path} differs in the copy"
            );
        } else if path.ends_with("/pdf") || path.ends_with("/tirilla") {
            // A PDF carries its rendering's date and id: its text is compared.
            assert_eq!(
                pdftotext(bytes),
                pdftotext(&now),
                "{path} differs in the copy"
            );
        } else {
            assert!(
                *bytes == now,
                "{path} differs in the copy:\n{}\n{}",
                String::from_utf8_lossy(bytes),
                String::from_utf8_lossy(&now)
            );
        }
    }
}

/// Company 1's webhook deliveries logged before `t` (later ones are the
/// original's or the copy's own).
fn deliveries_before(app: &TestApp, t: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let (status, log) = json(app.admin_get("/admin/companies/1/webhooks"));
    assert_eq!(status, 200, "{log}");
    let before: Vec<Value> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| chrono::DateTime::parse_from_rfc3339(e["at"].as_str().unwrap()).unwrap() < t)
        .cloned()
        .collect();
    assert!(!before.is_empty(), "{log}");
    before
}

#[derive(Clone, Copy, Debug)]
enum Copy {
    ExportImport,
    BackupRestore,
}

fn a_copy_taken_while_issuing_serves_every_family_as_at_its_point(how: Copy) {
    let sim = ExternalSim::start();
    let smtp = Smtp::up();
    let root = tempfile::tempdir().unwrap();
    let allowed = root.path().join("copias");
    std::fs::create_dir(&allowed).unwrap();
    let launch = smtp.launch(
        fast_launch()
            .env("EMISOR_AUTHORITY__URL", &sim.service_url())
            .env("EMISOR_BACKUP__DIR", allowed.to_str().unwrap()),
    );
    let mut app = TestApp::spawn_with(launch.clone());
    let key = app.sk_test();
    // The company's webhook hears every change; its deliveries are logged.
    let (hook, _heard) = crate::webhooks::receiver(0);
    let (status, res) = json(
        app.client
            .patch(format!("{}/admin/companies/1", app.url))
            .bearer_auth(app.admin_token())
            .json(&json!({"webhook_url": hook}))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "{res}");
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    let other = key_of(&new_company(&app, "901555001", "Otra S.A.S."));
    let mut paths: Vec<(String, String)> = Vec::new();
    let mut add = |key: &str, path: String| paths.push((key.to_string(), path));

    // Invoices and notes: accepted (mailed), a draft, credit and debit notes.
    let mut referenced = unique(examples::invoice());
    referenced["referencia_externa"] = json!("REF-EXPORT-1");
    let invoice = ok_post(&app, "/v1/api/facturacion", &key, &referenced);
    let invoice_id = doc_id(&invoice);
    let cufe = invoice["cufe"].as_str().unwrap().to_string();
    let mut draft = unique(examples::invoice());
    draft["transmit"] = json!(false);
    let mut invoicing = vec![
        invoice_id,
        doc_id(&ok_post(&app, "/v1/api/facturacion", &key, &draft)),
    ];
    for note in [examples::credit_note(), examples::debit_note()] {
        let body = unique(examples::with_reference(note, invoice_id));
        invoicing.push(doc_id(&ok_post(&app, "/v1/api/facturacion", &key, &body)));
    }
    // Support documents and POS, each with its adjustment.
    let support = doc_id(&ok_post(
        &app,
        "/v1/api/facturacion",
        &key,
        &unique(examples::support_document()),
    ));
    let support_adj = unique(examples::with_reference(
        examples::support_adjustment(),
        support,
    ));
    let support_adj = doc_id(&ok_post(&app, "/v1/api/facturacion", &key, &support_adj));
    let pos = doc_id(&ok_post(
        &app,
        "/v1/api/facturacion",
        &key,
        &unique(examples::pos()),
    ));
    let pos_adj = unique(examples::with_reference(examples::pos_adjustment(), pos));
    let pos_adj = doc_id(&ok_post(&app, "/v1/api/facturacion", &key, &pos_adj));
    // Payroll and its adjustment.
    let employee = employee_number();
    let payroll = ok_post(&app, "/v1/api/nomina/enviar", &key, &monthly(&employee));
    let replace = salary_replacement(payroll["cune"].as_str().unwrap(), &employee);
    let adjustment = ok_post(&app, "/v1/api/nomina/ajuste", &key, &replace);
    // The buyer's events on the invoice, and its registration as a title.
    for event in ["acuse-recibo", "recibo-bien", "aceptacion-expresa"] {
        accepted_event(
            &app,
            &buyer,
            &format!("eventos/{event}"),
            json!({"cufe": cufe}),
        );
    }
    let (status, reg) = json(app.post(
        "/v1/api/registry/registrar-evento",
        &key,
        &json!({"cufe": cufe, "codigo_evento": "035"}),
    ));
    assert_eq!(status, 200, "{reg}");
    // Rejected, then a dead letter, then one queued at the point.
    sim_mode_at(&sim.base, json!({"mode": "reject"}));
    let rejected = doc_id(&post_async(&app, &examples::invoice())["data"]);
    wait_state(&app, rejected, 4, Duration::from_secs(20));
    sim_mode_at(&sim.base, json!({"mode": "down"}));
    let dead = doc_id(&post_async(&app, &examples::invoice())["data"]);
    wait_state(&app, dead, 6, Duration::from_secs(30));
    let queued = post_async(&app, &examples::invoice())["data"].clone();
    let (queued_id, queued_code) = (
        doc_id(&queued),
        queued["cufe"].as_str().unwrap().to_string(),
    );
    invoicing.extend([rejected, dead]);
    // The accepted invoice's automatic mail went out.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, logs) = json(app.get(&format!("/v1/api/email/logs/{invoice_id}?limit=100"), &key));
        let items = logs["data"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if items
            .iter()
            .any(|l| l["estado"] == "sent" || l["status"] == "sent")
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not mailed: {logs}");
        std::thread::sleep(Duration::from_millis(100));
    }

    for id in &invoicing {
        for what in ["status?id_empresa=1", "xml", "zip", "pdf"] {
            add(&key, format!("/v1/api/facturacion/{id}/{what}"));
        }
    }
    for id in [support, support_adj] {
        add(&key, format!("/v1/api/documentos-soporte/{id}"));
        add(&key, format!("/v1/api/documentos-soporte/{id}/xml"));
        add(&key, format!("/v1/api/documentos-soporte/{id}/pdf"));
    }
    for id in [pos, pos_adj] {
        add(&key, format!("/v1/api/pos/{id}"));
        add(&key, format!("/v1/api/pos/{id}/tirilla"));
    }
    for p in [&payroll, &adjustment] {
        let id = p["id"].as_u64().unwrap_or_else(|| panic!("{p}"));
        for what in ["", "/xml", "/zip", "/pdf"] {
            add(&key, format!("/v1/api/nomina/{id}{what}"));
        }
    }
    add(&key, format!("/v1/api/email/logs/{invoice_id}?limit=100"));
    add(&key, format!("/v1/api/registry/hoja-de-vida/{cufe}"));
    add(&buyer, format!("/v1/api/eventos/documentos/{cufe}"));
    add(&buyer, "/v1/api/eventos/documentos?limit=100".to_string());
    add(&key, "/v1/api/registry/facturas-elegibles".to_string());
    add(ADMIN, "/admin/companies/1".to_string());
    add(ADMIN, "/admin/companies/1/resoluciones".to_string());
    add(ADMIN, "/admin/companies/1/api-keys".to_string());
    for list in [
        "facturacion",
        "documentos-soporte",
        "pos",
        "nomina/listar",
        "clientes",
    ] {
        add(&key, format!("/v1/api/{list}?limit=100"));
    }

    // The copy, while another company issues.
    let stop = Arc::new(AtomicBool::new(false));
    let issuing = {
        let (stop, url, other) = (stop.clone(), app.url.clone(), other.clone());
        std::thread::spawn(move || {
            let client = client();
            let mut issued = 0;
            while !stop.load(Ordering::Relaxed) {
                let mut body = unique(examples::invoice());
                body["transmit"] = json!(false);
                body["customer"] = examples::natural_person();
                let res = client
                    .post(format!("{url}/v1/api/facturacion"))
                    .header("X-Api-Key", &other)
                    .json(&body)
                    .send()
                    .unwrap();
                let status = res.status().as_u16();
                assert_eq!(status, 200, "{}", res.text().unwrap_or_default());
                issued += 1;
            }
            issued
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    // Deliveries logged before this are on disk well before the point.
    let before_copy = chrono::Utc::now();
    std::thread::sleep(Duration::from_millis(300));
    let copied = match how {
        Copy::ExportImport => {
            let (status, res) =
                json(app.admin_post("/admin/export", &json!({"destino": "todo.jsonl"})));
            assert_eq!(status, 201, "{res}");
            assert!(res["data"]["documents"].as_u64().unwrap() >= 12, "{res}");
            assert!(res["data"]["pause_ms"].as_f64().unwrap() >= 0.0, "{res}");
            allowed.join("todo.jsonl")
        }
        Copy::BackupRestore => {
            let (status, res) = json(app.admin_post("/admin/backup", &json!({"destino": "punto"})));
            assert_eq!(status, 201, "{res}");
            allowed.join("punto")
        }
    };
    // On PostgreSQL the CLI reads the database itself too, at a point of
    // its own, while the server issues.
    let direct = root.path().join("directo.jsonl");
    if on_postgres() {
        let (ok, out, err) = admin_on(
            &app.dir,
            store_env(&app.dir),
            &[
                "--data-dir",
                root.path().join("sin-servidor").to_str().unwrap(),
                "export",
                "--to",
                direct.to_str().unwrap(),
            ],
        );
        assert!(ok, "{err}");
        let view: Value = serde_json::from_str(&out).unwrap();
        assert!(view["documents"].as_u64().unwrap() >= 12, "{view}");
    }
    stop.store(true, Ordering::Relaxed);
    assert!(
        issuing.join().unwrap() > 0,
        "nothing issued during the copy"
    );
    let answered = reads(&app, &paths);
    let delivered = deliveries_before(&app, before_copy);
    if let Copy::ExportImport = how {
        // Over HTTP under [backup] dir only, and never over a file.
        let outside = root.path().join("fuera.jsonl");
        for destino in ["todo.jsonl", "../fuera.jsonl", outside.to_str().unwrap()] {
            assert_error(
                app.admin_post("/admin/export", &json!({"destino": destino})),
                422,
                "VALIDATION_ERROR",
            );
        }
        assert!(!outside.exists());
        // The CLI finds the running server by its `listening` file.
        let data = app.dir.to_str().unwrap();
        let by_cli = allowed.join("cli.jsonl");
        let (ok, out, err) = admin_command(
            &app.dir,
            &[
                "--data-dir",
                data,
                "export",
                "--to",
                by_cli.to_str().unwrap(),
            ],
        );
        assert!(ok && out.contains("\"records\""), "{err}");
        let (ok, _, err) = admin_command(
            &app.dir,
            &[
                "--data-dir",
                data,
                "export",
                "--to",
                outside.to_str().unwrap(),
            ],
        );
        assert!(!ok && err.contains("[backup] dir"), "{err}");
    }

    // The original goes on: the queued document is sent, one more numbered.
    sim_mode_at(&sim.base, json!({"mode": "up"}));
    wait_state(&app, queued_id, 2, Duration::from_secs(30));
    ok_post(
        &app,
        "/v1/api/facturacion",
        &key,
        &unique(examples::invoice()),
    );
    let original_next = next_number(&app, "fe");
    app.stop();
    sim_mode_at(&sim.base, json!({"mode": "down"}));
    let sent_before = sim_stats_at(&sim.base);

    let copy_dir = root.path().join("copia");
    let c = copy_dir.to_str().unwrap();
    let (ok, out, err) = match how {
        Copy::ExportImport => {
            // Refused into a data dir that holds anything.
            let (ok, _, err) = admin_command(
                &app.dir,
                &[
                    "--data-dir",
                    app.dir.to_str().unwrap(),
                    "import",
                    "--from",
                    copied.to_str().unwrap(),
                ],
            );
            assert!(!ok && err.contains("not empty"), "{err}");
            admin_command(
                &app.dir,
                &[
                    "--data-dir",
                    c,
                    "import",
                    "--from",
                    copied.to_str().unwrap(),
                ],
            )
        }
        Copy::BackupRestore => {
            let (ok, report, err) =
                admin_command(&app.dir, &["verify", "--from", copied.to_str().unwrap()]);
            assert!(ok, "{report} {err}");
            admin_command(
                &app.dir,
                &[
                    "restore",
                    "--from",
                    copied.to_str().unwrap(),
                    "--data-dir",
                    c,
                ],
            )
        }
    };
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(
        report["jobs_marked_in_flight"].as_u64().unwrap() >= 1,
        "{report}"
    );

    let mut back = TestApp::start_in(
        &copy_dir,
        launch
            .clone()
            .env(MASTER_KEY_ENV, &master_key_env(&app.dir)),
    );
    back.keys = app.keys.clone();
    same(&answered, &back, queued_id);
    assert_eq!(deliveries_before(&back, before_copy), delivered);
    if on_postgres() {
        // The CLI's export of the database imports into a sled data dir
        // that serves the same.
        let sled_dir = root.path().join("copia-sled");
        let sled = vec![("EMISOR_STORE__ENGINE".to_string(), "sled".to_string())];
        let (ok, _, err) = admin_on(
            &app.dir,
            sled.clone(),
            &[
                "--data-dir",
                sled_dir.to_str().unwrap(),
                "import",
                "--from",
                direct.to_str().unwrap(),
            ],
        );
        assert!(ok, "{err}");
        let mut on_sled = TestApp::start_in(
            &sled_dir,
            launch
                .clone()
                .env(MASTER_KEY_ENV, &master_key_env(&app.dir))
                .env("EMISOR_STORE__ENGINE", "sled"),
        );
        on_sled.keys = app.keys.clone();
        same(&answered, &on_sled, queued_id);
        on_sled.stop();
    }

    // Nothing numbered until the operator confirms; a used reference is still taken.
    let res = back.post("/v1/api/facturacion", &key, &unique(examples::invoice()));
    assert_error(res, 409, "INVALID_STATE");
    let mut again = unique(examples::invoice());
    again["referencia_externa"] = json!("REF-EXPORT-1");
    let (status, res) = json(back.post("/v1/api/facturacion", &key, &again));
    assert_eq!(status, 409, "{res}");
    let (_, hold) = json(back.admin_get("/admin/numeraciones-retenidas"));
    let setp = hold["data"]["held"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["prefix"] == "SETP" && n["company_id"] == 1)
        .cloned()
        .unwrap_or_else(|| panic!("{hold}"));
    let confirm = format!(
        "/admin/companies/{}/resoluciones/{}/confirmar",
        setp["company_id"], setp["resolution_id"]
    );
    let (status, res) = json(back.admin_post(&confirm, &json!({"siguiente": original_next})));
    assert_eq!(status, 200, "{res}");

    // The authority back: the queued document asks first, and is accepted once.
    sim_mode_at(&sim.base, json!({"mode": "up"}));
    wait_state(&back, queued_id, 2, Duration::from_secs(30));
    let stats = sim_stats_at(&sim.base);
    assert_eq!(stats["accepted"][&queued_code]["received"], 1, "{stats}");
    assert!(
        stats["calls"]["GetStatus"].as_u64().unwrap_or(0)
            > sent_before["calls"]["GetStatus"].as_u64().unwrap_or(0),
        "{stats}"
    );
    let next = ok_post(
        &back,
        "/v1/api/facturacion",
        &key,
        &unique(examples::invoice()),
    );
    assert_eq!(
        next["documento"]["numero"].as_str().unwrap(),
        original_next.to_string(),
        "{next}"
    );
}

/// On PostgreSQL the server's export (one snapshot) is imported into a
/// database, and the CLI's own export of the database into a sled data dir.
#[test]
fn an_export_taken_while_issuing_imports_into_a_data_dir_that_serves_its_point() {
    a_copy_taken_while_issuing_serves_every_family_as_at_its_point(Copy::ExportImport);
}

#[test]
fn a_backup_taken_while_issuing_restores_every_family_as_at_its_point() {
    if !sled_only("a running server's export copies the sled store at one point") {
        return;
    }
    a_copy_taken_while_issuing_serves_every_family_as_at_its_point(Copy::BackupRestore);
}

#[test]
fn an_export_of_a_stopped_data_dir_gzipped_or_not_imports_and_another_key_or_a_cut_file_is_refused()
{
    let root = tempfile::tempdir().unwrap();
    let mut app = TestApp::spawn();
    let key = app.sk_test();
    ok_post(
        &app,
        "/v1/api/facturacion",
        &key,
        &unique(examples::invoice()),
    );
    app.stop();
    let data = app.dir.to_str().unwrap();
    let file = root.path().join("datos.jsonl");
    let f = file.to_str().unwrap();
    let (ok, out, err) = admin_command(&app.dir, &["--data-dir", data, "export", "--to", f]);
    assert!(ok, "{err}");
    let view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(view["documents"], 1, "{view}");
    // Never over a file.
    let (ok, _, err) = admin_command(&app.dir, &["--data-dir", data, "export", "--to", f]);
    assert!(!ok && err.contains("exists"), "{err}");
    // Gzipped when its name says so, and read back either way.
    let gz = root.path().join("datos.jsonl.gz");
    let (ok, _, err) = admin_command(
        &app.dir,
        &["--data-dir", data, "export", "--to", gz.to_str().unwrap()],
    );
    assert!(ok, "{err}");
    let packed = std::fs::read(&gz).unwrap();
    assert_eq!(packed[..2], [0x1f, 0x8b]);
    assert!(packed.len() < std::fs::metadata(&file).unwrap().len() as usize / 2);
    let unpacked = root.path().join("desde-gz");
    let (ok, out, err) = import_into(&app.dir, &unpacked, &gz);
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["import"]["documents"], 1, "{report}");
    let text = std::fs::read_to_string(&file).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["format"], "emisor-export", "{header}");
    assert_eq!(header["version"], 1, "{header}");

    // Another master key: refused, nothing left.
    let other = root.path().join("otra");
    let out = Command::new(BIN)
        .args([
            "admin",
            "--data-dir",
            other.to_str().unwrap(),
            "import",
            "--from",
            f,
        ])
        .env(
            MASTER_KEY_ENV,
            "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("master key"), "{err}");
    assert!(!other.exists());
    // A file cut short: the line named, nothing left.
    let cut = root.path().join("cortado.jsonl");
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&cut, lines[..lines.len() - 1].join("\n")).unwrap();
    let (ok, _, err) = import_into(&app.dir, &other, &cut);
    assert!(
        !ok && err.contains("line") && err.contains("cut short"),
        "{err}"
    );
    assert!(!other.exists());
    // Into an empty dir the operator made: it stays, empty.
    std::fs::create_dir(&other).unwrap();
    let (ok, _, err) = import_into(&app.dir, &other, &cut);
    assert!(!ok, "{err}");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0, "{err}");
}
