//! A client nobody here wrote reads the simulator's typed answers: python's
//! zeep, generated from the simulator's WSDL, calls every operation and
//! checks every field (`tests/zeep/client.py`). Needs Debian's python3-zeep
//! and python3-xmlsec; without them the test is skipped, unless
//! `REQUIRE_CHECKERS` is set.

use std::path::Path;
use std::process::Command;

use emisor::authority::simulator::{IssuerRecord, SERVICE_PATH};
use emisor::engine::package::zip_single;
use emisor::fixtures;
use serde_json::{json, Value};

use crate::support::app::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/zeep/client.py");

/// Operations the script must report as checked.
const OPERATIONS: [&str; 11] = [
    "GetNumberingRange",
    "SendBillSync",
    "GetStatus",
    "SendBillAsync",
    "GetStatusZip",
    "SendTestSetAsync",
    "SendNominaSync",
    "SendEventUpdateStatus",
    "GetXmlByDocumentKey",
    "GetAcquirer",
    "GetStatusEvent",
];

/// A python that imports zeep and xmlsec: `python3`, else the system's own
/// (Debian's packages land there even when another python3 is first on PATH).
fn python_with_zeep() -> Option<&'static str> {
    let found = ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import zeep, xmlsec"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() && std::env::var_os("REQUIRE_CHECKERS").is_some() {
        panic!("python3-zeep and python3-xmlsec are required (REQUIRE_CHECKERS is set)");
    }
    found
}

/// Invoice `number` of `nit`, its CUFE computed with `key`, signed and
/// zipped into `dir`; what the script needs to send it and check the answer.
fn document(dir: &Path, nit: &str, number: &str, key: &str) -> Value {
    let (xml, cufe) = fixtures::signed_invoice(nit, number, key);
    let stem = format!("fv{number}");
    let zip = zip_single(
        &format!("{stem}.xml"),
        xml.as_bytes(),
        fixtures::signing_time(),
    )
    .expect("zip");
    let path = dir.join(format!("z{number}.zip"));
    std::fs::write(&path, zip).unwrap();
    json!({
        "zip": path,
        "file_name": format!("z{number}.zip"),
        "xml_file_name": stem,
        "number": number,
        "cufe": cufe,
    })
}

#[test]
fn a_zeep_client_built_from_the_wsdl_reads_every_answer() {
    let Some(python) = python_with_zeep() else {
        eprintln!("skipped: python3-zeep / python3-xmlsec not installed");
        return;
    };
    let app = TestApp::spawn_with(Launch::default().shared_clock());
    let sim = app.keys["tax_sim_url"].as_str().unwrap().to_string();
    // The sample documents are dated the day of their fixed signing time:
    // the simulator's day then (annex 1.9, an invoice is received the day
    // it is dated).
    crate::support::events::set_clock(
        &app,
        crate::support::clock::offset_for(fixtures::signing_time()),
    );
    let issuers: Vec<IssuerRecord> = app
        .client
        .get(format!("{sim}/__sim/issuers"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let issuer = issuers
        .iter()
        .find(|i| i.nit == fixtures::NIT)
        .expect("the demo company is registered at the simulator");
    // The sample documents are of the testing environment: numbered from
    // the authority's test set and coded with its technical key, whatever
    // the company registered (decisions.md §5).
    let key = emisor_store::test_set::TEST_TECHNICAL_KEY.to_string();
    let number = |offset: u64| format!("SETP{}", 990_000_000 + offset);

    let dir = tempfile::tempdir().unwrap();
    // The client's WS-Security credentials: a certificate naming the
    // issuer (the authority reads the caller's NIT from it, and gives a
    // document back only to its parties).
    let (p12, password) =
        emisor::engine::signing_key::generate_self_signed("Cliente zeep", &issuer.nit, 2).unwrap();
    let client_key = emisor::engine::signing_key::SigningKey::from_pkcs12(&p12, &password).unwrap();
    let key_path = dir.path().join("client.key");
    let cert_path = dir.path().join("client.crt");
    std::fs::write(
        &key_path,
        client_key.private_key().private_key_to_pem_pkcs8().unwrap(),
    )
    .unwrap();
    std::fs::write(&cert_path, client_key.certificate_pem().unwrap()).unwrap();

    let mut rejected = document(dir.path(), &issuer.nit, &number(2), "not-the-technical-key");
    // A CUFE computed with another key breaks the CUFE rule.
    rejected["rule"] = json!("FAD06");
    let ranges: Vec<Value> = issuer
        .ranges
        .iter()
        .map(|r| {
            json!({
                "ResolutionNumber": r.resolution_number,
                "ResolutionDate": r.resolution_date,
                "Prefix": r.prefix,
                "FromNumber": r.from_number,
                "ToNumber": r.to_number,
                "ValidDateFrom": r.valid_date_from,
                "ValidDateTo": r.valid_date_to,
                "TechnicalKey": r.technical_key,
            })
        })
        .collect();
    let case = json!({
        "service": format!("{sim}{SERVICE_PATH}"),
        "key": key_path,
        "cert": cert_path,
        "nit": issuer.nit,
        "name": issuer.name,
        "software": issuer.software.first().expect("software").id,
        "ranges": ranges,
        "accepted": document(dir.path(), &issuer.nit, &number(1), &key),
        "rejected": rejected,
        "async": document(dir.path(), &issuer.nit, &number(3), &key),
    });
    let case_path = dir.path().join("case.json");
    std::fs::write(&case_path, case.to_string()).unwrap();

    let out = Command::new(python)
        .arg(SCRIPT)
        .arg(&case_path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the zeep client failed:\n{stdout}\n{stderr}"
    );
    for op in OPERATIONS {
        assert!(
            stdout.lines().any(|l| l == format!("{op} ok")),
            "{op} not checked:\n{stdout}"
        );
    }
    assert!(stdout.contains("singleWsdl ok"), "{stdout}");
}
