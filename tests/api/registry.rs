//! The circulation registry over HTTP: eligibility, the
//! registration as a title (API 035, the authority's 036), an endorsement
//! in property (036 → 037) that makes the endorsee the holder, the new
//! holder's subsequent registration and its endorsement, and the title's
//! history in order.

use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::events::*;
use crate::support::flow::*;

const ENDORSEE_NIT: &str = "901234567";

fn eligible(app: &TestApp, key: &str) -> Value {
    let (status, res) = json(app.get("/v1/api/registry/facturas-elegibles", key));
    assert_eq!(status, 200, "{res}");
    res["data"].clone()
}

fn registry(app: &TestApp, key: &str, body: Value) -> reqwest::blocking::Response {
    app.post("/v1/api/registry/registrar-evento", key, &body)
}

fn endorsee(nit: &str, name: &str) -> Value {
    json!({"tipo_documento": "31", "numero_documento": nit, "dv": "1", "nombre": name,
           "calidad_tenedor": "ENDOSATARIO_EN_PROPIEDAD"})
}

#[test]
fn a_title_is_registered_endorsed_and_endorsed_again_by_its_new_holder() {
    let app = TestApp::spawn_with(fast_launch());
    let buyer_company = new_company(&app, BUYER_NIT, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let buyer_pin = buyer_company["software_pin"].as_str().unwrap().to_string();
    let factor_company = new_company(&app, ENDORSEE_NIT, "Factoring S.A.S.");
    let factor = key_of(&factor_company);
    let factor_pin = factor_company["software_pin"].as_str().unwrap().to_string();
    let seller = app.sk_test();
    let seller_pin = app.keys["software_pin"].as_str().unwrap().to_string();
    let (_, f) = issue_to_buyer(&app);

    let ack = accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": f}));
    let receipt = accepted_event(&app, &buyer, "eventos/recibo-bien", json!({"cufe": f}));
    // Not eligible yet: no acceptance.
    assert_eq!(eligible(&app, &seller)["total"], 0);
    assert_error(
        registry(&app, &seller, json!({"cufe": f, "codigo_evento": "035"})),
        409,
        "INVALID_STATE",
    );
    let acceptance = accepted_event(
        &app,
        &buyer,
        "eventos/aceptacion-expresa",
        json!({"cufe": f}),
    );

    let list = eligible(&app, &seller);
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["items"][0]["cufe"], f.as_str());
    assert_eq!(list["items"][0]["total"].as_f64(), Some(168365.0));
    assert_eq!(list["items"][0]["fecha_vencimiento"], "2030-12-31");
    assert_eq!(
        eligible(&app, &buyer)["total"],
        0,
        "the buyer holds nothing"
    );
    assert_error(
        registry(&app, &buyer, json!({"cufe": f, "codigo_evento": "035"})),
        403,
        "FORBIDDEN",
    );
    // Endorsing needs the registration first; bad codes and a missing endorsee are refused.
    assert_error(
        registry(
            &app,
            &seller,
            json!({"cufe": f, "codigo_evento": "036", "endosatario": endorsee(ENDORSEE_NIT, "Factoring S.A.S.")}),
        ),
        409,
        "INVALID_STATE",
    );
    assert_error(
        registry(&app, &seller, json!({"cufe": f, "codigo_evento": "039"})),
        422,
        "VALIDATION_ERROR",
    );
    assert_error(
        registry(&app, &seller, json!({"cufe": f, "codigo_evento": "036"})),
        422,
        "VALIDATION_ERROR",
    );

    let (status, reg) = json(registry(
        &app,
        &seller,
        json!({"cufe": f, "codigo_evento": "035", "observaciones": "Inscripción"}),
    ));
    assert_eq!(status, 200, "{reg}");
    assert_eq!(reg["success"], true);
    assert_eq!(reg["cude_evento"], reg["data"]["cude_evento"]);
    assert_eq!(reg["data"]["estado_tax"], "Aceptado", "{reg}");
    assert_eq!(
        (
            reg["data"]["codigo_evento"].as_str(),
            reg["data"]["codigo_evento_tax"].as_str()
        ),
        (Some("035"), Some("036"))
    );
    let reg_xml = check_event_xml(&app, &seller, &f, &reg["data"], &seller_pin);
    assert!(reg_xml.contains("<cbc:CustomizationID>361</cbc:CustomizationID>"));
    assert!(reg_xml.contains(concat!(
        "<CustomTagGeneral><ConstanciadePagos><Name>ValorFEV-TV</Name><Value>168365.00</Value>",
        "<Name>ValorPagado</Name><Value>0.00</Value><Name>NuevoValorTV</Name><Value>168365.00</Value>",
        "</ConstanciadePagos></CustomTagGeneral>"
    )));
    assert!(reg_xml.contains(
        "<cac:ValidityPeriod><cbc:EndDate>2030-12-31</cbc:EndDate></cac:ValidityPeriod>"
    ));
    assert_eq!(
        eligible(&app, &seller)["total"],
        0,
        "registered: no longer eligible"
    );
    assert_error(
        registry(
            &app,
            &seller,
            json!({"cufe": f, "codigo_evento": "inscripcion"}),
        ),
        409,
        "INVALID_STATE",
    );

    let (status, endorsed) = json(registry(
        &app,
        &seller,
        json!({"cufe": f, "codigo_evento": "036", "endosatario": endorsee(ENDORSEE_NIT, "Factoring S.A.S."),
               "condiciones_financieras": {"valor_nominal_factura": 168365, "porcentaje_anticipo": 80,
                   "valor_desembolsado": 134692, "tasa_descuento_mensual": 1.8, "fecha_vencimiento_pago": "2030-12-31"}}),
    ));
    assert_eq!(status, 200, "{endorsed}");
    assert_eq!(endorsed["data"]["codigo_evento_tax"], "037");
    let xml = check_event_xml(&app, &seller, &f, &endorsed["data"], &seller_pin);
    assert!(
        xml.contains(&format!("schemeName=\"31\">{ENDORSEE_NIT}</cbc:CompanyID>")),
        "the endorsee receives it"
    );
    assert!(xml.contains("<cbc:CustomizationID>371</cbc:CustomizationID>"));
    assert!(xml.contains(concat!(
        "<CustomTagGeneral><InformacionNegociacion>",
        "<Name>ValorTotalEndoso</Name><Value>168365.00</Value>",
        "<Name>PrecioPagarseFEV</Name><Value>134692.00</Value>",
        "<Name>TasaDescuento</Name><Value>20.00</Value>",
        "<Name>MedioPago</Name><Value>42</Value>",
        "</InformacionNegociacion></CustomTagGeneral>"
    )));
    assert!(
        xml.contains(&format!(
            "<cac:IssuerParty><cac:PartyTaxScheme><cbc:RegistrationName>Cliente Ejemplo S.A.S.</cbc:RegistrationName><cbc:CompanyID schemeAgencyID=\"195\" schemeAgencyName=\"CO, DIAN (Dirección de Impuestos y Aduanas Nacionales)\" schemeID=\"4\" schemeName=\"31\">{BUYER_NIT}</cbc:CompanyID>"
        )),
        "the invoice's buyer is named: {xml}"
    );
    // The seller is no longer the holder; the endorsee is.
    assert_error(
        registry(
            &app,
            &seller,
            json!({"cufe": f, "codigo_evento": "037", "endosatario": endorsee("860002964", "Banco")}),
        ),
        403,
        "FORBIDDEN",
    );
    // The new holder registers the title again before endorsing it.
    let garantia = json!({"cufe": f, "codigo_evento": "endoso_garantia", "endosatario": endorsee("860002964", "Banco de Bogotá")});
    let first = assert_error(
        registry(&app, &factor, garantia.clone()),
        409,
        "INVALID_STATE",
    );
    assert!(
        first["message"]
            .as_str()
            .unwrap()
            .contains("subsequent registration"),
        "{first}"
    );
    let (status, subsequent) = json(registry(
        &app,
        &factor,
        json!({"cufe": f, "codigo_evento": "035"}),
    ));
    assert_eq!(status, 200, "{subsequent}");
    assert_eq!(subsequent["data"]["estado_tax"], "Aceptado", "{subsequent}");
    let sub_xml = check_event_xml(&app, &factor, &f, &subsequent["data"], &factor_pin);
    assert!(sub_xml.contains("<cbc:CustomizationID>363</cbc:CustomizationID>"));
    let (status, again) = json(registry(&app, &factor, garantia));
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        (
            again["data"]["codigo_evento"].as_str(),
            again["data"]["codigo_evento_tax"].as_str()
        ),
        (Some("037"), Some("038"))
    );
    check_event_xml(&app, &factor, &f, &again["data"], &factor_pin);

    // The history, in order, with the current holder.
    let (status, hv) = json(app.get(&format!("/v1/api/registry/hoja-de-vida/{f}"), &factor));
    assert_eq!(status, 200, "{hv}");
    let events = hv["data"]["eventos"].as_array().unwrap();
    let order: Vec<&str> = events
        .iter()
        .map(|e| e["codigo_evento"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["030", "032", "033", "035", "036", "035", "037"]);
    let cudes: Vec<&str> = events
        .iter()
        .map(|e| e["cude_evento"].as_str().unwrap())
        .collect();
    for (i, expected) in [
        &ack,
        &receipt,
        &acceptance,
        &reg["data"],
        &endorsed["data"],
        &subsequent["data"],
        &again["data"],
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(
            cudes[i],
            expected["cude_evento"].as_str().unwrap(),
            "event {i}"
        );
    }
    let who: Vec<&str> = events
        .iter()
        .map(|e| e["quien"]["nit"].as_str().unwrap())
        .collect();
    assert_eq!(
        who,
        [
            BUYER_NIT,
            BUYER_NIT,
            BUYER_NIT,
            "900000001",
            "900000001",
            ENDORSEE_NIT,
            ENDORSEE_NIT
        ]
    );
    let dates: Vec<&str> = events
        .iter()
        .map(|e| e["fecha"].as_str().unwrap())
        .collect();
    assert!(dates.windows(2).all(|w| w[0] <= w[1]), "{dates:?}");
    assert!(dates.iter().all(|d| d.ends_with("-05:00")));
    assert_eq!(hv["data"]["tenedor_legitimo"]["nit"], ENDORSEE_NIT);
    check_event_xml(&app, &buyer, &f, &ack, &buyer_pin);
    // The buyer and the seller see the same history; an unrelated company does not.
    let (status, _) = json(app.get(&format!("/v1/api/registry/hoja-de-vida/{f}"), &seller));
    assert_eq!(status, 200);
    let stranger = key_of(&new_company(&app, "890900608", "Otra S.A."));
    assert_error(
        app.get(&format!("/v1/api/registry/hoja-de-vida/{f}"), &stranger),
        404,
        "NOT_FOUND",
    );
    assert_error(
        app.get("/v1/api/registry/hoja-de-vida/xyz", &factor),
        422,
        "VALIDATION_ERROR",
    );
}
