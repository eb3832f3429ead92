//! Uploads of received invoices (`cargar-documento`) against forgery. An
//! upload counts only when it is the document the authority accepted for
//! its CUFE, asked of the authority (the simulator over real SOAP) with
//! `GetXmlByDocumentKey`, whoever signed it; each company's uploads are its
//! own, so none locks another company out; and a data dir of the format
//! with one record per CUFE for everyone opens with its uploads keyed by
//! uploader, a forged one flagged in its history.

use std::time::{Duration, Instant};

use base64::Engine;
use chrono::{FixedOffset, Utc};
use emisor::authority::operation::Operation;
use emisor::authority::soap::content_type;
use emisor::authority::soap::envelope::Request;
use emisor::authority::soap::response::parse_dian_response;
use emisor::engine::package::zip_single;
use emisor::engine::signing_key::{generate_self_signed, SigningKey};
use emisor::engine::xades;
use emisor::fixtures;
use emisor_store::test_set::TEST_TECHNICAL_KEY;
use emisor_store::{CopyCheck, Environment, PartyRef, ReceivedInvoice};
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::events::{
    accepted_event, event, issue_to_buyer, key_of, new_company, BUYER_NIT,
};
use crate::support::external_sim::{service_url_of, ExternalSim};
use crate::support::flow::*;

const ATTACKER_NIT: &str = "900777001";
/// A vendor outside this service, known to the authority.
const VENDOR_NIT: &str = "901555001";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn upload(app: &TestApp, key: &str, xml: &str) -> reqwest::blocking::Response {
    app.post(
        "/v1/api/eventos/cargar-documento",
        key,
        &json!({ "xml_base64": b64(xml) }),
    )
}

fn seller_xml(app: &TestApp, id: u64) -> String {
    let res = app.get(&format!("/v1/api/facturacion/{id}/xml"), &app.sk_test());
    assert_eq!(res.status().as_u16(), 200);
    res.text().unwrap()
}

/// `genuine` (a signed invoice) with its signature taken off, `edit`
/// applied, and signed again with a fresh self-signed certificate: what
/// anyone can make. The result verifies as a XAdES signature.
fn forge(genuine: &str, edit: impl Fn(String) -> String) -> String {
    let start = genuine.find("<ds:Signature").expect("signature");
    let end = genuine.find("</ds:Signature>").expect("signature end") + "</ds:Signature>".len();
    let unsigned = edit(format!("{}{}", &genuine[..start], &genuine[end..]));
    let (p12, password) = generate_self_signed("Falsificador S.A.S.", ATTACKER_NIT, 30).unwrap();
    let key = SigningKey::from_pkcs12(&p12, &password).unwrap();
    let now = Utc::now().with_timezone(&FixedOffset::west_opt(5 * 3600).unwrap());
    let forged = xades::sign(&unsigned, &key, now).expect("sign the forgery");
    let verified = xades::verify(&forged).expect("the forgery verifies");
    assert!(verified.signing_certificate_ok && verified.policy_ok);
    forged
}

/// `xml` with its payable amount set to `amount`.
fn payable(xml: String, amount: &str) -> String {
    let open = xml.find("<cbc:PayableAmount").expect("PayableAmount");
    let from = open + xml[open..].find('>').unwrap() + 1;
    let to = from + xml[from..].find('<').unwrap();
    format!("{}{amount}{}", &xml[..from], &xml[to..])
}

/// `xml` with every `>{from}<` text (the party's identifications) as `to`.
fn party(xml: String, from: &str, to: &str) -> String {
    xml.replace(&format!(">{from}<"), &format!(">{to}<"))
}

fn message(v: &Value) -> String {
    v["message"].as_str().unwrap_or_default().to_string()
}

fn total(app: &TestApp, key: &str) -> u64 {
    let (_, list) = json(app.get("/v1/api/eventos/documentos", key));
    list["data"]["total"].as_u64().expect("total")
}

