//! `/documentos-soporte` over HTTP against the in-process simulator: the
//! answer of spec 2.10 field by field (total = subtotal − withholdings),
//! the XML validated (xmllint + XSD), signed (xmlsec1) and its CUDS
//! recomputed, resident and non-resident vendors, adjustment notes (whole
//! and partial), detail, live status, PDF and XML, list filters and paging,
//! and each refusal.

use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::checkers::{
    pdftotext, recomputed_code, tool, xml_of, xmlsec_verifies, xsd_valid, zbarimg,
};

fn vendor() -> Value {
    json!({"numero_identificacion": "1020304050", "nombre": "Pedro Pérez",
           "tipo_documento": "13", "correo": "pedro@example.test",
           "direccion": "Carrera 7 # 45-10", "municipio": "05001"})
}

fn body() -> Value {
    json!({
        "proveedor": vendor(),
        "lineas": [
            {"descripcion": "Servicio de aseo", "cantidad": 2, "precio_unitario": 50000,
             "unidad_medida": "E48", "retenciones": [{"tipo": "07", "porcentaje": 4}]},
            {"descripcion": "Materiales", "cantidad": 1, "precio_unitario": 20000,
             "retenciones": [{"tipo": "05", "porcentaje": 0.966, "valor": 193.2}]}
        ],
        "forma_pago": "1",
        "metodo_pago": "47",
        "observaciones": "Pago de servicios de marzo",
        "centro_costos": "ADM-01"
    })
}

fn emitir(app: &TestApp, body: &Value) -> Value {
    let body = &crate::support::bodies::unique(body.clone());
    let (status, res) = json(app.post("/v1/api/documentos-soporte/emitir", &app.sk_test(), body));
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["success"], true, "{res}");
    res["data"].clone()
}

#[test]
fn a_support_document_is_issued_accepted_and_answered_field_by_field() {
    let app = TestApp::spawn();
    let data = emitir(&app, &body());
    assert_eq!(data["subtotal"], "120000.00", "{data}");
    assert_eq!(data["total_retenciones"], "4193.20");
    assert_eq!(data["total"], "115806.80", "subtotal − withholdings");
    assert_eq!(data["estado_tax"], "Aceptado");
    assert_eq!(data["id_estado_documento"], 2);
    assert_eq!(data["id_tipo_documento"], 4);
    assert_eq!(data["prefijo"], "SEDS");
    assert_eq!(data["centro_costos"], "ADM-01");
    let id = data["id"].as_u64().unwrap();
    assert_eq!(
        data["pdf_url"],
        format!("/v1/api/documentos-soporte/{id}/pdf")
    );
    assert_eq!(
        data["xml_url"],
        format!("/v1/api/documentos-soporte/{id}/xml")
    );
    let cuds = data["cuds"].as_str().unwrap();
    assert_eq!(cuds.len(), 96);
    assert!(data["qr_url"].as_str().unwrap().ends_with(cuds));

    let xml = xml_of(&app, &format!("/v1/api/documentos-soporte/{id}/xml"));
    xsd_valid(&xml);
    xmlsec_verifies(&xml);
    assert_eq!(recomputed_code(&app, &xml), cuds, "CUDS recomputed");
    assert!(xml.contains("schemeName=\"CUDS-SHA384\""));
    assert!(
        xml.contains("<cbc:CustomizationID>10</cbc:CustomizationID>"),
        "resident"
    );
    // The caller's 07 ReteFuente is the authority's 06, 05 ReteICA its 07.
    assert!(xml.contains("<cbc:ID>06</cbc:ID><cbc:Name>ReteRenta</cbc:Name>"));
    assert!(xml.contains("<cbc:ID>07</cbc:ID><cbc:Name>ReteICA</cbc:Name>"));
    assert!(xml.contains("<cbc:PaymentMeansCode>47</cbc:PaymentMeansCode>"));

    // The PDF: the code in full and the QR of the document.
    let res = app.get(
        &format!("/v1/api/documentos-soporte/{id}/pdf"),
        &app.sk_test(),
    );
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/pdf");
    let pdf = res.bytes().unwrap();
    if tool("pdftotext") {
        let compact: String = pdftotext(&pdf).split_whitespace().collect();
        assert!(compact.contains(cuds));
    }
    if tool("zbarimg") && tool("pdftoppm") {
        assert_eq!(zbarimg(&pdf), data["qr_url"].as_str().unwrap());
    }

    // The detail: everything sent, computed totals, code, state, history.
    let (status, detail) =
        json(app.get(&format!("/v1/api/documentos-soporte/{id}"), &app.sk_test()));
    assert_eq!(status, 200, "{detail}");
    let d = &detail["data"];
    assert_eq!(d["solicitud"]["proveedor"]["nombre"], "Pedro Pérez");
    assert_eq!(d["resumen"]["total_neto"], "115806.80");
    assert_eq!(d["resumen"]["centro_costos"], "ADM-01");
    assert_eq!(d["codigo"], cuds);
    assert_eq!(d["estado_tax"], "Aceptado");
    assert!(d["historial"].as_array().unwrap().len() >= 2, "{d}");

    // Live status of the CUDS.
    let (status, live) = json(app.post(
        &format!("/v1/api/documentos-soporte/{id}/consultar-tax"),
        &app.sk_test(),
        &json!({}),
    ));
    assert_eq!(status, 200, "{live}");
    assert_eq!(live["data"]["estado_tax"], "Aceptado");
    assert_eq!(live["data"]["codigo"], cuds);

    // A non-resident vendor (passport, abroad): operation 11, no RUT fields.
    let mut abroad = body();
    abroad["proveedor"] = json!({"numero_identificacion": "X1234567", "nombre": "John Smith",
                                 "tipo_documento": "41", "pais": "US", "municipio": "Miami",
                                 "direccion": "1 Ocean Drive"});
    abroad["lineas"] =
        json!([{"descripcion": "Consultoría", "cantidad": 1, "precio_unitario": 300000}]);
    let nr = emitir(&app, &abroad);
    assert_eq!(nr["total_retenciones"], "0.00");
    assert_eq!(nr["total"], "300000.00");
    assert_eq!(nr["estado_tax"], "Aceptado", "{nr}");
    let xml = xml_of(
        &app,
        &format!("/v1/api/documentos-soporte/{}/xml", nr["id"]),
    );
    assert!(xml.contains("<cbc:CustomizationID>11</cbc:CustomizationID>"));
    // The foreign vendor's city is kept: no Colombian codes, the city named.
    assert!(
        xml.contains("<cac:Address><cbc:ID>00000</cbc:ID><cbc:CityName>Miami</cbc:CityName><cbc:CountrySubentity>Miami</cbc:CountrySubentity><cbc:CountrySubentityCode>00</cbc:CountrySubentityCode><cac:AddressLine><cbc:Line>1 Ocean Drive</cbc:Line></cac:AddressLine><cac:Country><cbc:IdentificationCode>US</cbc:IdentificationCode>"),
        "{xml}"
    );
    xsd_valid(&xml);
    assert_eq!(recomputed_code(&app, &xml), nr["cuds"].as_str().unwrap());

    // transmitir false: a draft; consultar-tax on it leaves it a draft.
    let mut draft = body();
    draft["transmitir"] = json!(false);
    let dr = emitir(&app, &draft);
    assert_eq!(dr["estado_tax"], "Borrador");
}

