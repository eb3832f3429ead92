//! Electronic payroll over HTTP (spec 2.12, 4.5): issued, signed and
//! transmitted to the in-process simulator over real SOAP; each XML checked
//! by xmllint against the authority's 1.0.6 schemas and by xmlsec1, its
//! CUNE recomputed here from the XML (SHA-384 of the concatenation, not the
//! server's function).

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha384};

use crate::support::app::*;
use crate::support::checkers::{pdftotext, schemas_dir, tool, zbarimg};
use crate::support::flow::{sim_mode, sim_stats};
use crate::support::payroll::*;

/// `xmllint --schema` against the payroll schema of the root.
fn xsd_valid(xml: &str) {
    if !tool("xmllint") {
        return;
    }
    let schema = if xml.contains("<NominaIndividualDeAjuste") {
        "NominaIndividualDeAjusteElectronicaXSDV1.0.6.xsd"
    } else {
        "NominaIndividualElectronicaXSDV1.0.6.xsd"
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nomina.xml");
    std::fs::write(&file, xml).unwrap();
    let out = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schemas_dir().join("maindoc").join(schema))
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The schemas README's one quirk: X.509 serials longer than xs:integer.
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !l.contains("X509SerialNumber"))
        .collect();
    assert!(errors.is_empty(), "{schema}: {}", errors.join("\n"));
}

/// `xmlsec1 --verify` with the certificate the signature carries.
fn signature_verifies(xml: &str) -> bool {
    if !tool("xmlsec1") {
        return true;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.xml");
    std::fs::write(&path, xml).unwrap();
    let start = xml.find("<ds:X509Certificate>").unwrap() + "<ds:X509Certificate>".len();
    let end = xml[start..].find("</ds:X509Certificate>").unwrap() + start;
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        &xml[start..end]
    );
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, pem).unwrap();
    std::process::Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&path)
        .output()
        .unwrap()
        .status
        .success()
}

/// The element holding the data: the root, or `Reemplazar` / `Eliminar`.
fn body<'a, 'i>(doc: &'a roxmltree::Document<'i>) -> roxmltree::Node<'a, 'i> {
    let root = doc.root_element();
    root.children()
        .find(|c| c.is_element() && matches!(c.tag_name().name(), "Reemplazar" | "Eliminar"))
        .unwrap_or(root)
}

fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, name: &str) -> roxmltree::Node<'a, 'i> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The CUNE as protocol.md §1.6 defines it, from the XML's own values:
/// NumNE FecNE HorNE ValDev ValDed ValTol NitNE DocEmp TipoXML PIN TipAmb.
fn cune_of(xml: &str, pin: &str) -> String {
    let doc = roxmltree::Document::parse(xml).unwrap();
    let b = body(&doc);
    let info = child(b, "InformacionGeneral");
    let eliminar = b.tag_name().name() == "Eliminar";
    let text = |n: &str| child(b, n).text().unwrap().to_string();
    let (dev, ded, tol, emp) = if eliminar {
        ("0.00".into(), "0.00".into(), "0.00".into(), "0".to_string())
    } else {
        (
            text("DevengadosTotal"),
            text("DeduccionesTotal"),
            text("ComprobanteTotal"),
            child(b, "Trabajador")
                .attribute("NumeroDocumento")
                .unwrap()
                .to_string(),
        )
    };
    let input = [
        child(b, "NumeroSecuenciaXML").attribute("Numero").unwrap(),
        info.attribute("FechaGen").unwrap(),
        info.attribute("HoraGen").unwrap(),
        &dev,
        &ded,
        &tol,
        child(b, "Empleador").attribute("NIT").unwrap(),
        &emp,
        info.attribute("TipoXML").unwrap(),
        pin,
        info.attribute("Ambiente").unwrap(),
    ]
    .concat();
    hex::encode(Sha384::digest(input.as_bytes()))
}

