//! XML uploads whose work grows faster than their size: the shape is bounded
//! before any parse, the work runs on the upload pool off the HTTP workers,
//! and a full pool answers 503 BUSY at once.

use super::*;

pub(super) const UBL_INVOICE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2";

/// An `Invoice` holding `levels` nested elements that each declare a new
/// prefix: roxmltree copies every prefix in scope into each, so parsing it
/// is cubic (5,000 levels, 137 KB: 153 s of one worker).
pub(super) fn prefix_nesting(levels: usize) -> String {
    let mut xml = format!("<Invoice xmlns=\"{UBL_INVOICE_NS}\">");
    for i in 0..levels {
        xml.push_str(&format!("<p{i}:a xmlns:p{i}=\"u\">"));
    }
    for i in (0..levels).rev() {
        xml.push_str(&format!("</p{i}:a>"));
    }
    xml.push_str("</Invoice>");
    xml
}

/// A readable invoice whose buyer is `buyer`, with `declarations`
/// namespace declarations on its root in all, `elements` elements in all,
/// and a signature whose one reference covers the whole document: the
/// signature check canonicalises every element with every namespace in
/// scope (350 declarations × 60,000 elements, 250 KB: 27 s of a worker).
pub(super) fn namespace_heavy(buyer: &str, declarations: usize, elements: usize) -> String {
    const DS: &str = "http://www.w3.org/2000/09/xmldsig#";
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Invoice xmlns=\"{UBL_INVOICE_NS}\" \
         xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\" \
         xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\" \
         xmlns:ds=\"{DS}\""
    );
    for i in 4..declarations {
        xml.push_str(&format!(" xmlns:n{i}=\"urn:n:{i}\""));
    }
    xml.push('>');
    let party = |role: &str, nit: &str| {
        format!("<cac:{role}><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>{nit}</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:{role}>")
    };
    let head = [
        "<cbc:ProfileExecutionID>2</cbc:ProfileExecutionID><cbc:ID>SETP990000001</cbc:ID>".to_string(),
        format!("<cbc:UUID>{}</cbc:UUID><cbc:IssueDate>2026-01-02</cbc:IssueDate>", "ab".repeat(48)),
        party("AccountingSupplierParty", "900000099"),
        party("AccountingCustomerParty", buyer),
        "<cac:LegalMonetaryTotal><cbc:PayableAmount currencyID=\"COP\">1.00</cbc:PayableAmount></cac:LegalMonetaryTotal>".into(),
    ]
    .concat();
    let signature = format!(
        "<ds:Signature><ds:SignedInfo>\
         <ds:CanonicalizationMethod Algorithm=\"http://www.w3.org/TR/2001/REC-xml-c14n-20010315\"/>\
         <ds:SignatureMethod Algorithm=\"http://www.w3.org/2001/04/xmldsig-more#rsa-sha256\"/>\
         <ds:Reference URI=\"\"><ds:Transforms><ds:Transform Algorithm=\"{DS}enveloped-signature\"/></ds:Transforms>\
         <ds:DigestMethod Algorithm=\"http://www.w3.org/2001/04/xmlenc#sha256\"/>\
         <ds:DigestValue>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</ds:DigestValue></ds:Reference>\
         </ds:SignedInfo><ds:SignatureValue>AAAA</ds:SignatureValue></ds:Signature>"
    );
    let fixed = 1 + head.matches("<c").count() + signature.matches("<ds:").count();
    xml.push_str(&head);
    for _ in fixed..elements {
        xml.push_str("<e/>");
    }
    xml.push_str(&signature);
    xml.push_str("</Invoice>");
    xml
}

pub(super) fn upload_json(
    client: &reqwest::blocking::Client,
    app: &TestApp,
    key: &str,
    xml: &str,
) -> reqwest::blocking::Response {
    let body = json!({ "xml_base64": base64::engine::general_purpose::STANDARD.encode(xml) });
    client
        .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
        .header("X-Api-Key", key)
        .json(&body)
        .send()
        .expect("upload answered")
}