#[test]
fn adjustment_notes_lists_and_refusals() {
    let app = TestApp::spawn();
    let original = emitir(&app, &body());
    let id = original["id"].as_u64().unwrap();
    let mut other_vendor = body();
    other_vendor["proveedor"]["numero_identificacion"] = json!("79111222");
    other_vendor["centro_costos"] = json!("VEN-02");
    let second = emitir(&app, &other_vendor);

    // The whole document adjusted (its lines), documento_referencia agreeing.
    let (status, whole) = json(app.post(
        &format!("/v1/api/documentos-soporte/{id}/nota-ajuste"),
        &app.sk_test(),
        &json!({"documento_referencia": id, "concepto_nota": "1", "motivo": "Servicio no prestado"}),
    ));
    assert_eq!(status, 200, "{whole}");
    let whole = &whole["data"];
    assert_eq!(whole["id_tipo_documento"], 5);
    assert_eq!(whole["estado_tax"], "Aceptado", "{whole}");
    assert_eq!(whole["subtotal"], "120000.00");
    assert_eq!(whole["total"], "115806.80");
    assert_eq!(whole["documento_referencia"], id);
    let xml = xml_of(
        &app,
        &format!("/v1/api/documentos-soporte/{}/xml", whole["id"]),
    );
    xsd_valid(&xml);
    xmlsec_verifies(&xml);
    assert_eq!(recomputed_code(&app, &xml), whole["cuds"].as_str().unwrap());
    assert!(xml.contains(original["cuds"].as_str().unwrap()));

    // A partial price adjustment.
    let (status, partial) = json(app.post(
        &format!("/v1/api/documentos-soporte/{id}/nota-ajuste"),
        &app.sk_test(),
        &json!({"concepto_nota": "3", "motivo": "Ajuste de precio",
                "lineas": [{"descripcion": "Ajuste aseo", "cantidad": 1, "precio_unitario": 10000}]}),
    ));
    assert_eq!(status, 200, "{partial}");
    assert_eq!(partial["data"]["total"], "10000.00");

    // Refusals of notes.
    let note = json!({"concepto_nota": "1", "motivo": "x"});
    let path = |i: u64| format!("/v1/api/documentos-soporte/{i}/nota-ajuste");
    assert_error(
        app.post(&path(999999), &app.sk_test(), &note),
        404,
        "NOT_FOUND",
    );
    let mut mismatch = note.clone();
    mismatch["documento_referencia"] = json!(id + 1000);
    assert_error(
        app.post(&path(id), &app.sk_test(), &mismatch),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.post(
            &path(id),
            &app.sk_test(),
            &json!({"concepto_nota": "4", "motivo": "x"}),
        ),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        app.post(&path(id), &app.sk_test(), &json!({"motivo": "x"})),
        422,
        "VALIDATION_ERROR",
    );
    let (status, other) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{other}");
    let other_key = other["data"]["sk_test"].as_str().unwrap().to_string();
    assert_error(app.post(&path(id), &other_key, &note), 404, "NOT_FOUND");
    for p in ["", "/pdf", "/xml"] {
        assert_error(
            app.get(&format!("/v1/api/documentos-soporte/{id}{p}"), &other_key),
            404,
            "NOT_FOUND",
        );
    }

    // Lists: vendor filter, states, dates, paging.
    let list = |q: &str| {
        let (status, res) =
            json(app.get(&format!("/v1/api/documentos-soporte?{q}"), &app.sk_test()));
        assert_eq!(status, 200, "{q}: {res}");
        res["data"].clone()
    };
    let all = list("");
    assert_eq!(all["total"], 4, "{all}");
    assert_eq!(list("proveedor=1020304050")["total"], 3);
    let second_only = list("proveedor=79111222");
    assert_eq!(second_only["total"], 1);
    assert_eq!(second_only["items"][0]["id"], second["id"]);
    assert_eq!(
        second_only["items"][0]["resumen"]["centro_costos"],
        "VEN-02"
    );
    assert_eq!(list("estado=2")["total"], 4);
    assert_eq!(list("estado=1,4")["total"], 0);
    let today = all["items"][0]["fecha_emision"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(list(&format!("fecha_desde={today}"))["total"], 4);
    assert_eq!(list("fecha_hasta=2001-01-01")["total"], 0);
    let p2 = list("limit=3&page=2");
    assert_eq!(p2["items"].as_array().unwrap().len(), 1);
    assert_eq!(p2["limit"], 3);
    // No POS receipt or invoice in this family's list, and no support
    // document in the POS list.
    let (_, pos) = json(app.get("/v1/api/pos", &app.sk_test()));
    assert_eq!(pos["data"]["total"], 0);
    assert_error(
        app.get(&format!("/v1/api/pos/{id}"), &app.sk_test()),
        404,
        "NOT_FOUND",
    );

    // Refusals of a document; nothing numbered.
    let next = || {
        let (_, c) = json(app.get("/v1/api/facturacion/consecutivo/ds", &app.sk_test()));
        c["data"]["siguiente"].clone()
    };
    let before = next();
    let refuse = |b: Value, field: &str| {
        let err = assert_error(
            app.post("/v1/api/documentos-soporte/emitir", &app.sk_test(), &b),
            422,
            "VALIDATION_ERROR",
        );
        assert!(
            err["error"]["details"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["field"] == field),
            "expected {field}: {err}"
        );
    };
    let mut b = body();
    b["lineas"] = json!([]);
    refuse(b, "lineas");
    let mut b = body();
    b["lineas"][0]["cantidad"] = json!(-2);
    refuse(b, "lineas[0].cantidad");
    let mut b = body();
    b["lineas"][0]["retenciones"][0]["tipo"] = json!("01");
    refuse(b, "lineas[0].retenciones[0].tipo");
    let mut b = body();
    b["lineas"][1]["retenciones"][0]["valor"] = json!(500);
    refuse(b, "lineas[1].retenciones[0].valor");
    let mut b = body();
    b["proveedor"]["nombre"] = json!("");
    refuse(b, "proveedor.nombre");
    let mut b = body();
    b["fecha_emision"] = json!("2020-01-01");
    refuse(b, "fecha_emision");
    let mut b = body();
    b["forma_pago"] = json!("2");
    refuse(b, "fecha_vencimiento");
    let mut b = body();
    b.as_object_mut().unwrap().remove("proveedor");
    refuse(b, "proveedor");
    assert_eq!(next(), before, "no number consumed");
}
