//! `/pos` over HTTP against the in-process simulator: receipts answered
//! synchronously field by field (totals = subtotal + taxes + tip), the XML
//! validated (xmllint + XSD), signed (xmlsec1) and its CUDE recomputed, the
//! thermal receipt on both widths (pdftotext, zbarimg), adjustment notes,
//! list filters and paging, the cash count equal to the sum of the listed
//! receipts, the authority down with test and live keys, and each refusal.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::checkers::*;
use crate::support::flow::sim_mode;

/// A sale: two coffees with INC 8 %, a sandwich with VAT 19 % and a
/// discount, a tip; paid in cash and by card.
pub fn sale(caja: &str, cajero: &str) -> Value {
    json!({
        "id_caja": caja,
        "id_cajero": cajero,
        "lineas": [
            {"descripcion": "Café americano", "cantidad": 2, "precio_unitario": 4500,
             "porcentaje_iva": 8, "tipo_impuesto": "04", "codigo": "CAF-1"},
            {"descripcion": "Sándwich", "cantidad": 1, "precio_unitario": 12000,
             "porcentaje_iva": 19, "descuento_valor": 2000}
        ],
        "propina_voluntaria": 1500,
        "pagos": [
            {"forma": "1", "metodo": "10", "monto": 10000},
            {"forma": "1", "metodo": "48", "monto": 13120}
        ]
    })
}

