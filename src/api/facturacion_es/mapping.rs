//! A read Spanish-named body → the domain request issuing takes: the shared
//! mapping builds the very document the unified API would, then what only
//! this API carries is added, and every refusal names the caller's fields.

use std::sync::Arc;

use emisor_store::CustomerInput;
use rust_decimal::Decimal;

use super::model::{Extras, Parsed, FINAL_CONSUMER_EMAIL};
use super::names::{spanish_message, Names};
use crate::api::invoice_request::mapping::to_document_by;
use crate::engine::model::{DocumentKind, Party};
use crate::engine::totals::Totals;
use crate::http::error::FieldError;
use crate::issuing::declared::{Computed, Declared, Part, Wording, PESO};
use crate::issuing::reference::{ByCode, Refused};
use crate::issuing::request::{Api, CallerFields, DocumentRequest};

/// The answer's totals (spec 2.9, decisions.md §5 "Spanish-named totals").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerTotals {
    pub subtotal: Decimal,
    pub taxes: Decimal,
    pub withholdings: Decimal,
    pub total: Decimal,
    /// The payable amount (`cbc:PayableAmount`): `total` less what was paid
    /// in advance (a health invoice's copay).
    pub payable: Decimal,
}

impl AnswerTotals {
    /// An invoice's (and note's, POS receipt's) `total` is the payable
    /// amount before any prepayment (withholdings reported, not subtracted;
    /// a health copay shown apart, in `payable`); a support
    /// document's is net of its withholdings (spec 2.10).
    pub fn of(kind: DocumentKind, t: &Totals) -> AnswerTotals {
        let total = match kind {
            DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => {
                t.net_of_withholdings()
            }
            _ => t.before_prepaid(),
        };
        AnswerTotals {
            subtotal: t.line_extension,
            taxes: t.tax_total,
            withholdings: t.withholding_total,
            total,
            payable: t.payable,
        }
    }
}

/// How this caller named the engine's fields.
#[derive(Debug)]
struct SpanishFields {
    /// Engine → unified paths (the shared mapping's field map).
    unified: crate::api::invoice_request::mapping::FieldMap,
    names: Names,
}

impl CallerFields for SpanishFields {
    fn field(&self, engine_field: &str) -> String {
        self.names.spanish(&self.unified.api_field(engine_field))
    }
}

/// `totales`, global `impuestos` and the `base`/`valor` of line taxes, as
/// amounts to compare within a peso (decisions.md §5) with the answer's
/// totals ([`AnswerTotals`]) and the computed taxes: a line's tax, or the
/// document's group of that code (and rate, when given).
fn declared_list(kind: DocumentKind, extras: &Extras) -> Vec<Declared> {
    let mut out = Vec::new();
    let mut push = |field: String, amount: Option<Decimal>, computed: Computed| {
        if let Some(amount) = amount {
            out.push(Declared {
                field,
                amount,
                computed,
                tolerance: PESO,
                wording: Wording::Spanish,
            });
        }
    };
    let t = &extras.totals;
    let total = match kind {
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => {
            Computed::NetOfWithholdings
        }
        _ => Computed::BeforePrepaid,
    };
    push(
        "totales.subtotal".into(),
        t.subtotal,
        Computed::LineExtension,
    );
    push(
        "totales.total_impuestos".into(),
        t.total_impuestos,
        Computed::TaxTotal,
    );
    push(
        "totales.total_retenciones".into(),
        t.total_retenciones,
        Computed::WithholdingTotal,
    );
    push("totales.total".into(), t.total, total);
    for d in &extras.taxes {
        let computed = |part| match d.line {
            Some((line, withholding, at)) => Computed::LineTax {
                line,
                withholding,
                at,
                part,
            },
            None => {
                let code = d.code.clone();
                let withholding = matches!(d.code.as_str(), "05" | "06" | "07");
                match d.percent {
                    None => Computed::Group {
                        code,
                        withholding,
                        part,
                    },
                    Some(percent) => Computed::AtPercent {
                        code,
                        withholding,
                        percent,
                        part,
                    },
                }
            }
        };
        push(format!("{}.base", d.path), d.base, computed(Part::Taxable));
        push(
            format!("{}.valor", d.path),
            d.amount,
            computed(Part::Amount),
        );
    }
    out
}