/// Invoice `SETP99000<n>` of [`VENDOR_NIT`] to `fixtures::CUSTOMER`, sent to
/// the authority at `sim` as any vendor's provider would (SendBillSync,
/// WS-Security); its signed XML and CUFE once accepted.
fn external_invoice(sim: &str, n: u64) -> (String, String) {
    let http = reqwest::blocking::Client::new();
    let res = http
        .put(format!("{sim}/__sim/issuers"))
        .json(&fixtures::issuer(VENDOR_NIT))
        .send()
        .unwrap();
    assert!(res.status().is_success());
    let (xml, cufe) = fixtures::signed_invoice(
        VENDOR_NIT,
        &format!("SETP{}", 990_000_000 + n),
        TEST_TECHNICAL_KEY,
    );
    let zip = zip_single(
        &format!("fv{n}.xml"),
        xml.as_bytes(),
        fixtures::signing_time(),
    )
    .unwrap();
    // The sample invoice is dated the fixtures' signing day: the authority
    // takes it the day it is dated (the send-day rule of annex 1.9), and
    // then its clock comes back.
    let set_clock = |offset_s: i64| {
        let res = http
            .post(format!("{sim}/__sim/clock"))
            .json(&serde_json::json!({ "offset_s": offset_s }))
            .send()
            .unwrap();
        assert!(res.status().is_success());
    };
    set_clock((fixtures::signing_time().with_timezone(&Utc) - Utc::now()).num_seconds());
    let service = service_url_of(sim);
    let envelope = Request::send_bill_sync(&format!("z{n}.zip"), &zip)
        .to_envelope(&service, &fixtures::signer(), Utc::now())
        .unwrap();
    let answer = http
        .post(&service)
        .header(
            "Content-Type",
            content_type(&Operation::SendBillSync.action()),
        )
        .body(envelope)
        .send()
        .unwrap()
        .text()
        .unwrap();
    set_clock(0);
    let verdict = parse_dian_response(&answer, Operation::SendBillSync).unwrap();
    assert!(verdict.is_valid, "{verdict:?}");
    (xml, cufe)
}

#[test]
fn a_forged_invoice_on_another_company_s_cufe_is_refused_and_locks_no_one_out() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    let attacker = key_of(&new_company(&app, ATTACKER_NIT, "Atacante S.A.S."));
    let (d_id, d) = issue_to_buyer(&app);
    let genuine = seller_xml(&app, d_id);

    // The attack: the seller's real CUFE, the attacker as buyer, a total
    // of 1.00, signed with a certificate of its own making.
    let forged = forge(&genuine, |x| {
        payable(party(x, BUYER_NIT, ATTACKER_NIT), "1.00")
    });
    let refused = assert_error(upload(&app, &attacker, &forged), 422, "VALIDATION_ERROR");
    assert!(message(&refused).contains("authority"), "{refused}");
    assert_eq!(refused["error"]["details"][0]["field"], "xml_base64");
    // Nothing stored: the attacker has no part in the invoice.
    assert_eq!(total(&app, &attacker), 0);
    assert_error(
        app.get(&format!("/v1/api/eventos/documentos/{d}"), &attacker),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.post(
            "/v1/api/eventos/acuse-recibo",
            &attacker,
            &json!({ "cufe": d }),
        ),
        404,
        "NOT_FOUND",
    );

    // The real buyer uploads the genuine invoice and acts on it.
    let (status, stored) = json(upload(&app, &buyer, &genuine));
    assert_eq!(status, 201, "{stored}");
    assert_eq!(stored["data"]["comprador"]["nit"], BUYER_NIT);
    assert_eq!(stored["data"]["total"].as_f64(), Some(168365.0));
    assert_eq!(stored["data"]["copia_tax"]["estado"], "igual");
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({ "cufe": d }));
    // The seller sees the real buyer.
    let (_, seen) = json(app.get(&format!("/v1/api/eventos/documentos/{d}"), &app.sk_test()));
    assert_eq!(seen["data"]["comprador"]["nit"], BUYER_NIT, "{seen}");
    // The forgery after the genuine upload: still refused.
    assert_error(upload(&app, &attacker, &forged), 422, "VALIDATION_ERROR");
}

