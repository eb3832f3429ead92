//! The console's family pages over HTTP, signed in through the sign-in
//! form like a browser: payroll, POS with its cash count, support
//! documents, received invoices with their events and deadline, the
//! registry's eligible invoices and a title's holder history, each
//! listing what the API issued; the overview's "Eventos con plazo"; and a
//! company session that sees neither another company's rows nor the other
//! environment's.

use reqwest::blocking::Response;
use serde_json::{json, Value};

use crate::console::harness::{http_sign_in, page};
use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::events::*;
use crate::support::flow::fast_launch;
use crate::support::payroll::{employee_number, monthly, salary_replacement};

const ENDORSEE_NIT: &str = "901234567";

/// A session signed in through the form, its cookie kept.
struct Console<'a> {
    app: &'a TestApp,
    cookie: String,
}

impl<'a> Console<'a> {
    /// Signs in with a company key or the admin token.
    fn sign_in(app: &'a TestApp, credential: &str) -> Console<'a> {
        let cookie = http_sign_in(app, credential).expect("signed in");
        Console { app, cookie }
    }

    fn page(&self, path: &str) -> (u16, String) {
        page(self.app, &self.cookie, path)
    }

    /// A page that must be there.
    fn shows(&self, path: &str) -> String {
        let (status, html) = self.page(path);
        assert_eq!(status, 200, "{path}: {html}");
        html
    }
}

pub fn ok_data(res: Response) -> Value {
    let (status, body) = json(res);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true, "{body}");
    body["data"].clone()
}

pub fn pos_sale(caja: &str, cajero: &str) -> Value {
    unique(json!({
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
    }))
}

pub fn support_body() -> Value {
    unique(json!({
        "proveedor": {"numero_identificacion": "1020304050", "nombre": "Pedro Pérez",
                      "tipo_documento": "13", "correo": "pedro@example.test",
                      "direccion": "Carrera 7 # 45-10", "municipio": "05001"},
        "lineas": [
            {"descripcion": "Servicio de aseo", "cantidad": 2, "precio_unitario": 50000,
             "unidad_medida": "E48"}
        ],
        "forma_pago": "1",
        "metodo_pago": "47"
    }))
}

fn link(id: &Value) -> String {
    format!("href=\"/console/documentos/{}\"", id.as_u64().expect("id"))
}

