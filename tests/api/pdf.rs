//! `GET /facturacion/:id/pdf` over HTTP: one document of every family
//! issued through the API and accepted by the simulator, its PDF read back
//! with `pdftotext` (the code in full, the total, the issuer's NIT with its
//! check digit, "Bogotá") and its QR code decoded with `zbarimg` (exactly
//! the document's `qr_url`). POS receipts on both thermal widths.

use emisor::api::invoice_request::examples;
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::checkers::{pdftotext, tool, zbarimg};

fn issue(app: &TestApp, body: &Value) -> Value {
    let body = unique(body.clone());
    let (status, res) = json(app.post("/v1/api/facturacion", &app.sk_test(), &body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["transmission"]["isValid"], true, "{res}");
    res["data"].clone()
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

/// Fetches the PDF at `query` of document `data` and checks it as a reader.
fn check_pdf(app: &TestApp, data: &Value, query: &str) -> String {
    let id = data["documento"]["id"].as_u64().unwrap();
    let res = app.get(
        &format!("/v1/api/facturacion/{id}/pdf{query}"),
        &app.sk_test(),
    );
    assert_eq!(res.status().as_u16(), 200, "document {id}");
    assert_eq!(res.headers()["content-type"], "application/pdf");
    let disposition = res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(disposition.ends_with(".pdf\""), "{disposition}");
    let pdf = res.bytes().unwrap().to_vec();
    assert!(pdf.starts_with(b"%PDF-"));
    assert!(
        pdf.len() < 150_000,
        "{} bytes: the font is subset",
        pdf.len()
    );
    if !tool("pdftotext") || !tool("zbarimg") || !tool("pdftoppm") {
        return String::new();
    }
    let text = pdftotext(&pdf);
    let flat: String = text.split_whitespace().collect();
    let code = data["cufe"].as_str().unwrap();
    assert!(
        flat.contains(code),
        "document {id}: code {code} not in\n{text}"
    );
    let total = data["documento"]["total"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| data["documento"]["total"].to_string());
    assert!(
        text.contains(&printed(&total)),
        "document {id}: total {total} not in\n{text}"
    );
    assert!(text.contains("Bogotá"), "document {id}:\n{text}");
    let nit = format!("NIT {}-", app.keys["nit"].as_str().unwrap());
    assert!(text.contains(&nit), "document {id}: {nit} not in\n{text}");
    assert_eq!(
        zbarimg(&pdf),
        data["qr_url"].as_str().unwrap(),
        "document {id}"
    );
    text
}

#[test]
fn every_family_has_a_pdf_with_its_code_total_and_qr() {
    let app = TestApp::spawn();
    let invoice = issue(&app, &examples::invoice());
    let support = issue(&app, &examples::support_document());
    let pos = issue(&app, &examples::pos());
    let invoice_id = invoice["documento"]["id"].as_u64().unwrap();
    let support_id = support["documento"]["id"].as_u64().unwrap();
    let pos_id = pos["documento"]["id"].as_u64().unwrap();
    let mut a4 = vec![(1u8, invoice.clone()), (4, support.clone())];
    for (tipo, original) in [(2u8, invoice_id), (3, invoice_id), (5, support_id)] {
        let body = examples::with_reference(examples::for_type(tipo).unwrap(), original);
        a4.push((tipo, issue(&app, &body)));
    }
    for tipo in [6u8, 7, 8] {
        a4.push((tipo, issue(&app, &examples::for_type(tipo).unwrap())));
    }
    for (tipo, data) in &a4 {
        let text = check_pdf(&app, data, "");
        if text.is_empty() {
            continue;
        }
        let numero = &data["documento"]["numero"];
        let number = format!(
            "{}{}",
            data["documento"]["prefijo"].as_str().unwrap(),
            numero
                .as_str()
                .map_or_else(|| numero.to_string(), str::to_string)
        );
        assert!(
            text.contains(&number),
            "type {tipo}: {number} not in\n{text}"
        );
        assert!(
            text.contains("Página 1 de 1"),
            "type {tipo}: A4 page\n{text}"
        );
    }
    let adjustment = issue(
        &app,
        &examples::with_reference(examples::pos_adjustment(), pos_id),
    );
    for data in [&pos, &adjustment] {
        for query in ["", "?width=80", "?width=58"] {
            let text = check_pdf(&app, data, query);
            if !text.is_empty() {
                assert!(!text.contains("Página"), "a strip, not A4:\n{text}");
            }
        }
    }
}

#[test]
fn the_pdf_is_the_issuing_company_s_only() {
    let app = TestApp::spawn();
    let data = issue(&app, &examples::invoice());
    let id = data["documento"]["id"].as_u64().unwrap();
    // Unknown id.
    assert_error(
        app.get("/v1/api/facturacion/999999/pdf", &app.sk_test()),
        404,
        "NOT_FOUND",
    );
    // Another company's key.
    let (status, other) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{other}");
    let other_key = other["data"]["sk_test"].as_str().unwrap();
    assert_error(
        app.get(&format!("/v1/api/facturacion/{id}/pdf"), other_key),
        404,
        "NOT_FOUND",
    );
    // No key.
    let res = app
        .client
        .get(format!("{}/v1/api/facturacion/{id}/pdf", app.url))
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 401);
    // A strip is 80 or 58 mm wide, nothing else.
    for bad in ["72", "0", "abc", "-80"] {
        assert_error(
            app.get(
                &format!("/v1/api/facturacion/{id}/pdf?width={bad}"),
                &app.sk_test(),
            ),
            422,
            "VALIDATION_ERROR",
        );
    }
    // The owner still gets it, and an invoice printed as a strip works too.
    let res = app.get(
        &format!("/v1/api/facturacion/{id}/pdf?width=58"),
        &app.sk_test(),
    );
    assert_eq!(res.status().as_u16(), 200);
}