/// Everything checked by tools nobody here wrote, and the CUNE by hand.
fn check_xml(app: &TestApp, data: &Value) {
    let xml = data["xml"].as_str().unwrap();
    xsd_valid(xml);
    assert!(signature_verifies(xml), "xmlsec1 rejects the signature");
    let tampered = xml.replacen("<Notas>", "<Notas>x", 1);
    if tampered != xml {
        assert!(
            !signature_verifies(&tampered),
            "a changed note must break it"
        );
    }
    let pin = app.keys["payroll_software_pin"].as_str().unwrap();
    assert_eq!(cune_of(xml, pin), data["cune"].as_str().unwrap());
    let doc = roxmltree::Document::parse(xml).unwrap();
    let b = body(&doc);
    assert_eq!(
        child(b, "InformacionGeneral").attribute("CUNE"),
        data["cune"].as_str()
    );
    let time = child(b, "InformacionGeneral").attribute("HoraGen").unwrap();
    assert!(time.ends_with("-05:00"), "{time}");
    let provider = child(b, "ProveedorXML");
    assert_eq!(
        provider.attribute("SoftwareID"),
        app.keys["payroll_software_id"].as_str()
    );
    let number = child(b, "NumeroSecuenciaXML").attribute("Numero").unwrap();
    let ssc = hex::encode(Sha384::digest(
        [
            app.keys["payroll_software_id"].as_str().unwrap(),
            pin,
            number,
        ]
        .concat()
        .as_bytes(),
    ));
    assert_eq!(provider.attribute("SoftwareSC"), Some(ssc.as_str()));
    // `CodigoQR` is the verification URL alone (NIE021, NIAE021, NIAE234).
    let url = format!(
        "https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey={}",
        data["cune"].as_str().unwrap()
    );
    assert_eq!(data["qr_url"].as_str(), Some(url.as_str()));
    assert_eq!(child(b, "CodigoQR").text(), Some(url.as_str()));
}

fn post(app: &TestApp, path: &str, body: &Value) -> (u16, Value) {
    json(app.post(path, &app.sk_test(), body))
}

pub fn issue(app: &TestApp, body: &Value) -> Value {
    let (status, res) = post(app, "/v1/api/nomina/enviar", body);
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["success"], true, "{res}");
    res["data"].clone()
}

