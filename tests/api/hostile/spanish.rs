//! The Spanish-named API (`/facturacion-es/*`): every route's example, with
//! its aliases, mutated field by field; accepted ones are drafts, and the
//! numbering must show exactly them.

use super::*;

/// The customer a Spanish body names, as stored: a NIT without dots or
/// check digit.
pub(super) fn spanish_customer(body: &Value) -> Option<String> {
    if body.get("customer").is_some() {
        return None;
    }
    let c = body.get("cliente").or_else(|| body.get("proveedor"));
    let c = c.filter(|c| c.is_object())?;
    let id = ["numero_identificacion", "nit", "cedula"]
        .iter()
        .find_map(|k| match &c[*k] {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })?;
    let nit = c["tipo_documento"]
        .as_str()
        .is_some_and(|t| t.eq_ignore_ascii_case("nit") || t == "31")
        || c["tipo_documento"] == 31
        || (c.get("tipo_documento").is_none() && c.get("nit").is_some());
    if nit {
        let digits: String = id.chars().filter(|ch| *ch != '.' && *ch != ' ').collect();
        return Some(digits.split('-').next().unwrap_or_default().to_string());
    }
    Some(id)
}

pub(super) fn facturacion_es(
    p: &mut Probe,
    w: &World,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    acc: &mut Accepted,
) {
    use emisor::api::facturacion_es::examples as es;
    let mut seen = BTreeSet::new();
    for (name, _, path, body) in es::all() {
        let mut base = body;
        if base.get("documento_referencia").is_some() {
            let original = if path.ends_with("nota-ajuste-ds") {
                w.support
            } else {
                w.invoice
            };
            base["documento_referencia"] = json!(original);
        }
        base["transmitir"] = json!(false);
        base["referencia"] = json!("hostile-base");
        let plan = |path: &[Step]| {
            if path.len() == 1 || seen.insert(format!("{name}:{}", shape(path))) {
                Plan::OneOfEach
            } else {
                Plan::Skip
            }
        };
        for m in mutations(&base, kinds, rng, plan) {
            let text = if m.what.starts_with("referencia") {
                m.text.clone()
            } else {
                let fresh = json!(fresh_reference()).to_string();
                m.text.replacen("\"hostile-base\"", &fresh, 1)
            };
            let what = format!("es {name}: {}", m.what);
            let a = p.post_json(path, &what, text.clone());
            p.judged(&what, &a, &m);
            if a.accepted() {
                acc.document(&text, &a);
                let sent: Value = serde_json::from_str(&text).unwrap_or_default();
                if path.ends_with("/pos") && !sent["cliente"].is_object() {
                    // The final consumer.
                    acc.customers.insert("222222222222".into());
                }
            }
        }
    }
    // Whole-body attacks on the generic route.
    let mut valid = || {
        let mut b = es::generica();
        b["transmitir"] = json!(false);
        b["referencia"] = json!(fresh_reference());
        b.to_string()
    };
    p.body_attacks(
        Method::POST,
        "/v1/api/facturacion-es/",
        false,
        &mut valid,
        &mut |sent, a| acc.document(sent, a),
    );
}