#[test]
fn an_altered_copy_an_unknown_cufe_and_an_unreachable_authority_store_nothing() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer = key_of(&new_company(&app, BUYER_NIT, "Comprador S.A.S."));
    let (e_id, e) = issue_to_buyer(&app);
    let genuine = seller_xml(&app, e_id);

    // The buyer's own invoice, altered and signed again: its buyer is the
    // caller and its CUFE is real, but it is not the authority's document.
    let altered = forge(&genuine, |x| payable(x, "1.00"));
    let refused = assert_error(upload(&app, &buyer, &altered), 422, "VALIDATION_ERROR");
    assert!(
        message(&refused).contains("not the one the authority accepted"),
        "{refused}"
    );
    // The same inside an AttachedDocument.
    let container = |inner: &str| {
        format!(
            concat!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
                "<AttachedDocument xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:AttachedDocument-2\"",
                " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
                " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\">",
                "<cbc:ID>X</cbc:ID><cac:Attachment><cac:ExternalReference><cbc:MimeCode>text/xml</cbc:MimeCode>",
                "<cbc:Description><![CDATA[{}]]></cbc:Description></cac:ExternalReference></cac:Attachment>",
                "</AttachedDocument>"
            ),
            inner
        )
    };
    assert_error(
        upload(&app, &buyer, &container(&altered)),
        422,
        "VALIDATION_ERROR",
    );
    // A CUFE the authority never accepted.
    let uuid_at = genuine.find("CUFE-SHA384\">").unwrap() + "CUFE-SHA384\">".len();
    let real = &genuine[uuid_at..uuid_at + 96];
    let unknown = forge(&genuine, |x| x.replace(real, &"ab".repeat(48)));
    let refused = assert_error(upload(&app, &buyer, &unknown), 422, "VALIDATION_ERROR");
    assert!(
        message(&refused).contains("no accepted invoice"),
        "{refused}"
    );

    // The authority out of reach: 503, nothing stored.
    sim_mode(&app, json!({"mode": "down"}));
    assert_error(upload(&app, &buyer, &genuine), 503, "TAX_UNAVAILABLE");
    sim_mode(&app, json!({"mode": "up"}));
    assert_eq!(total(&app, &buyer), 0);

    // The genuine one, wrapped with its line ends changed (as mail may):
    // the same document.
    let wrapped = container(&genuine.replacen("?><", "?>\r\n<", 1));
    let (status, stored) = json(upload(&app, &buyer, &wrapped));
    assert_eq!(status, 201, "{stored}");
    assert_eq!(stored["data"]["cufe"], e.as_str());
    assert_eq!(total(&app, &buyer), 1);
    let stats = sim_stats(&app);
    assert!(
        stats["calls"]["GetXmlByDocumentKey"].as_u64() >= Some(3),
        "{stats}"
    );
}

/// The trees of the format before, written straight into the stopped
/// server's sled: one record per CUFE for everyone, no copy state.
struct Legacy {
    db: sled::Db,
    next_id: u64,
}

impl Legacy {
    fn open(dir: &std::path::Path) -> Legacy {
        let db = sled::open(dir.join("sled")).unwrap();
        let seq = db
            .open_tree(emisor_store::trees::META)
            .unwrap()
            .get(format!("seq:{}", emisor_store::trees::RECEIVED))
            .unwrap()
            .map(|v| u64::from_be_bytes(v.as_ref().try_into().unwrap()))
            .unwrap_or(0);
        Legacy {
            db,
            next_id: seq + 1000,
        }
    }