/// `Quedan N días` of a page: the days left of the first window shown.
fn days_left(html: &str) -> i64 {
    let at = html.find("Quedan ").expect("a window with days left") + 7;
    html[at..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("days")
}

#[test]
fn each_family_page_lists_what_the_api_issued() {
    let app = TestApp::spawn_with(fast_launch().shared_clock());
    let seller_key = app.sk_test();

    // Payroll and its replacing adjustment.
    let document = employee_number();
    let payroll = ok_data(app.post("/v1/api/nomina/enviar", &seller_key, &monthly(&document)));
    assert_eq!(payroll["estado"], "aceptada", "{payroll}");
    let cune = payroll["cune"].as_str().unwrap();
    let adjustment = ok_data(app.post(
        "/v1/api/nomina/ajuste",
        &seller_key,
        &salary_replacement(cune, &document),
    ));
    assert_eq!(adjustment["estado"], "aceptada", "{adjustment}");

    // Two registers' sales and a support document.
    let sale = ok_data(app.post("/v1/api/pos/emitir", &seller_key, &pos_sale("3", "17")));
    let other = ok_data(app.post("/v1/api/pos/emitir", &seller_key, &pos_sale("4", "18")));
    let support = ok_data(app.post(
        "/v1/api/documentos-soporte/emitir",
        &seller_key,
        &support_body(),
    ));

    // Received invoices: one to the registry, one left in its window.
    let buyer_company = new_company(&app, BUYER_NIT, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let factor = key_of(&new_company(&app, ENDORSEE_NIT, "Factoring S.A.S."));
    let (_, titled) = issue_to_buyer(&app);
    for path in [
        "eventos/acuse-recibo",
        "eventos/recibo-bien",
        "eventos/aceptacion-expresa",
    ] {
        accepted_event(&app, &buyer, path, json!({"cufe": titled}));
    }
    let (open_id, open) = issue_to_buyer(&app);
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": open}));
    accepted_event(&app, &buyer, "eventos/recibo-bien", json!({"cufe": open}));

    let seller = Console::sign_in(&app, &seller_key);

    let html = seller.shows("/console/nomina");
    for needle in [
        link(&payroll["id"]),
        link(&adjustment["id"]),
        payroll["consecutivo"].as_str().unwrap().to_string(),
        format!("Ana María Gómez Ñandú ({document})"),
        "01/03/2025 – 31/03/2025".into(),
        "$ 1.583.760,63".into(),
        "$ 1.580.000,00".into(),
        "Ajuste".into(),
        "(reemplaza)".into(),
        format!("de {}", payroll["consecutivo"].as_str().unwrap()),
        cune[..12].to_string(),
    ] {
        assert!(
            html.contains(&needle),
            "payroll page lacks {needle}: {html}"
        );
    }

    let html = seller.shows("/console/pos");
    for needle in [
        link(&sale["id"]),
        link(&other["id"]),
        "Arqueo de caja".into(),
        // Each register's count, then the day's.
        "$ 23.120,00".into(),
        "Efectivo: $ 10.000,00".into(),
        "Tarjeta crédito: $ 13.120,00".into(),
        "Efectivo: $ 20.000,00".into(),
        "$ 46.240,00".into(),
        ">17<".into(),
        ">18<".into(),
    ] {
        assert!(html.contains(&needle), "POS page lacks {needle}: {html}");
    }
    // The API's own count agrees with the page's day.
    let (_, count) = json(app.get("/v1/api/pos/arqueo", &seller_key));
    assert_eq!(count["data"]["total_ventas"], "46240.00", "{count}");
    let html = seller.shows("/console/pos?fecha=2020-01-01");
    assert!(html.contains("Sin ventas POS ese día."), "{html}");
    let (status, _) = seller.page("/console/pos?fecha=ayer");
    assert_eq!(status, 400);

    let html = seller.shows("/console/soporte");
    for needle in [
        link(&support["id"]),
        "Pedro Pérez (1020304050)".into(),
        "Documento soporte".into(),
    ] {
        assert!(
            html.contains(&needle),
            "support page lacks {needle}: {html}"
        );
    }

    // The buyer's received invoices: the events and the window left.
    let buying = Console::sign_in(&app, &buyer);
    let html = buying.shows("/console/recibidas");
    assert!(html.contains("Esperando reclamo o aceptación"), "{html}");
    assert!(html.contains("Cerrada: Aceptación expresa (033)"), "{html}");
    assert!(html.contains("Posible hoy: 031, 033"), "{html}");
    let receipt = chrono::Utc::now()
        .with_timezone(&crate::support::clock::colombia())
        .date_naive();
    let last = emisor::engine::events::calendar::claim_window_last_day(receipt);
    assert!(
        html.contains(&format!(
            "Reclamo o aceptación expresa hasta el {}",
            last.format("%d/%m/%Y")
        )),
        "{html}"
    );
    // The seller's invoice is the seller's document, not the buyer's.
    assert!(!html.contains(&format!("/console/documentos/{open_id}")));
    let left = days_left(&html);
    assert_eq!(left, (last - receipt).num_days());
    // Nothing due within 3 days yet; a day before the window closes, the
    // overview lists it.
    if left > 3 {
        let overview = buying.shows("/console");
        assert!(overview.contains("Eventos con plazo"), "{overview}");
        assert!(overview.contains("Ninguna factura recibida con un plazo"));
    }
    set_clock(&app, (left - 1) * 86_400);
    let overview = buying.shows("/console");
    let due = &overview[overview.find("Eventos con plazo").expect("section")..];
    assert!(due.contains("Quedan 1 día"), "{due}");
    assert!(due.contains("Comprador S.A.S."), "{due}");
    set_clock(&app, 0);

    // The registry: eligible for the seller, then registered and endorsed.
    let html = seller.shows("/console/registro");
    assert!(html.contains(&format!("cufe={titled}")), "{html}");
    assert!(html.contains("(800197268)"), "{html}");
    let (status, reg) = json(app.post(
        "/v1/api/registry/registrar-evento",
        &seller_key,
        &json!({"cufe": titled, "codigo_evento": "035"}),
    ));
    assert_eq!(status, 200, "{reg}");
    let (status, endorsed) = json(app.post(
        "/v1/api/registry/registrar-evento",
        &seller_key,
        &json!({"cufe": titled, "codigo_evento": "036",
                "endosatario": {"tipo_documento": "31", "numero_documento": ENDORSEE_NIT, "dv": "1",
                                "nombre": "Factoring S.A.S.", "calidad_tenedor": "ENDOSATARIO_EN_PROPIEDAD"}}),
    ));
    assert_eq!(status, 200, "{endorsed}");
    let html = seller.shows("/console/registro");
    assert!(
        !html.contains(&format!("cufe={titled}")),
        "registered: no longer eligible"
    );
    for console in [&seller, &Console::sign_in(&app, &factor)] {
        let html = console.shows(&format!("/console/registro?cufe={titled}"));
        let history = &html[html.find("Hoja de vida de la factura").expect("history")..];
        let holder = &history[history.find("Tenedor legítimo").unwrap()..];
        assert!(
            holder
                .starts_with("Tenedor legítimo</dt><dd class=\"holder\"><strong>Factoring S.A.S."),
            "{history}"
        );
        for code in ["030 ·", "032 ·", "033 ·", "035 ·", "036 ·", "Endoso"] {
            assert!(history.contains(code), "history lacks {code}: {history}");
        }
    }

    // The admin picks a company; the first one by default.
    let admin = Console::sign_in(&app, &app.admin_token());
    let html = admin.shows("/console/nomina");
    assert!(html.contains(&link(&payroll["id"])), "{html}");
    let html = admin.shows(&format!(
        "/console/recibidas?empresa={}",
        buyer_company["id_empresa"].as_u64().unwrap()
    ));
    assert!(html.contains("Esperando reclamo o aceptación"), "{html}");
    let (status, _) = admin.page("/console/nomina?empresa=999");
    assert_eq!(status, 404);
    let (status, _) = admin.page("/console/nomina?pagina=0");
    assert_eq!(status, 400);
}

#[test]
fn a_company_session_sees_only_its_company_and_environment() {
    let app = TestApp::spawn_with(fast_launch());
    let (test, live) = (app.sk_test(), app.sk_live());
    let payroll = ok_data(app.post("/v1/api/nomina/enviar", &test, &monthly(&employee_number())));
    let sale = ok_data(app.post("/v1/api/pos/emitir", &test, &pos_sale("3", "17")));
    let support = ok_data(app.post("/v1/api/documentos-soporte/emitir", &test, &support_body()));
    let live_sale = ok_data(app.post("/v1/api/pos/emitir", &live, &pos_sale("9", "99")));
    let buyer_company = new_company(&app, BUYER_NIT, "Comprador S.A.S.");
    let buyer = key_of(&buyer_company);
    let (_, cufe) = issue_to_buyer(&app);
    accepted_event(&app, &buyer, "eventos/acuse-recibo", json!({"cufe": cufe}));

    // Another company: none of company 1's rows, and its ids are 404s.
    let other = Console::sign_in(&app, &buyer);
    for (path, row) in [
        ("/console/nomina", &payroll["id"]),
        ("/console/pos", &sale["id"]),
        ("/console/soporte", &support["id"]),
    ] {
        let html = other.shows(path);
        assert!(!html.contains(&link(row)), "{path}: {html}");
        let (status, _) = other.page(&format!("{path}?empresa=1"));
        assert_eq!(status, 404, "{path}?empresa=1");
    }
    let own = buyer_company["id_empresa"].as_u64().unwrap();
    other.shows(&format!("/console/nomina?empresa={own}"));
    let html = other.shows("/console/recibidas");
    assert!(
        html.contains(&cufe[..12]),
        "the buyer's own received invoice"
    );
    let (status, _) = other.page("/console/recibidas?empresa=1");
    assert_eq!(status, 404);
    let (status, _) = other.page("/console/registro?empresa=1");
    assert_eq!(status, 404);
    // A title it has no part in: unknown.
    let (_, foreign) = json(app.post(
        "/v1/api/facturacion",
        &test,
        &unique(emisor::api::invoice_request::examples::invoice()),
    ));
    let foreign_cufe = foreign["data"]["cufe"].as_str().unwrap().to_string();
    let stranger = key_of(&new_company(&app, "900373115", "Ajena S.A.S."));
    let (status, _) =
        Console::sign_in(&app, &stranger).page(&format!("/console/registro?cufe={foreign_cufe}"));
    assert_eq!(status, 404);

    // The same company in production: none of the testing rows.
    let production = Console::sign_in(&app, &live);
    let html = production.shows("/console/pos");
    assert!(html.contains(&link(&live_sale["id"])), "{html}");
    assert!(!html.contains(&link(&sale["id"])), "{html}");
    let html = production.shows("/console/nomina");
    assert!(!html.contains(&link(&payroll["id"])), "{html}");
    let (status, _) = production.page(&format!("/console/registro?cufe={cufe}"));
    assert_eq!(status, 404, "a testing invoice is unknown in production");
    // And testing does not see production's.
    let testing = Console::sign_in(&app, &test);
    let html = testing.shows("/console/pos");
    assert!(!html.contains(&link(&live_sale["id"])), "{html}");
    assert!(!html.contains(">99<"), "{html}");
}
