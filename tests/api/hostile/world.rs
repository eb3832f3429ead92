//! The setup: originals for the notes, a second company.

use super::*;

pub(super) struct World {
    /// Originals by the type they are for: invoice (1), DS (4), POS (9).
    pub(super) invoice: u64,
    pub(super) support: u64,
    pub(super) pos: u64,
    /// A document of the second company, invisible to the first's key.
    pub(super) foreign: u64,
}

pub(super) fn issue_draft(app: &TestApp, key: &str, body: Value, reference: &str) -> u64 {
    let mut body = body;
    body["transmit"] = json!(false);
    body["referencia_externa"] = json!(reference);
    let d = data(app.post("/v1/api/facturacion", key, &body));
    d["documento"]["id"].as_u64().unwrap()
}

pub(super) fn setup(app: &TestApp) -> World {
    let key = app.sk_test();
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other_key = second["data"]["sk_test"].as_str().unwrap().to_string();
    World {
        invoice: issue_draft(app, &key, examples::invoice(), "orig-fe"),
        support: issue_draft(app, &key, examples::support_document(), "orig-ds"),
        pos: issue_draft(app, &key, examples::pos(), "orig-pos"),
        foreign: issue_draft(app, &other_key, examples::invoice(), "orig-other"),
    }
}

/// The valid bodies to mutate: every type, drafts, notes pointing at their
/// originals.
pub(super) fn facturacion_bodies(w: &World) -> Vec<(&'static str, Value)> {
    examples::all()
        .into_iter()
        .map(|(name, body)| {
            let original = match body["id_tipo_documento"].as_u64() {
                Some(5) => w.support,
                Some(10) => w.pos,
                _ => w.invoice,
            };
            let mut body = examples::with_reference(body, original);
            body["transmit"] = json!(false);
            body["referencia_externa"] = json!("hostile-base");
            (name, body)
        })
        .collect()
}