fn emitir(app: &TestApp, body: &Value) -> Value {
    let body = &crate::support::bodies::unique(body.clone());
    let (status, res) = json(app.post("/v1/api/pos/emitir", &app.sk_test(), body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["success"], true, "{res}");
    res["data"].clone()
}

fn money(v: &Value) -> rust_decimal::Decimal {
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn a_sale_is_issued_synchronously_accepted_and_answered_field_by_field() {
    let app = TestApp::spawn();
    let data = emitir(&app, &sale("3", "17"));
    // Subtotal 9000 + 10000; INC 720, VAT 1900; tip 1500.
    assert_eq!(data["subtotal"], "19000.00", "{data}");
    assert_eq!(data["total_impuestos"], "2620.00");
    assert_eq!(data["propina"], "1500.00");
    assert_eq!(data["total"], "23120.00");
    assert_eq!(
        money(&data["total"]),
        money(&data["subtotal"]) + money(&data["total_impuestos"]) + money(&data["propina"])
    );
    assert_eq!(data["estado_tax"], "Aceptado");
    assert_eq!(data["id_estado_documento"], 2);
    assert_eq!(data["id_tipo_documento"], 9);
    assert_eq!(data["prefijo"], "EPOS");
    assert!(data["tiempo_emision_ms"].is_u64());
    let id = data["id"].as_u64().unwrap();
    assert_eq!(
        data["tirilla_url"],
        format!("/v1/api/pos/{id}/tirilla?width=80")
    );
    assert_eq!(data["xml_url"], format!("/v1/api/facturacion/{id}/xml"));
    assert_eq!(data["pdf_url"], format!("/v1/api/facturacion/{id}/pdf"));
    let pdf = app.get(data["pdf_url"].as_str().unwrap(), &app.sk_test());
    assert_eq!(pdf.status().as_u16(), 200);
    assert_eq!(pdf.headers()["content-type"], "application/pdf");
    let cude = data["cude"].as_str().unwrap();
    assert_eq!(cude.len(), 96);
    assert!(data["qr_url"].as_str().unwrap().ends_with(cude));

    let xml = xml_of(&app, &format!("/v1/api/facturacion/{id}/xml"));
    xsd_valid(&xml);
    xmlsec_verifies(&xml);
    assert_eq!(recomputed_code(&app, &xml), cude, "CUDE recomputed");
    // The annex extensions filled from the request (decisions.md §5).
    assert!(xml.contains("<Name>PlacaCaja</Name><Value>3</Value>"));
    assert!(xml.contains("<Name>Cajero</Name><Value>17</Value>"));
    assert!(xml.contains("<Name>SubTotal</Name><Value>19000.00</Value>"));
    assert!(xml.contains("<Name>Codigo</Name><Value>222222222222</Value>"));
    // The tip is a charge; both payment means are written.
    assert!(xml.contains("Propina voluntaria"));
    assert!(xml.contains("<cbc:PaymentMeansCode>48</cbc:PaymentMeansCode>"));
    assert!(xml.contains("<cbc:PayableAmount currencyID=\"COP\">23120.00</cbc:PayableAmount>"));

    // A named buyer instead of the final consumer; prices with VAT inside.
    let mut body = sale("3", "17");
    body["cliente"] = json!({"tipo_documento": "13", "numero_documento": "1020304050",
                             "nombre_completo": "Ana Gómez", "correo": "ana@example.test"});
    body["lineas"] = json!([{"descripcion": "Libreta", "cantidad": 1, "precio_unitario": 11900, "porcentaje_iva": 19}]);
    body["precios_incluyen_impuesto"] = json!(true);
    body["propina_voluntaria"] = json!(0);
    body["pagos"] = json!([{"metodo": "49", "monto": 11900}]);
    let named = emitir(&app, &body);
    assert_eq!(named["subtotal"], "10000.00", "{named}");
    assert_eq!(named["total_impuestos"], "1900.00");
    assert_eq!(named["total"], "11900.00");
    let xml = xml_of(&app, &format!("/v1/api/facturacion/{}/xml", named["id"]));
    assert!(xml.contains("1020304050"));
    assert!(xml.contains("Ana Gómez"));
    assert_eq!(recomputed_code(&app, &xml), named["cude"].as_str().unwrap());

    // Without pagos: one cash payment of the total; transmitir false: a draft.
    let mut draft = sale("4", "1");
    draft.as_object_mut().unwrap().remove("pagos");
    draft["transmitir"] = json!(false);
    let d = emitir(&app, &draft);
    assert_eq!(d["estado_tax"], "Borrador");
    assert_eq!(d["id_estado_documento"], 1);

    // The detail: everything sent, totals, state, history.
    let (status, detail) = json(app.get(&format!("/v1/api/pos/{id}"), &app.sk_test()));
    assert_eq!(status, 200, "{detail}");
    let detail = &detail["data"];
    assert_eq!(detail["solicitud"]["id_caja"], "3");
    assert_eq!(detail["resumen"]["propina"], "1500.00");
    assert_eq!(detail["resumen"]["pagos"], "10=10000.00;48=13120.00");
    assert_eq!(detail["estado_tax"], "Aceptado");
    assert!(
        detail["historial"].as_array().unwrap().len() >= 2,
        "{detail}"
    );
}

#[test]
fn the_thermal_receipt_prints_on_both_widths_and_refuses_others() {
    let app = TestApp::spawn();
    let data = emitir(&app, &sale("1", "2"));
    let id = data["id"].as_u64().unwrap();
    for width in ["80", "58"] {
        let res = app.get(
            &format!("/v1/api/pos/{id}/tirilla?width={width}"),
            &app.sk_test(),
        );
        assert_eq!(res.status(), 200, "width {width}");
        assert_eq!(res.headers()["content-type"], "application/pdf");
        let pdf = res.bytes().unwrap();
        assert!(pdf.starts_with(b"%PDF"));
        if tool("pdftotext") {
            let text = pdftotext(&pdf);
            let number = format!("EPOS{}", data["numero"]);
            assert!(text.contains(&number), "width {width}: {text}");
            let compact: String = text.split_whitespace().collect();
            assert!(
                compact.contains(data["cude"].as_str().unwrap()),
                "width {width}: the CUDE in full"
            );
        }
        if tool("zbarimg") && tool("pdftoppm") {
            assert_eq!(
                zbarimg(&pdf),
                data["qr_url"].as_str().unwrap(),
                "width {width}"
            );
        }
    }
    // 80 mm when no width is given.
    let res = app.get(&format!("/v1/api/pos/{id}/tirilla"), &app.sk_test());
    assert_eq!(res.status(), 200);
    for bad in ["90", "0", "abc", "-1"] {
        assert_error(
            app.get(
                &format!("/v1/api/pos/{id}/tirilla?width={bad}"),
                &app.sk_test(),
            ),
            422,
            "VALIDATION_ERROR",
        );
    }
    assert_error(
        app.get("/v1/api/pos/999999/tirilla?width=80", &app.sk_test()),
        404,
        "NOT_FOUND",
    );
}

#[test]
fn adjustment_notes_lists_and_the_cash_count_agree() {
    let app = TestApp::spawn();
    let a1 = emitir(&app, &sale("7", "1"));
    let a2 = emitir(&app, &sale("7", "2"));
    let mut small = sale("8", "1");
    small["lineas"] = json!([{"descripcion": "Agua", "cantidad": 1, "precio_unitario": 3000}]);
    small["propina_voluntaria"] = json!(0);
    small["pagos"] = json!([{"metodo": "10", "monto": 3000}]);
    let b1 = emitir(&app, &small);

    // A whole-receipt adjustment of a2 (its lines), and a partial one of a1.
    let id2 = a2["id"].as_u64().unwrap();
    let (status, note) = json(app.post(
        &format!("/v1/api/pos/{id2}/nota-ajuste"),
        &app.sk_test(),
        &json!({"motivo": "Devolución completa", "concepto": "2"}),
    ));
    assert_eq!(status, 200, "{note}");
    let note = &note["data"];
    assert_eq!(note["id_tipo_documento"], 10);
    assert_eq!(note["estado_tax"], "Aceptado", "{note}");
    assert_eq!(note["subtotal"], "19000.00");
    assert_eq!(note["total"], "21620.00", "lines and taxes, no tip");
    assert_eq!(note["documento_referencia"], id2);
    let xml = xml_of(&app, &format!("/v1/api/facturacion/{}/xml", note["id"]));
    xsd_valid(&xml);
    xmlsec_verifies(&xml);
    assert_eq!(recomputed_code(&app, &xml), note["cude"].as_str().unwrap());
    assert!(
        xml.contains(a2["cude"].as_str().unwrap()),
        "references the receipt"
    );

    let id1 = a1["id"].as_u64().unwrap();
    let (status, partial) = json(app.post(
        &format!("/v1/api/pos/{id1}/nota-ajuste"),
        &app.sk_test(),
        &json!({"motivo": "Devuelve un café", "concepto": "1",
                "lineas": [{"descripcion": "Café americano", "cantidad": 1, "precio_unitario": 4500,
                            "porcentaje_iva": 8, "tipo_impuesto": "04"}]}),
    ));
    assert_eq!(status, 200, "{partial}");
    assert_eq!(partial["data"]["total"], "4860.00");

    // Lists: filters by register and cashier, paging.
    let list = |q: &str| {
        let (status, res) = json(app.get(&format!("/v1/api/pos?{q}"), &app.sk_test()));
        assert_eq!(status, 200, "{q}: {res}");
        res["data"].clone()
    };
    let all = list("");
    assert_eq!(all["total"], 5, "{all}");
    let caja7 = list("id_caja=7");
    assert_eq!(
        caja7["total"], 4,
        "3 receipts… 2 receipts and 2 notes of till 7: {caja7}"
    );
    let cajero2 = list("id_caja=7&id_cajero=2");
    assert_eq!(cajero2["total"], 2, "a2 and its note: {cajero2}");
    let page = list("limit=2&page=2");
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["page"], 2);
    let last = list("limit=2&page=3");
    assert_eq!(last["items"].as_array().unwrap().len(), 1);
    // Newest first.
    let ids: Vec<u64> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted);
    let accepted = list("estado=2");
    assert_eq!(accepted["total"], 5);
    assert_eq!(list("estado=4")["total"], 0);
    let today = all["items"][0]["fecha_emision"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        list(&format!("fecha_desde={today}&fecha_hasta={today}"))["total"],
        5
    );
    assert_eq!(list("fecha_hasta=2000-01-01")["total"], 0);
    for bad in [
        "limit=0",
        "limit=101",
        "page=0",
        "fecha_desde=ayer",
        "estado=9",
    ] {
        assert_error(
            app.get(&format!("/v1/api/pos?{bad}"), &app.sk_test()),
            422,
            "VALIDATION_ERROR",
        );
    }

    // The cash count of till 7 equals the sum of its listed receipts.
    let (status, count) = json(app.get(
        &format!("/v1/api/pos/arqueo?fecha={today}&id_caja=7"),
        &app.sk_test(),
    ));
    assert_eq!(status, 200, "{count}");
    let count = &count["data"];
    let items: Vec<Value> = caja7["items"].as_array().unwrap().clone();
    let receipts: Vec<&Value> = items
        .iter()
        .filter(|i| i["id_tipo_documento"] == 9)
        .collect();
    let notes: Vec<&Value> = items
        .iter()
        .filter(|i| i["id_tipo_documento"] == 10)
        .collect();
    let sum = |v: &[&Value], f: &dyn Fn(&Value) -> rust_decimal::Decimal| {
        v.iter().map(|i| f(i)).sum::<rust_decimal::Decimal>()
    };
    assert_eq!(count["cantidad"], 2);
    assert_eq!(
        money(&count["total_ventas"]),
        sum(&receipts, &|i| money(&i["total"]))
    );
    assert_eq!(
        money(&count["subtotal"]),
        sum(&receipts, &|i| money(&i["resumen"]["subtotal"]))
    );
    assert_eq!(
        money(&count["propinas"]),
        sum(&receipts, &|i| money(&i["resumen"]["propina"]))
    );
    assert_eq!(
        money(&count["notas_ajuste"]["total"]),
        sum(&notes, &|i| money(&i["total"]))
    );
    assert_eq!(count["total_ventas"], "46240.00");
    assert_eq!(count["notas_ajuste"]["cantidad"], 2);
    assert_eq!(count["total_neto"], "19760.00"); // 46240 − 21620 − 4860
    let methods: Vec<(String, String)> = count["por_metodo_pago"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["metodo"].as_str().unwrap().to_string(),
                m["total"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        methods,
        vec![
            ("10".into(), "20000.00".into()),
            ("48".into(), "26240.00".into())
        ]
    );
    let taxes = count["por_impuesto"].as_array().unwrap();
    assert_eq!(taxes.len(), 2, "{count}");
    assert_eq!(taxes[0]["tipo"], "01");
    assert_eq!(taxes[0]["valor"], "3800.00");
    assert_eq!(taxes[1]["tipo"], "04");
    assert_eq!(taxes[1]["valor"], "1440.00");
    let numbers = [
        a1["numero"].as_u64().unwrap(),
        a2["numero"].as_u64().unwrap(),
    ];
    assert_eq!(
        count["primer_numero"],
        format!("EPOS{}", numbers.iter().min().unwrap())
    );
    assert_eq!(
        count["ultimo_numero"],
        format!("EPOS{}", numbers.iter().max().unwrap())
    );
    // The whole day (both tills).
    let (_, day) = json(app.get("/v1/api/pos/arqueo", &app.sk_test()));
    assert_eq!(day["data"]["cantidad"], 3, "{day}");
    assert_eq!(
        money(&day["data"]["total_ventas"]),
        money(&count["total_ventas"]) + money(&b1["total"])
    );
    assert_error(
        app.get("/v1/api/pos/arqueo?fecha=hoy", &app.sk_test()),
        422,
        "VALIDATION_ERROR",
    );
}

#[test]
fn each_bad_sale_or_adjustment_is_refused_and_consumes_nothing() {
    let app = TestApp::spawn();
    let next = || {
        let (_, c) = json(app.get("/v1/api/facturacion/consecutivo/pos", &app.sk_test()));
        c["data"]["siguiente"].clone()
    };
    let before = next();
    let refuse = |body: Value, field: &str| {
        let err = assert_error(
            app.post("/v1/api/pos/emitir", &app.sk_test(), &body),
            422,
            "VALIDATION_ERROR",
        );
        let details = err["error"]["details"].as_array().unwrap();
        assert!(
            details.iter().any(|d| d["field"] == field),
            "expected {field}: {err}"
        );
        err
    };
    let mut no_lines = sale("1", "1");
    no_lines["lineas"] = json!([]);
    refuse(no_lines, "lineas");
    let mut missing = sale("1", "1");
    missing.as_object_mut().unwrap().remove("lineas");
    refuse(missing, "lineas");
    let mut negative = sale("1", "1");
    negative["lineas"][0]["cantidad"] = json!(-1);
    negative.as_object_mut().unwrap().remove("pagos");
    refuse(negative, "lineas[0].cantidad");
    let mut unpaid = sale("1", "1");
    unpaid["pagos"][1]["monto"] = json!(100);
    let err = refuse(unpaid, "pagos");
    let message = err["error"]["details"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("10100") && message.contains("23120.00"),
        "{message}"
    );
    let mut asynchronous = sale("1", "1");
    asynchronous["asincrono"] = json!(true);
    refuse(asynchronous, "asincrono");
    let mut tax = sale("1", "1");
    tax["lineas"][0]["tipo_impuesto"] = json!("03");
    refuse(tax, "lineas[0].tipo_impuesto");
    let mut tip = sale("1", "1");
    tip["propina_voluntaria"] = json!(-5);
    refuse(tip, "propina_voluntaria");
    // A wrong JSON type is a 400.
    let mut wrong = sale("1", "1");
    wrong["lineas"] = json!("café");
    assert_error(
        app.post("/v1/api/pos/emitir", &app.sk_test(), &wrong),
        400,
        "MALFORMED_JSON",
    );
    assert_eq!(next(), before, "no number consumed");

    // Adjustments: unknown receipt, another company's, a missing motive.
    let receipt = emitir(&app, &sale("1", "1"));
    let id = receipt["id"].as_u64().unwrap();
    let body = json!({"motivo": "x", "concepto": "1"});
    assert_error(
        app.post("/v1/api/pos/999999/nota-ajuste", &app.sk_test(), &body),
        404,
        "NOT_FOUND",
    );
    let (status, other) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra Tienda SAS", "demo": true}),
    ));
    assert_eq!(status, 201, "{other}");
    let other_key = other["data"]["sk_test"].as_str().unwrap().to_string();
    assert_error(
        app.post(&format!("/v1/api/pos/{id}/nota-ajuste"), &other_key, &body),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.get(&format!("/v1/api/pos/{id}/tirilla"), &other_key),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.get(&format!("/v1/api/pos/{id}"), &other_key),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.post(
            &format!("/v1/api/pos/{id}/nota-ajuste"),
            &app.sk_test(),
            &json!({"concepto": "1"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.post(
            &format!("/v1/api/pos/{id}/nota-ajuste"),
            &app.sk_test(),
            &json!({"motivo": "x", "concepto": "9"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
}

#[test]
fn authority_down_a_test_sale_is_kept_and_queued_a_live_one_is_refused() {
    // time_scale 0.1: the breaker stays open 6 s once open.
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_RESILIENCE__TIME_SCALE", "0.1")
            .env("EMISOR_RESILIENCE__RECOVERY_INTERVAL_S", "20")
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000"),
    );
    sim_mode(&app, json!({"mode": "down"}));
    let started = Instant::now();
    let data = emitir(&app, &sale("1", "1"));
    assert!(
        matches!(data["id_estado_documento"].as_u64(), Some(3 | 5)),
        "{data}"
    );
    assert!(matches!(
        data["estado_tax"].as_str(),
        Some("En Cola" | "Esperando tax")
    ));
    assert!(started.elapsed() < Duration::from_secs(10));
    // Open the breaker (5 failures), then a live sale is refused, unnumbered.
    for _ in 0..5 {
        emitir(&app, &sale("1", "1"));
    }
    let live = app.sk_live();
    let next = || {
        let (_, c) = json(app.get("/v1/api/facturacion/consecutivo/pos", &live));
        c["data"]["siguiente"].clone()
    };
    let before = next();
    assert_error(
        app.post(
            "/v1/api/pos/emitir",
            &live,
            &crate::support::bodies::unique(sale("1", "1")),
        ),
        503,
        "TAX_UNAVAILABLE",
    );
    assert_eq!(next(), before, "nothing numbered");
    // Back up: the kept sale is accepted by the retries.
    sim_mode(&app, json!({"mode": "up"}));
    let id = data["id"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, d) = json(app.get(&format!("/v1/api/pos/{id}"), &app.sk_test()));
        if d["data"]["id_estado_documento"] == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "not accepted: {d}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
