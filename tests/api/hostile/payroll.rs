//! Payroll: `/nomina/enviar`, `/nomina/ajuste` and the reads.

use super::*;

/// A valid draft payroll; `document` keeps equal bodies distinct.
pub(super) fn payroll_draft(document: &str) -> Value {
    let mut body = crate::support::payroll::monthly(document);
    body["transmit"] = json!(false);
    body
}

pub(super) fn fresh_employee() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("77{:06}", N.fetch_add(1, Ordering::Relaxed))
}

/// The number an accepted payroll answer took.
pub(super) fn payroll_number(a: &Answer) -> u64 {
    a.body.as_ref().expect("accepted payroll answers JSON")["data"]["numero"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("numero")
}

pub(super) fn payroll_reads(p: &mut Probe, foreign_id: u64, foreign_cune: &str, own_id: u64) {
    const N: &str = "/v1/api/nomina";
    for id in bad_ids().into_iter().chain([foreign_id.to_string()]) {
        for path in [
            format!("{N}/{id}"),
            format!("{N}/{id}/xml"),
            format!("{N}/{id}/zip"),
            format!("{N}/{id}/pdf"),
        ] {
            let a = p.get(&path);
            p.refused(&path, &a, true);
        }
    }
    let tracks =
        bad_ids()
            .into_iter()
            .chain([foreign_cune.to_string(), "f".repeat(96), "x".repeat(5_000)]);
    for t in tracks {
        let path = format!("{N}/estado/{t}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
    for q in bad_queries().into_iter().chain(
        [
            "?tipo=",
            "?tipo=ajuste",
            "?tipo=OTRO",
            "?tipo=%00",
            "?estado=aceptada,",
            "?estado=ACEPTADA",
            "?estado=2",
            "?estado=%FF",
            "?fecha_desde=2025-02-30",
            "?fecha_desde=2025-03-02&fecha_hasta=2025-03-01",
            "?limit=0",
            "?limit=101",
            "?page=0",
            "?page=4294967296",
        ]
        .map(String::from),
    ) {
        p.get(&format!("{N}/{own_id}{q}"));
        p.get(&format!("{N}/listar{q}"));
    }
    let routes = [
        format!("{N}/enviar"),
        format!("{N}/ajuste"),
        format!("{N}/{own_id}"),
        format!("{N}/{own_id}/xml"),
        format!("{N}/estado/{}", "a".repeat(96)),
    ];
    for route in &routes {
        for m in [Method::PUT, Method::DELETE, Method::PATCH] {
            let what = format!("{m} {route}");
            let a = p.keyed(m, route, Some("application/json"), b"{}".to_vec());
            p.refused(&what, &a, true);
        }
    }
}

#[test]
fn hostile_client_on_payroll_gets_4xx_envelopes_and_changes_nothing() {
    let app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "1000000"),
    );
    let key = app.sk_test();
    let issue = |key: &str, body: &Value| data(app.post("/v1/api/nomina/enviar", key, body));
    let original = issue(&key, &payroll_draft(&fresh_employee()));
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other_key = second["data"]["sk_test"].as_str().unwrap().to_string();
    let foreign = issue(&other_key, &payroll_draft(&fresh_employee()));
    let foreign_cune = foreign["cune"].as_str().unwrap().to_string();

    let kinds = hostile_kinds();
    let mut rng = Rng(SEED);
    let mut p = Probe::new(&app);
    let first: u64 = original["numero"].as_str().unwrap().parse().unwrap();
    let mut numbers: Vec<u64> = Vec::new();

    p.section("nomina/enviar");
    let base = payroll_draft("7700000000");
    let mut seen = BTreeSet::new();
    let plan = |path: &[Step]| {
        if path.len() == 1 || seen.insert(shape(path)) {
            Plan::OneOfEach
        } else {
            Plan::Skip
        }
    };
    for m in mutations(&base, &kinds, &mut rng, plan) {
        let a = p.post_json("/v1/api/nomina/enviar", &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        if a.accepted() {
            numbers.push(payroll_number(&a));
        }
    }
    let mut valid = || payroll_draft(&fresh_employee()).to_string();
    p.body_attacks(
        Method::POST,
        "/v1/api/nomina/enviar",
        false,
        &mut valid,
        &mut |_, a| numbers.push(payroll_number(a)),
    );

    p.section("nomina/ajuste");
    let adjustment = json!({
        "cune_referencia": original["cune"],
        "tipo_nota": 1,
        "transmit": false,
        "empleado": base["empleado"],
        "devengados": [{"seccion": "BASICO", "dias_trabajados": 30, "sueldo_trabajado": 1500000}],
        "deducciones": [{"seccion": "SALUD", "porcentaje": 4, "valor_total": 60000}]
    });
    for m in mutations(&adjustment, &kinds, &mut rng, |_| Plan::OneOfEach) {
        let a = p.post_json("/v1/api/nomina/ajuste", &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        if a.accepted() {
            numbers.push(payroll_number(&a));
        }
    }
    let mut foreign_adjustment = adjustment.clone();
    foreign_adjustment["cune_referencia"] = json!(foreign_cune);
    let a = p.post_json(
        "/v1/api/nomina/ajuste",
        "another company's CUNE",
        foreign_adjustment.to_string(),
    );
    p.refused("ajuste of another company's payroll", &a, true);
    let mut n = 0u32;
    let mut valid = || {
        n += 1;
        let mut b = adjustment.clone();
        b["notas"] = json!([format!("ajuste {n}")]);
        b.to_string()
    };
    p.body_attacks(
        Method::POST,
        "/v1/api/nomina/ajuste",
        false,
        &mut valid,
        &mut |_, a| numbers.push(payroll_number(a)),
    );

    p.section("nomina reads");
    let own_id = original["id"].as_u64().unwrap();
    payroll_reads(
        &mut p,
        foreign["id"].as_u64().unwrap(),
        &foreign_cune,
        own_id,
    );

    // The numbering advanced by exactly the accepted payrolls, no gap.
    let last: u64 = issue(&key, &payroll_draft(&fresh_employee()))["numero"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut problems = Vec::new();
    numbers.sort_unstable();
    let expected: Vec<u64> = (first + 1..last).collect();
    if numbers != expected {
        problems.push(format!(
            "payroll numbering went from {first} to {last}, accepted payrolls have {numbers:?}"
        ));
    }
    let log = app.log();
    for bad in ["panicked", "internal error"] {
        if let Some(line) = log.lines().find(|l| l.contains(bad)) {
            problems.push(format!("server log: {line}"));
        }
    }
    eprintln!(
        "hostile payroll: {} requests ({}), by status {:?}; accepted {} payrolls",
        p.sent,
        p.tally(),
        p.by_status,
        numbers.len()
    );
    problems.extend(p.failures.iter().cloned());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