/// The domain request of a read body, or its refusal (a note's original
/// still to be checked by issuing), named and worded for this caller.
pub fn to_request(parsed: Parsed) -> Result<DocumentRequest, Refused> {
    let Parsed {
        kind,
        request,
        extras,
        names,
        original_code,
    } = parsed;
    let by_code = original_code.map(|code| {
        Box::new(ByCode {
            code,
            field: "cufe_factura_referencia".into(),
        })
    });
    let mapped = to_document_by(&request, by_code).map_err(|refused| {
        let refused = refused.renamed(|f| names.spanish(f));
        Refused {
            details: refused
                .details
                .into_iter()
                .map(|d| FieldError::new(d.field, spanish_message(&d.message)))
                .collect(),
            ..refused
        }
    })?;
    let unified = mapped.fields.clone();
    // The unified API's own domain request, with this API's name, fields
    // and additions: whatever the unified translation fills, this one does.
    let mut out = mapped.into_request();
    out.api = Api::Spanish;
    if let Some(r) = out.reference.as_mut() {
        r.field = names.spanish(&r.field);
    }
    if kind == DocumentKind::Pos && request.customer.email == FINAL_CONSUMER_EMAIL {
        out.document.counterparty = Party::final_consumer();
        out.customer = CustomerInput {
            email: String::new(),
            ..out.customer
        };
    }
    if let Some(h) = out.document.health.as_mut() {
        h.users = extras.users.clone();
        h.copay = extras.copay;
    }
    if let Some(note) = &extras.transport_note {
        out.document.notes.push(note.clone());
    }
    // The family keys of the document index (support documents by vendor,
    // POS receipts by register and cashier).
    match kind {
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => {
            let vendor = out.document.counterparty.id_number.clone();
            out.list_keys.insert("proveedor".into(), vendor);
        }
        DocumentKind::Pos => {
            if let Some(p) = &out.document.point_of_sale {
                out.list_keys
                    .insert("id_caja".into(), p.register_id.clone());
                out.list_keys
                    .insert("id_cajero".into(), p.cashier_id.clone());
            }
        }
        _ => {}
    }
    out.declared = declared_list(kind, &extras);
    out.fields = Arc::new(SpanishFields { unified, names });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::facturacion_es::examples;
    use crate::api::facturacion_es::model::{read, Route};

    fn request(route: Route, body: serde_json::Value) -> DocumentRequest {
        to_request(read(&body, route, None).unwrap()).unwrap()
    }

    #[test]
    fn support_documents_and_pos_receipts_carry_their_family_keys() {
        let ds = request(Route::DocumentoSoporte, examples::documento_soporte());
        assert_eq!(ds.api, Api::Spanish);
        assert_eq!(ds.list_keys["proveedor"], "1020304050");
        let pos = request(Route::Pos, examples::pos());
        assert_eq!(pos.list_keys["id_caja"], "3");
        assert_eq!(pos.list_keys["id_cajero"], "17");
        assert_eq!(pos.document.counterparty.id_number, "222222222222");
        assert!(pos.customer.email.is_empty(), "no stand-in address is kept");
        let fe = request(Route::Factura, examples::factura());
        assert!(fe.list_keys.is_empty());
    }

    #[test]
    fn engine_fields_are_named_as_the_caller_spelled_them() {
        let mut body = examples::documento_soporte();
        body["items"][0]["valor_unitario"] = serde_json::json!(10);
        let r = request(Route::DocumentoSoporte, body);
        assert_eq!(
            r.fields.field("lines[0].price_amount"),
            "items[0].valor_unitario"
        );
        assert_eq!(r.fields.field("lines[0].quantity"), "items[0].cantidad");
        assert_eq!(
            r.fields.field("lines[0].description"),
            "items[0].nombre_producto"
        );
        assert_eq!(
            r.fields.field("supplier.email"),
            "proveedor.correo_electronico"
        );
        assert_eq!(
            r.fields.field("lines[0].withholdings[1].percent"),
            "items[0].reteica"
        );
    }
}
