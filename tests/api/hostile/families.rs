//! Support documents and POS (`/documentos-soporte`, `/pos`).

use super::*;

/// The valid bodies of the two families (drafts: nothing is transmitted).
pub(super) fn support_body() -> Value {
    json!({
        "proveedor": {"numero_identificacion": "1020304050", "nombre": "Pedro Pérez",
                      "tipo_documento": "13", "correo": "pedro@example.test", "municipio": "05001"},
        "lineas": [{"descripcion": "Servicio", "cantidad": 2, "precio_unitario": 50000,
                    "unidad_medida": "E48", "retenciones": [{"tipo": "07", "porcentaje": 4}]}],
        "forma_pago": "1", "metodo_pago": "10", "centro_costos": "ADM",
        "transmitir": false, "referencia_externa": "hostile-base"
    })
}

pub(super) fn pos_body() -> Value {
    json!({
        "id_caja": "2", "id_cajero": "5",
        "lineas": [{"descripcion": "Café", "cantidad": 2, "precio_unitario": 4500,
                    "porcentaje_iva": 8, "tipo_impuesto": "04", "descuento_valor": 500}],
        "propina_voluntaria": 1000,
        "pagos": [{"forma": "1", "metodo": "10", "monto": 10180}],
        "transmitir": false, "referencia_externa": "hostile-base"
    })
}

impl Accepted {
    /// An accepted support document or POS receipt (or note): its number,
    /// and the counterparty it upserted.
    pub(super) fn family_document(&mut self, sent: &str, a: &Answer) {
        let d = &a.body.as_ref().expect("accepted document answers JSON")["data"];
        let prefix = d["prefijo"].as_str().expect("prefijo").to_string();
        let number = d["numero"].as_u64().expect("numero");
        self.numbers.entry(prefix).or_default().push(number);
        self.documents += 1;
        if let Ok(body) = serde_json::from_str::<Value>(sent) {
            for id in [
                &body["proveedor"]["numero_identificacion"],
                &body["cliente"]["numero_documento"],
            ] {
                let id = match id {
                    Value::String(s) => Some(s.trim().to_string()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                };
                if let Some(id) = id {
                    self.customers.insert(id);
                }
            }
            if body.get("cliente").is_none_or(Value::is_null)
                && body.get("lineas").is_some()
                && body.get("proveedor").is_none()
            {
                self.customers.insert("222222222222".into());
            }
        }
    }
}

pub(super) fn families(
    p: &mut Probe,
    w: &World,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    acc: &mut Accepted,
) {
    const DS: &str = "/v1/api/documentos-soporte";
    const POS: &str = "/v1/api/pos";
    let mut seen = BTreeSet::new();
    let fresh = |text: &str, what: &str| {
        if what.starts_with("referencia_externa") {
            text.to_string()
        } else {
            let r = json!(fresh_reference()).to_string();
            text.replacen("\"hostile-base\"", &r, 1)
        }
    };
    for (path, base) in [
        (format!("{DS}/emitir"), support_body()),
        (format!("{POS}/emitir"), pos_body()),
    ] {
        let plan = |path: &[Step]| {
            if path.len() == 1 || seen.insert(shape(path)) {
                Plan::OneOfEach
            } else {
                Plan::Skip
            }
        };
        for m in mutations(&base, kinds, rng, plan) {
            let text = fresh(&m.text, &m.what);
            let a = p.post_json(&path, &m.what, text.clone());
            p.judged(&m.what, &a, &m);
            if a.accepted() {
                acc.family_document(&text, &a);
            }
        }
        let mut valid = || {
            let mut b = base.clone();
            b["referencia_externa"] = json!(fresh_reference());
            b.to_string()
        };
        p.body_attacks(Method::POST, &path, false, &mut valid, &mut |sent, a| {
            acc.family_document(sent, a)
        });
    }
    // Originals issued through these APIs, then their notes mutated.
    let mut original = |path: String, body: Value| {
        let mut b = body;
        b["referencia_externa"] = json!(fresh_reference());
        let text = b.to_string();
        let a = p.post_json(&path, "original", text.clone());
        assert!(a.accepted(), "original {path}: {:?}", a.body);
        acc.family_document(&text, &a);
        a.body.unwrap()["data"]["id"].as_u64().unwrap()
    };
    let ds = original(format!("{DS}/emitir"), support_body());
    let pos = original(format!("{POS}/emitir"), pos_body());
    let notes = [
        (
            format!("{DS}/{ds}/nota-ajuste"),
            json!({"documento_referencia": ds, "concepto_nota": "3", "motivo": "Ajuste",
                   "lineas": [{"descripcion": "Ajuste", "cantidad": 1, "precio_unitario": 1000}],
                   "transmitir": false, "referencia_externa": "hostile-base"}),
        ),
        (
            format!("{POS}/{pos}/nota-ajuste"),
            json!({"concepto": "1", "motivo": "Devolución",
                   "lineas": [{"descripcion": "Café", "cantidad": 1, "precio_unitario": 4500, "porcentaje_iva": 8}],
                   "transmitir": false, "referencia_externa": "hostile-base"}),
        ),
    ];
    for (path, base) in notes {
        for m in mutations(&base, kinds, rng, |_| Plan::OneOfEach) {
            let text = fresh(&m.text, &m.what);
            let a = p.post_json(&path, &m.what, text.clone());
            p.judged(&m.what, &a, &m);
            if a.accepted() {
                acc.family_document(&text, &a);
            }
        }
    }
    // Path ids and query strings of every read.
    let ids = bad_ids().into_iter().chain([
        w.foreign.to_string(),
        w.invoice.to_string(),
        "4000000".into(),
    ]);
    for id in ids {
        for path in [
            format!("{DS}/{id}"),
            format!("{DS}/{id}/pdf"),
            format!("{DS}/{id}/xml"),
            format!("{POS}/{id}"),
            format!("{POS}/{id}/tirilla"),
        ] {
            let a = p.get(&path);
            p.refused(&path, &a, true);
        }
        for path in [
            format!("{DS}/{id}/consultar-tax"),
            format!("{DS}/{id}/nota-ajuste"),
            format!("{POS}/{id}/nota-ajuste"),
        ] {
            let a = p.keyed(
                Method::POST,
                &path,
                Some("application/json"),
                br#"{"concepto":"1","concepto_nota":"1","motivo":"x"}"#.to_vec(),
            );
            p.refused(&path, &a, true);
        }
    }
    let list_queries = [
        "?page=0",
        "?limit=0",
        "?limit=101",
        "?limit=-1",
        "?page=4294967296",
        "?fecha_desde=2024-13-01",
        "?fecha_desde=2025-02-01&fecha_hasta=2025-01-01",
        "?estado=7",
        "?estado=1,x",
        "?estado=%00",
        "?proveedor=%00",
        "?id_caja=%FF",
        "?id_cajero=1&id_cajero=2",
    ];
    for q in bad_queries()
        .into_iter()
        .chain(list_queries.map(String::from))
    {
        p.get(&format!("{DS}{q}"));
        p.get(&format!("{POS}{q}"));
        p.get(&format!("{POS}/arqueo{q}"));
        p.get(&format!("{POS}/{pos}/tirilla{q}"));
    }
    for w in ["90", "0", "-80", "80.0", "8O", "%00", "99999999999"] {
        let path = format!("{POS}/{pos}/tirilla?width={w}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
    for q in ["?fecha=hoy", "?fecha=2025-02-30", "?fecha=%00"] {
        let path = format!("{POS}/arqueo{q}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
}