    /// An upload by `uploader` (the buyer the XML names) of `xml`, as
    /// `cargar-documento` stored it.
    fn upload(&mut self, uploader: u64, xml: &str) -> u64 {
        let facts = emisor::engine::events::received::read(xml).unwrap();
        let id = self.next_id;
        self.next_id += 1;
        let party = |nit: &str, company: Option<u64>| PartyRef {
            id_number: nit.into(),
            id_type: "31".into(),
            check_digit: None,
            name: format!("Empresa {nit}"),
            company_id: company,
        };
        let now = Utc::now();
        let cufe = facts.cufe.as_str();
        let record = ReceivedInvoice {
            id,
            version: 1,
            cufe: facts.cufe.clone(),
            environment: Environment::Test,
            number: facts.number.clone(),
            type_code: facts.type_code.clone(),
            issue_date: facts.issue_date,
            due_date: facts.due_date,
            currency: facts.currency.clone(),
            total: facts.total.to_string(),
            vendor: party(&facts.vendor_nit, None),
            buyer: party(&facts.buyer_id, Some(uploader)),
            holder: party(&facts.vendor_nit, None),
            uploaded_by: Some(uploader),
            document_id: None,
            eligible: false,
            authority_copy: CopyCheck::default(),
            events: Vec::new(),
            created_at: now,
            updated_at: now,
        };
        let mut value = serde_json::to_value(&record).unwrap();
        value.as_object_mut().unwrap().remove("authority_copy");
        let t = |name: &str| self.db.open_tree(name).unwrap();
        use emisor_store::trees as tr;
        let encoded = emisor_store::codec::encode(tr::RECEIVED, &value).unwrap();
        t(tr::RECEIVED).insert(id.to_be_bytes(), encoded).unwrap();
        t(tr::RECEIVED_BY_CUFE)
            .insert(cufe.as_bytes(), &id.to_be_bytes())
            .unwrap();
        let mut by_buyer = uploader.to_be_bytes().to_vec();
        by_buyer.extend_from_slice(&id.to_be_bytes());
        t(tr::RECEIVED_BY_BUYER).insert(by_buyer, &[]).unwrap();
        let mut count_key = vec![b'b'];
        count_key.extend_from_slice(&uploader.to_be_bytes());
        let counts = t(tr::RECEIVED_COUNTS);
        let count = counts
            .get(&count_key)
            .unwrap()
            .map(|v| u64::from_be_bytes(v.as_ref().try_into().unwrap()))
            .unwrap_or(0);
        counts
            .insert(count_key, &(count + 1).to_be_bytes())
            .unwrap();
        t(tr::RECEIVED_FILES)
            .insert(id.to_be_bytes(), xml.as_bytes())
            .unwrap();
        t(tr::META)
            .insert(format!("seq:{}", tr::RECEIVED), &id.to_be_bytes())
            .unwrap();
        id
    }

    /// Takes away what the current format adds, so the data dir is of
    /// the format before in full.
    fn close(self) {
        use emisor_store::trees as tr;
        self.db
            .open_tree(tr::META)
            .unwrap()
            .remove("received_keyed_by_company")
            .unwrap();
        for name in [tr::RECEIVED_BY_COMPANY, tr::RECEIVED_UNCHECKED] {
            self.db.drop_tree(name).unwrap();
        }
        self.db.flush().unwrap();
    }
}

fn company_id(company: &Value) -> u64 {
    company["id_empresa"]
        .as_u64()
        .or_else(|| company["id"].as_u64())
        .expect("company id")
}

fn copy_state(app: &TestApp, key: &str, cufe: &str) -> Value {
    let (status, shown) = json(app.get(&format!("/v1/api/eventos/documentos/{cufe}"), key));
    assert_eq!(status, 200, "{shown}");
    shown["data"]["copia_tax"].clone()
}