#[test]
fn a_monthly_payroll_is_issued_accepted_and_served() {
    let app = TestApp::spawn();
    let data = issue(&app, &monthly(&employee_number()));
    assert_eq!(data["transmission"]["isValid"], true, "{data}");
    assert!(data["transmission"].get("zipKey").is_none());
    assert!(data["transmission"].get("retryable").is_none());
    assert_eq!(data["estado"], "aceptada");
    assert_eq!(data["tipo"], "INDIVIDUAL");
    assert_eq!(data["cune_scheme"], "CUNE-SHA384");
    assert_eq!(data["ambiente"], 2);
    assert_eq!(data["prefijo"], "NOM");
    assert_eq!(data["trackId"], data["cune"]);
    // Totals to the peso: 1 423 500 + 200 000 + 74 140.63; 2 × 56 940.
    assert_eq!(data["totales"]["devengados"].to_string(), "1697640.63");
    assert_eq!(data["totales"]["deducciones"].to_string(), "113880.00");
    assert_eq!(data["totales"]["comprobante"].to_string(), "1583760.63");
    let xml = data["xml"].as_str().unwrap();
    assert!(xml.contains("<DevengadosTotal>1697640.63</DevengadosTotal>"));
    assert!(xml.contains("<ComprobanteTotal>1583760.63</ComprobanteTotal>"));
    assert!(xml.contains("<Basico DiasTrabajados=\"30\" SueldoTrabajado=\"1423500.00\"></Basico>"));
    assert!(xml.contains("<Transporte AuxilioTransporte=\"200000.00\"></Transporte>"));
    assert!(xml
        .contains("<HEDs><HED Cantidad=\"10\" Pago=\"74140.63\" Porcentaje=\"25\"></HED></HEDs>"));
    assert!(xml.contains("<Salud Deduccion=\"56940.00\" Porcentaje=\"4\"></Salud>"));
    // The employer is the company of the key, whatever id_empresa said.
    assert!(xml.contains(&format!("NIT=\"{}\"", app.keys["nit"].as_str().unwrap())));
    // A calendar month is a monthly pay period (annex table 5.5.1), and
    // `TiempoLaborado` is the caller's `tiempo_laborado_dias`.
    assert!(xml.contains("PeriodoNomina=\"5\""), "{xml}");
    assert!(xml.contains("TiempoLaborado=\"30\""), "{xml}");
    check_xml(&app, &data);

    // The simulator received it once, by its CUNE.
    let stats = sim_stats(&app);
    let cune = data["cune"].as_str().unwrap();
    assert!(stats.to_string().contains(cune), "{stats}");

    let id = data["id"].as_u64().unwrap();
    let (status, detail) = json(app.get(&format!("/v1/api/nomina/{id}"), &app.sk_test()));
    assert_eq!(status, 200, "{detail}");
    let d = &detail["data"];
    assert_eq!(d["cune"], data["cune"]);
    assert_eq!(d["estado"], "aceptada");
    assert_eq!(d["empleado"]["primer_nombre"], "Ana");
    assert_eq!(d["devengados"].as_array().unwrap().len(), 3);
    assert_eq!(d["totales"], data["totales"]);
    assert!(d.get("id_empresa").is_none());

    let res = app.get(&format!("/v1/api/nomina/{id}/xml"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/xml"));
    assert_eq!(res.text().unwrap(), xml);
    let res = app.get(&format!("/v1/api/nomina/{id}/zip"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/zip");
    let bytes = res.bytes().unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    assert_eq!(zip.len(), 1);
    let mut inner = String::new();
    std::io::Read::read_to_string(&mut zip.by_index(0).unwrap(), &mut inner).unwrap();
    assert_eq!(inner, xml);
    assert!(zip.by_index(0).unwrap().name().starts_with("nie"));

    // Live status: the authority has it.
    let (status, st) = json(app.get(&format!("/v1/api/nomina/estado/{cune}"), &app.sk_test()));
    assert_eq!(status, 200, "{st}");
    assert_eq!(st["data"]["estado"], "aceptada");
    assert_eq!(st["data"]["id"], id);
}

#[test]
fn a_draft_gives_xml_and_cune_only_and_a_novelty_names_the_earlier_one() {
    let app = TestApp::spawn();
    let mut body = monthly(&employee_number());
    body["transmit"] = json!(false);
    let draft = issue(&app, &body);
    assert_eq!(draft["estado"], "borrador");
    assert_eq!(draft["id_estado_documento"], 1);
    assert!(draft["transmission"].is_null(), "{draft}");
    check_xml(&app, &draft);
    let cune = draft["cune"].as_str().unwrap();
    assert!(
        !sim_stats(&app).to_string().contains(cune),
        "a draft is not sent"
    );

    // novedad without cune_nov: 422 naming it, nothing consumed.
    body["novedad"] = json!(true);
    let (status, res) = post(&app, "/v1/api/nomina/enviar", &body);
    assert_eq!(status, 422, "{res}");
    assert_eq!(res["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(res["error"]["details"][0]["field"], "cune_nov");

    body["cune_nov"] = json!(cune);
    let novelty = issue(&app, &body);
    let xml = novelty["xml"].as_str().unwrap();
    assert!(
        xml.contains(&format!("<Novedad CUNENov=\"{cune}\">true</Novedad>")),
        "{xml}"
    );
    check_xml(&app, &novelty);
    let n = |d: &Value| d["numero"].as_str().unwrap().parse::<u64>().unwrap();
    assert_eq!(
        n(&novelty),
        n(&draft) + 1,
        "the refused request took no number"
    );
}

/// One change that makes a valid body invalid.
type Change = Box<dyn Fn(&mut Value)>;

fn field_of(res: &Value) -> String {
    res["error"]["details"][0]["field"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn bad_payrolls_are_422s_naming_the_field_and_change_nothing() {
    let app = TestApp::spawn();
    let mut draft = monthly(&employee_number());
    draft["transmit"] = json!(false);
    let first = issue(&app, &draft);

    let cases: Vec<(&str, Change)> = vec![
        (
            "devengados",
            Box::new(|b| {
                b["devengados"].as_array_mut().unwrap().remove(0);
            }),
        ),
        (
            "periodo.tiempo_laborado_dias",
            Box::new(|b| b["periodo"]["tiempo_laborado_dias"] = json!(0)),
        ),
        (
            "periodo.fecha_liquidacion_fin",
            Box::new(|b| b["periodo"]["fecha_liquidacion_fin"] = json!("2025-02-27")),
        ),
        ("cune_nov", Box::new(|b| b["novedad"] = json!(true))),
        ("trm", Box::new(|b| b["trm"] = json!(4100.5))),
        ("trm", Box::new(|b| b["tipo_moneda"] = json!("USD"))),
        (
            "totales.comprobante",
            Box::new(|b| b["totales"] = json!({"comprobante": 1})),
        ),
        (
            "devengados[2].valor_total",
            Box::new(|b| {
                b["devengados"][2]
                    .as_object_mut()
                    .unwrap()
                    .remove("valor_total");
            }),
        ),
        (
            "devengados[0].seccion",
            Box::new(|b| b["devengados"][0]["seccion"] = json!("SUELDO")),
        ),
        (
            "deducciones[0].valor_total",
            Box::new(|b| {
                b["deducciones"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("valor_total");
            }),
        ),
        (
            "empleado.numero_documento",
            Box::new(|b| b["empleado"]["numero_documento"] = json!("AB-12")),
        ),
        (
            "empleado",
            Box::new(|b| {
                b.as_object_mut().unwrap().remove("empleado");
            }),
        ),
        (
            "hora_gen",
            Box::new(|b| b["hora_gen"] = json!("25:00:00-05:00")),
        ),
        (
            "deducciones",
            Box::new(|b| b["deducciones"][0]["valor_total"] = json!(99999999)),
        ),
        ("prefijo", Box::new(|b| b["prefijo"] = json!("XYZ"))),
        // Kept and never written: 422s saying where the data goes.
        (
            "sanciones",
            Box::new(|b| b["sanciones"] = json!([{"tipo": "privada", "valor": 10000}])),
        ),
        (
            "novedades",
            Box::new(|b| b["novedades"] = json!([{"tipo": "incapacidad", "dias": 2}])),
        ),
    ];
    for (field, change) in cases {
        let mut body = monthly(&employee_number());
        change(&mut body);
        let (status, res) = post(&app, "/v1/api/nomina/enviar", &body);
        assert_eq!(status, 422, "{field}: {res}");
        assert_eq!(res["error"]["code"], "VALIDATION_ERROR", "{res}");
        assert_eq!(field_of(&res), field, "{res}");
    }

    let mut sanction = monthly(&employee_number());
    sanction["sanciones"] = json!([{"valor": 10000}]);
    let (_, res) = post(&app, "/v1/api/nomina/enviar", &sanction);
    let message = res["error"]["details"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("deducciones") && message.contains("SANCION"),
        "{res}"
    );
    // Empty lists say nothing and are accepted.
    let mut empty = draft_of(&employee_number());
    empty["sanciones"] = json!([]);
    empty["novedades"] = json!([]);
    let (status, res) = post(&app, "/v1/api/nomina/enviar", &empty);
    assert_eq!(status, 200, "{res}");

    // The alternative shape (lines keyed by concept) is a wrong type.
    let mut keyed = monthly(&employee_number());
    keyed["devengados"] = json!({"basico": 1423500, "transporte": 200000});
    let (status, res) = post(&app, "/v1/api/nomina/enviar", &keyed);
    assert_eq!(status, 400, "{res}");
    assert_eq!(res["error"]["code"], "MALFORMED_JSON");
    assert!(
        res["message"]
            .as_str()
            .unwrap()
            .contains("\"seccion\": \"BASICO\""),
        "the message shows the expected shape: {res}"
    );

    // An adjustment of a CUNE the company does not have.
    let (status, res) = post(
        &app,
        "/v1/api/nomina/ajuste",
        &json!({"cune_referencia": "a".repeat(96), "empleado": monthly("1")["empleado"]}),
    );
    assert_eq!(status, 404, "{res}");
    assert_eq!(res["error"]["code"], "NOT_FOUND");

    // Nothing consumed: the next payroll takes the number after the one
    // with empty lists.
    let next = issue(&app, &draft_of(&employee_number()));
    let n = |d: &Value| d["numero"].as_str().unwrap().parse::<u64>().unwrap();
    assert_eq!(n(&next), n(&first) + 2);
}

fn draft_of(document: &str) -> Value {
    let mut body = monthly(document);
    body["transmit"] = json!(false);
    body
}

#[test]
fn adjustments_replace_and_delete_an_accepted_payroll() {
    let app = TestApp::spawn();
    let document = employee_number();
    let original = issue(&app, &monthly(&document));
    assert_eq!(original["estado"], "aceptada", "{original}");
    let cune = original["cune"].as_str().unwrap();

    // Reemplazar: the salary was 1 500 000.
    let replace = salary_replacement(cune, &document);
    let (status, res) = post(&app, "/v1/api/nomina/ajuste", &replace);
    assert_eq!(status, 200, "{res}");
    let adj = &res["data"];
    assert_eq!(adj["tipo"], "AJUSTE");
    assert_eq!(adj["estado"], "aceptada", "{adj}");
    assert_eq!(adj["totales"]["comprobante"].to_string(), "1580000.00");
    let xml = adj["xml"].as_str().unwrap();
    assert!(xml.contains("<TipoNota>1</TipoNota><Reemplazar>"));
    assert!(xml.contains(&format!(
        "CUNEPred=\"{cune}\" FechaGenPred=\"{}\" NumeroPred=\"{}\"",
        original_date(&original),
        original["consecutivo"].as_str().unwrap()
    )));
    // The period defaults to the original's.
    assert!(xml.contains("FechaLiquidacionInicio=\"2025-03-01\""));
    assert!(xml.contains("TipoXML=\"103\""));
    check_xml(&app, adj);

    // Eliminar: zero values and employee 0 in the CUNE.
    let (status, res) = post(
        &app,
        "/v1/api/nomina/ajuste",
        &json!({"cune_referencia": cune, "tipo_nota": 2, "empleado": monthly(&document)["empleado"]}),
    );
    assert_eq!(status, 200, "{res}");
    let del = &res["data"];
    assert_eq!(del["estado"], "aceptada", "{del}");
    assert_eq!(del["totales"]["comprobante"].to_string(), "0.00");
    let xml = del["xml"].as_str().unwrap();
    assert!(xml.contains("<TipoNota>2</TipoNota><Eliminar><EliminandoPredecesor"));
    assert!(!xml.contains("<Trabajador"));
    check_xml(&app, del);

    // A deletion is not adjusted again.
    let (status, res) = post(
        &app,
        "/v1/api/nomina/ajuste",
        &json!({"cune_referencia": del["cune"], "empleado": monthly(&document)["empleado"]}),
    );
    assert_eq!(status, 409, "{res}");
    assert_eq!(res["error"]["code"], "INVALID_STATE");
}

/// `FechaGen` of an issued payroll, from its XML.
fn original_date(data: &Value) -> String {
    let xml = data["xml"].as_str().unwrap();
    let doc = roxmltree::Document::parse(xml).unwrap();
    child(body(&doc), "InformacionGeneral")
        .attribute("FechaGen")
        .unwrap()
        .to_string()
}

#[test]
fn a_lost_answer_is_found_by_the_status_query_not_sent_again() {
    let app = TestApp::spawn_with(Launch::default().env("EMISOR_AUTHORITY__TIMEOUT_MS", "300"));
    sim_mode(&app, json!({"mode": "slow", "latency_ms": 1500}));
    let data = issue(&app, &monthly(&employee_number()));
    assert_eq!(data["estado"], "enviada", "{data}");
    assert_eq!(data["transmission"]["isValid"], false, "{data}");
    let cune = data["cune"].as_str().unwrap().to_string();
    // The simulator accepts it; its answer came after we gave up.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while sim_stats(&app)["accepted"].get(&cune).is_none() {
        assert!(std::time::Instant::now() < deadline, "never received");
        std::thread::sleep(Duration::from_millis(20));
    }
    sim_mode(&app, json!({"mode": "up"}));
    let (status, st) = json(app.get(&format!("/v1/api/nomina/estado/{cune}"), &app.sk_test()));
    assert_eq!(status, 200, "{st}");
    assert_eq!(st["data"]["estado"], "aceptada", "{st}");
    let stats = sim_stats(&app);
    assert_eq!(stats["calls"]["SendNominaSync"], 1, "{stats}");
    assert_eq!(stats["accepted"][&cune]["received"], 1, "{stats}");
    let (_, detail) = json(app.get(&format!("/v1/api/nomina/{}", data["id"]), &app.sk_test()));
    assert_eq!(detail["data"]["estado"], "aceptada");
}

#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn a_payroll_answered_while_the_authority_is_down_survives_a_kill() {
    let launch = Launch::default()
        .env("EMISOR_RESILIENCE__TIME_SCALE", "0.01")
        .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000");
    let mut app = TestApp::spawn_with(launch.clone());
    sim_mode(&app, json!({"mode": "down"}));
    let data = issue(&app, &monthly(&employee_number()));
    assert_eq!(data["estado"], "enviada", "{data}");
    let id = data["id"].as_u64().unwrap();
    let cune = data["cune"].as_str().unwrap().to_string();
    app.kill();
    let app = TestApp::start_in(&app.dir.clone(), launch);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, d) = json(app.get(&format!("/v1/api/nomina/{id}"), &app.sk_test()));
        if d["data"]["estado"] == "aceptada" {
            assert_eq!(d["data"]["cune"], cune.as_str());
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not accepted: {d}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let stats = sim_stats(&app);
    assert_eq!(stats["accepted"][&cune]["received"], 1, "{stats}");
    assert_eq!(stats["calls"]["SendNominaSync"], 1, "{stats}");
}

/// SIGKILL while payrolls are being issued: every answered payroll keeps
/// its number, XML and ZIP; a half-built one is rebuilt with its number
/// (by the payroll translator, from its stored request); numbers taken
/// after the restart are new.
#[test]
#[cfg_attr(not(feature = "soak"), ignore = "soak")]
fn sigkill_while_issuing_payroll_keeps_every_answered_one() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    let launch = Launch::default()
        .capture_log()
        .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000");
    let mut app = TestApp::spawn_with(launch.clone());
    let answered: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (url, key) = (app.url.clone(), app.sk_test());
    let clients: Vec<_> = (0..6)
        .map(|_| {
            let (answered, stop, url, key) =
                (answered.clone(), stop.clone(), url.clone(), key.clone());
            std::thread::spawn(move || {
                let http = client();
                while !stop.load(Ordering::SeqCst) {
                    let mut body = monthly(&employee_number());
                    body["transmit"] = json!(false);
                    let Ok(res) = http
                        .post(format!("{url}/v1/api/nomina/enviar"))
                        .header("X-Api-Key", &key)
                        .json(&body)
                        .send()
                    else {
                        return;
                    };
                    if res.status().as_u16() == 200 {
                        if let Ok(v) = res.json::<Value>() {
                            let id = v["data"]["id"].as_u64().expect("id");
                            let n = v["data"]["numero"].as_str().expect("numero");
                            answered
                                .lock()
                                .expect("lock")
                                .push((id, n.parse().expect("number")));
                        }
                    }
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while answered.lock().expect("lock").len() < 30 {
        assert!(
            std::time::Instant::now() < deadline,
            "30 payrolls not issued in 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    app.kill();
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        let _ = c.join();
    }
    let before = answered.lock().expect("lock").clone();

    let restarted = TestApp::start_in(&app.dir.clone(), launch);
    let key = restarted.sk_test();
    let mut numbers = Vec::new();
    for (id, number) in &before {
        let (status, d) = json(restarted.get(&format!("/v1/api/nomina/{id}"), &key));
        assert_eq!(status, 200, "{d}");
        assert_eq!(d["data"]["numero"], number.to_string(), "{d}");
        let xml = restarted.get(&format!("/v1/api/nomina/{id}/xml"), &key);
        assert_eq!(xml.status().as_u16(), 200);
        assert!(xml
            .text()
            .unwrap()
            .contains(&format!("Numero=\"NOM{number}\"")));
    }
    // Every payroll the store holds has its files and code, the ones whose
    // answer never left included.
    let max = before.iter().map(|(id, _)| *id).max().unwrap() + 10;
    for id in 1..=max {
        let (status, d) = json(restarted.get(&format!("/v1/api/nomina/{id}"), &key));
        if status == 404 {
            continue;
        }
        assert_eq!(status, 200, "{d}");
        assert!(
            d["data"]["cune"].as_str().is_some_and(|c| c.len() == 96),
            "{d}"
        );
        numbers.push(
            d["data"]["numero"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap(),
        );
        let zip = restarted.get(&format!("/v1/api/nomina/{id}/zip"), &key);
        assert_eq!(zip.status().as_u16(), 200, "payroll {id}");
    }
    for _ in 0..3 {
        let mut body = monthly(&employee_number());
        body["transmit"] = json!(false);
        let d = issue(&restarted, &body);
        numbers.push(d["numero"].as_str().unwrap().parse().unwrap());
    }
    let mut unique = numbers.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        numbers.len(),
        "a number given twice: {numbers:?}"
    );
    assert!(
        !restarted.log().contains("could not rebuild"),
        "{}",
        restarted.log()
    );
}

/// Colombia's date today (`fecha_emision` of what is issued now).
fn colombia_today() -> chrono::NaiveDate {
    (chrono::Utc::now() - chrono::Duration::hours(5)).date_naive()
}

fn list(app: &TestApp, key: &str, query: &str) -> (u16, Value) {
    json(app.get(&format!("/v1/api/nomina/listar{query}"), key))
}

#[test]
fn the_list_filters_by_tipo_estado_and_dates_and_pages() {
    let app = TestApp::spawn_with(
        Launch::default().env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000"),
    );
    let key = app.sk_test();
    let document = employee_number();
    let accepted = issue(&app, &monthly(&document));
    issue(&app, &monthly(&employee_number()));
    let mut draft = monthly(&employee_number());
    draft["transmit"] = json!(false);
    let draft = issue(&app, &draft);
    let (status, adj) = post(
        &app,
        "/v1/api/nomina/ajuste",
        &json!({"cune_referencia": accepted["cune"], "tipo_nota": 2,
                "empleado": monthly(&document)["empleado"]}),
    );
    assert_eq!(status, 200, "{adj}");
    // An invoice is not a payroll.
    let mut invoice = emisor::api::invoice_request::examples::invoice();
    invoice["transmit"] = json!(false);
    assert_eq!(
        app.post("/v1/api/facturacion", &key, &invoice)
            .status()
            .as_u16(),
        200
    );

    let total = |q: &str| {
        let (status, res) = list(&app, &key, q);
        assert_eq!(status, 200, "{q}: {res}");
        res["data"]["total"].as_u64().unwrap()
    };
    let (_, all) = list(&app, &key, "");
    let d = &all["data"];
    assert_eq!(
        (d["total"].as_u64(), d["page"].as_u64(), d["limit"].as_u64()),
        (Some(4), Some(1), Some(20))
    );
    let items = d["items"].as_array().unwrap();
    assert_eq!(items[0]["id"], adj["data"]["id"], "newest first");
    assert_eq!(items[0]["tipo"], "AJUSTE");
    assert_eq!(items[1]["id"], draft["id"]);
    assert_eq!(items[1]["estado"], "borrador");
    assert_eq!(total("?tipo=AJUSTE"), 1);
    assert_eq!(total("?tipo=INDIVIDUAL"), 3);
    assert_eq!(total("?estado=borrador"), 1);
    assert_eq!(total("?estado=aceptada"), 3);
    assert_eq!(total("?estado=enviada"), 0);
    assert_eq!(total("?estado=borrador,aceptada&tipo=INDIVIDUAL"), 3);
    let today = colombia_today();
    let tomorrow = today.succ_opt().unwrap();
    assert_eq!(
        total(&format!("?fecha_desde={today}&fecha_hasta={today}")),
        4
    );
    assert_eq!(total(&format!("?fecha_desde={tomorrow}")), 0);
    let (_, p2) = list(&app, &key, "?limit=3&page=2");
    assert_eq!(p2["data"]["items"].as_array().unwrap().len(), 1);
    assert_eq!(p2["data"]["total"], 4);
    let (_, p3) = list(&app, &key, "?limit=3&page=3");
    assert!(p3["data"]["items"].as_array().unwrap().is_empty());

    for (q, field) in [
        ("?tipo=MENSUAL", "tipo"),
        ("?estado=perdida", "estado"),
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        ("?page=0", "page"),
        ("?fecha_desde=2025-13-01", "fecha_desde"),
    ] {
        let (status, res) = list(&app, &key, q);
        assert_eq!(status, 422, "{q}: {res}");
        assert_eq!(field_of(&res), field, "{q}: {res}");
    }

    // Another company sees none of them.
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other = second["data"]["sk_test"].as_str().unwrap();
    let (_, theirs) = list(&app, other, "");
    assert_eq!(theirs["data"]["total"], 0);
    let (status, _) = json(app.get(&format!("/v1/api/nomina/{}", draft["id"]), other));
    assert_eq!(status, 404);
}

#[test]
fn the_payroll_pdf_shows_the_parties_lines_totals_cune_and_qr() {
    let app = TestApp::spawn();
    let document = employee_number();
    let data = issue(&app, &monthly(&document));
    let id = data["id"].as_u64().unwrap();
    let res = app.get(&format!("/v1/api/nomina/{id}/pdf"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/pdf");
    let pdf = res.bytes().unwrap().to_vec();
    assert!(pdf.starts_with(b"%PDF"));
    if !tool("pdftotext") {
        return;
    }
    let text = pdftotext(&pdf);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "NÓMINA INDIVIDUAL ELECTRÓNICA",
        "Empresa Demo S.A.S.",
        &format!("NIT {}", app.keys["nit"].as_str().unwrap()),
        "Ana María Gómez Ñandú",
        "2025-03-01 a 2025-03-31",
        "Salario básico",
        "Auxilio de transporte",
        "Horas extra diurnas",
        "Salud",
        "Fondo de pensión",
        "1.697.640,63",
        "113.880,00",
        "1.583.760,63",
        data["consecutivo"].as_str().unwrap(),
    ] {
        assert!(flat.contains(expected), "{expected} not in:\n{text}");
    }
    // The CUNE in full (chopped across lines).
    let joined: String = text.split_whitespace().collect();
    assert!(joined.contains(data["cune"].as_str().unwrap()), "{text}");
    if tool("zbarimg") {
        // The printed QR carries the annex's §13.1 text, ending with the URL.
        let xml = data["xml"].as_str().unwrap();
        let doc = roxmltree::Document::parse(xml).unwrap();
        let b = body(&doc);
        let info = child(b, "InformacionGeneral");
        let expected = [
            format!("NumNIE: {}", data["consecutivo"].as_str().unwrap()),
            format!("FecNIE: {}", info.attribute("FechaGen").unwrap()),
            format!("HorNIE: {}", info.attribute("HoraGen").unwrap()),
            format!("NitNIE: {}", app.keys["nit"].as_str().unwrap()),
            format!("DocEmp: {document}"),
            "ValDev: 1697640.63".to_string(),
            "ValDed: 113880.00".to_string(),
            "ValTol: 1583760.63".to_string(),
            format!("CUNE: {}", data["cune"].as_str().unwrap()),
            format!("QRCode: {}", data["qr_url"].as_str().unwrap()),
        ]
        .join("\n");
        assert_eq!(zbarimg(&pdf), expected);
    }
    // Another company's key cannot read it.
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other = second["data"]["sk_test"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/api/nomina/{id}/pdf"), other)
            .status()
            .as_u16(),
        404
    );
}