#[test]
fn hostile_xml_uploads_are_bounded_and_the_api_stays_responsive() {
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
            .env("EMISOR_UPLOADS__WORKERS", "1")
            .env("EMISOR_UPLOADS__QUEUE", "1"),
    );
    let key = app.sk_test();
    let nit = app.keys["nit"].as_str().unwrap().to_string();
    // Each answer must come well before the old costs (seconds to hours).
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let refused = |res: reqwest::blocking::Response, needle: &str| {
        let status = res.status().as_u16();
        let v: Value = res.json().unwrap();
        assert_eq!(status, 422, "{v}");
        assert_eq!(v["error"]["code"], "VALIDATION_ERROR", "{v}");
        let m = v["message"].as_str().unwrap();
        assert!(m.contains(needle), "{needle}: {m}");
    };

    // Cubic parse: refused before parsing, as JSON and as XML.
    let nesting = prefix_nesting(5000);
    refused(upload_json(&client, &app, &key, &nesting), "100 levels");
    let raw = client
        .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
        .header("X-Api-Key", &key)
        .header("Content-Type", "application/xml")
        .body(nesting)
        .send()
        .unwrap();
    refused(raw, "100 levels");
    // Quadratic canonicalisation: over the namespace bound.
    refused(
        upload_json(&client, &app, &key, &namespace_heavy(&nit, 350, 60_000)),
        "more than 100 namespaces",
    );
    // At the bounds: read, canonicalised and refused on its digest.
    let at_limit = namespace_heavy(&nit, 100, 100_000);
    refused(upload_json(&client, &app, &key, &at_limit), "signature");
    refused(
        upload_json(&client, &app, &key, &namespace_heavy(&nit, 100, 100_001)),
        "100000 elements",
    );

    // Sixteen at once on one thread and one place in the queue, while a
    // health probe runs: the probe never waits, the uploads are refused on
    // their content or told to come back.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let uploads: Vec<_> = (0..16)
        .map(|_| {
            let (client, url, key, body) = (client.clone(), app.url.clone(), key.clone(), at_limit.clone());
            std::thread::spawn(move || {
                let res = client
                    .post(format!("{url}/v1/api/eventos/cargar-documento"))
                    .header("X-Api-Key", &key)
                    .json(&json!({ "xml_base64": base64::engine::general_purpose::STANDARD.encode(body) }))
                    .send()
                    .expect("upload answered");
                let retry = res.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
                let status = res.status().as_u16();
                let v: Value = res.json().unwrap();
                (status, v["error"]["code"].as_str().unwrap_or("").to_string(), retry)
            })
        })
        .collect();
    let probe = {
        let (done, url) = (done.clone(), app.url.clone());
        std::thread::spawn(move || {
            let quick = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(3))
                .build()
                .unwrap();
            let mut answered = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let res = quick.get(format!("{url}/healthz")).send();
                assert!(
                    res.as_ref().is_ok_and(|r| r.status().is_success()),
                    "/healthz during the uploads: {res:?}"
                );
                answered += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            answered
        })
    };
    let answers: Vec<_> = uploads.into_iter().map(|t| t.join().unwrap()).collect();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(probe.join().unwrap() > 0);
    let busy: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 503).collect();
    for (status, code, retry) in &answers {
        match status {
            422 => assert_eq!(code, "VALIDATION_ERROR"),
            503 => {
                assert_eq!(code, "BUSY");
                assert!(retry.is_some(), "503 BUSY without Retry-After");
            }
            other => panic!("{other} {code}"),
        }
    }
    assert!(!busy.is_empty(), "{answers:?}");
    assert!(busy.len() < answers.len(), "{answers:?}");

    // Nothing stored.
    let (_, list) = json(app.get("/v1/api/eventos/documentos", &key));
    assert_eq!(list["data"]["total"], 0, "{list}");
}