#[test]
fn a_data_dir_with_one_record_per_cufe_opens_keyed_by_uploader_and_flags_the_forgeries() {
    if !sled_only("it opens a sled data dir of the previous format") {
        return;
    }
    // An authority that outlives the service's restart, as the real one.
    let sim = ExternalSim::start();
    let launch = fast_launch().env("EMISOR_AUTHORITY__URL", &sim.service_url());
    let mut app = TestApp::spawn_with(launch.clone());
    let buyer_company = new_company(&app, BUYER_NIT, "Comprador S.A.S.");
    let attacker_company = new_company(&app, ATTACKER_NIT, "Atacante S.A.S.");
    let customer_company = new_company(&app, fixtures::CUSTOMER, "Cliente Externo S.A.S.");
    let (buyer, attacker, customer) = (
        key_of(&buyer_company),
        key_of(&attacker_company),
        key_of(&customer_company),
    );
    let attacker_id = company_id(&attacker_company);
    let customer_id = company_id(&customer_company);
    // Registration with the external simulator is asynchronous.
    std::thread::sleep(Duration::from_millis(500));

    // Issued here to the buyer; two invoices of a vendor outside.
    let (d_id, d) = issue_to_buyer(&app);
    let genuine_d = seller_xml(&app, d_id);
    let (x1, c1) = external_invoice(&sim.base, 101);
    let (x2, c2) = external_invoice(&sim.base, 102);
    app.stop();

    // What the format before let happen: forgeries stored as the only
    // record of their CUFE, and a genuine upload.
    let mut legacy = Legacy::open(&app.dir);
    let forged_d = forge(&genuine_d, |x| {
        payable(party(x, BUYER_NIT, ATTACKER_NIT), "1.00")
    });
    legacy.upload(attacker_id, &forged_d);
    let forged_c2 = forge(&x2, |x| party(x, fixtures::CUSTOMER, ATTACKER_NIT));
    legacy.upload(attacker_id, &forged_c2);
    legacy.upload(customer_id, &x1);
    legacy.close();

    let dir = app.dir.clone();
    let _first = std::mem::replace(&mut app, TestApp::start_in(&dir, launch));

    // Issued here: compared with the local document before the server
    // answered. The forgery is its uploader's alone, flagged.
    let flagged = copy_state(&app, &attacker, &d);
    assert_eq!(flagged["estado"], "difiere", "{flagged}");
    assert!(flagged["fecha"].is_string(), "{flagged}");
    let (status, refused) = event(
        &app,
        &attacker,
        "eventos/acuse-recibo",
        json!({ "cufe": d }),
    );
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "INVALID_STATE");
    // The real buyer is not locked out.
    let (status, shown) = json(app.get(&format!("/v1/api/eventos/documentos/{d}"), &buyer));
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["data"]["comprador"]["nit"], BUYER_NIT);
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({ "cufe": d }));

    // Issued elsewhere: compared in the background, through the
    // authority. The forgery's uploader is no party of the real invoice.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (forged, real) = (
            copy_state(&app, &attacker, &c2),
            copy_state(&app, &customer, &c1),
        );
        if forged["estado"] != "sin_comparar" && real["estado"] != "sin_comparar" {
            assert_eq!(forged["estado"], "difiere", "{forged}");
            assert!(
                forged["detalle"].as_str().unwrap().contains("authority"),
                "{forged}"
            );
            assert_eq!(real["estado"], "igual", "{real}");
            break;
        }
        assert!(Instant::now() < deadline, "not compared: {forged} {real}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Its real buyer uploads it; events on the genuine upload.
    let (status, stored) = json(upload(&app, &customer, &x1));
    assert_eq!(status, 409, "uploaded before, and vouched for: {stored}");
    accepted_event(
        &app,
        &customer,
        "eventos/acuse-recibo",
        json!({ "cufe": c1 }),
    );
    // The history shows the flag.
    let (status, history) =
        json(app.get(&format!("/v1/api/registry/hoja-de-vida/{c2}"), &attacker));
    assert_eq!(status, 200, "{history}");
    assert_eq!(
        history["data"]["copia_tax"]["estado"], "difiere",
        "{history}"
    );
}
