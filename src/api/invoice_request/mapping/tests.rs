//! Request parsing and mapping of `POST /facturacion`.

use rust_decimal_macros::dec;
use serde_json::{json, Value};

use super::*;
use crate::api::invoice_request::examples;
use crate::engine::codes::CodeScheme;
use crate::engine::model::BillingReference;
use crate::engine::model::LineTax;
use crate::engine::ubl::tests::{context, date};
use crate::engine::validate::validate_and_total;
use crate::http::json;
use crate::issuing::reference::check;
use crate::issuing::request::{ReferencedDocument, MAX_DETAILS};

fn parse(v: &Value) -> Result<FacturacionRequest, ApiError> {
    json::parse(&serde_json::to_vec(v).unwrap())
}

fn parse_text(body: &str) -> Result<FacturacionRequest, ApiError> {
    json::parse(body.as_bytes())
}

/// The original document a note of `kind` references.
fn reference_for(kind: DocumentKind) -> ReferencedDocument {
    let (original, scheme, number) = match kind {
        DocumentKind::SupportAdjustment => (DocumentKind::SupportDocument, CodeScheme::Cuds, "DS1"),
        DocumentKind::PosAdjustment => (DocumentKind::Pos, CodeScheme::Cude, "POS1"),
        _ => (DocumentKind::Invoice, CodeScheme::Cufe, "SETP990000000"),
    };
    ReferencedDocument {
        id: examples::REFERENCE_ID,
        number: number.into(),
        code: "ab".repeat(48),
        scheme,
        issue_date: date("2025-03-01"),
        kind: original,
    }
}

/// The request mapped, its original (if it names one) being `found`, as
/// issuing completes it (`issuing::reference`): the billing reference
/// filled, or the original's problem among the others.
fn with_original(
    req: &FacturacionRequest,
    found: Option<&ReferencedDocument>,
) -> Result<MappedDocument, ApiError> {
    match to_document(req) {
        Ok(mut m) => {
            if let Some(r) = m.reference.take() {
                match check(m.kind, &r, found)? {
                    Ok(billing) => m.document.billing_reference = Some(billing),
                    Err(problem) => return Err(ApiError::validation_list(vec![problem])),
                }
            }
            Ok(m)
        }
        Err(refused) => {
            let problem = match &refused.pending {
                Some(p) => check(p.note, &p.reference, found)?.err(),
                None => None,
            };
            Err(ApiError::validation_list(refused.with(problem)))
        }
    }
}

fn map(v: &Value) -> Result<MappedDocument, ApiError> {
    let req = parse(v)?;
    let kind = document_kind(&req)?;
    let reference = reference_for(kind);
    with_original(&req, Some(&reference))
}

/// Fields of a validation error (panics on anything else).
fn fields(err: ApiError) -> Vec<String> {
    match err {
        ApiError::Validation { details, .. } => details.into_iter().map(|d| d.field).collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

fn field_messages(err: ApiError) -> Vec<(String, String)> {
    match err {
        ApiError::Validation { details, .. } => {
            details.into_iter().map(|d| (d.field, d.message)).collect()
        }
        other => panic!("expected a validation error, got {other:?}"),
    }
}

fn map_fields(v: &Value) -> Vec<String> {
    fields(map(v).unwrap_err())
}

fn is_malformed(r: Result<FacturacionRequest, ApiError>) -> bool {
    matches!(r, Err(ApiError::MalformedJson(_)))
}

#[test]
fn every_example_maps_and_passes_the_engine() {
    let expected = [
        ("invoice", DocumentKind::Invoice),
        ("credit_note", DocumentKind::CreditNote),
        ("debit_note", DocumentKind::DebitNote),
        ("support_document", DocumentKind::SupportDocument),
        ("support_adjustment", DocumentKind::SupportAdjustment),
        ("export_invoice", DocumentKind::ExportInvoice),
        ("export_invoice_as_type_2", DocumentKind::ExportInvoice),
        ("contingency_t03", DocumentKind::ContingencyT03),
        ("contingency_t04", DocumentKind::ContingencyT04),
        ("pos", DocumentKind::Pos),
        ("pos_adjustment", DocumentKind::PosAdjustment),
        ("health_invoice", DocumentKind::Invoice),
        ("transport_invoice", DocumentKind::Invoice),
    ];
    let all = examples::all();
    assert_eq!(all.len(), expected.len());
    for ((name, body), (want_name, want_kind)) in all.iter().zip(expected) {
        assert_eq!(*name, want_name);
        let m = map(body).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(m.kind, want_kind, "{name}");
        assert_eq!(m.document.kind, want_kind, "{name}");
        assert!(m.declared.is_some(), "{name} declares its totals");
        assert_eq!(m.document.declared, m.declared, "{name}");
        let totals = validate_and_total(&m.document, &context(m.kind), None)
            .unwrap_or_else(|errs| panic!("{name}: {errs:?}"));
        m.check_declared(&totals)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(
            m.document.kind.needs_reference(),
            m.document.billing_reference.is_some(),
            "{name}"
        );
    }
    for code in 1..=10u8 {
        let body = examples::for_type(code).unwrap();
        assert_eq!(body["id_tipo_documento"], json!(code));
    }
    assert!(examples::for_type(11).is_none());
}

#[test]
fn invoice_maps_every_field() {
    let m = map(&examples::invoice()).unwrap();
    let d = &m.document;
    assert!(m.transmit && !m.asynchronous);
    assert_eq!(d.operation_type.as_deref(), Some("10"));
    assert_eq!(d.currency, "COP");
    assert_eq!(d.notes, ["Gracias por su compra"]);
    assert_eq!(
        d.payments,
        [Payment {
            form: "2".into(),
            method: "42".into(),
            due_date: Some(date("2030-12-31")),
        }]
    );
    // Customer: NIT with its computed check digit, Bogotá address.
    let c = &d.counterparty;
    assert_eq!(
        (c.id_type.as_str(), c.id_number.as_str()),
        ("31", "800197268")
    );
    assert_eq!(c.check_digit, Some(4));
    assert_eq!(c.organization_type, OrganizationType::LegalEntity);
    let a = c.address.as_ref().unwrap();
    assert_eq!(
        (a.municipality_code.as_str(), a.department_code.as_str()),
        ("11001", "11")
    );
    assert_eq!(a.department_name, "Bogotá");
    assert_eq!(m.customer.identification_number, "800197268");
    assert_eq!(m.customer.municipality_code.as_deref(), Some("11001"));
    // Lines: exact decimals, taxes, the per-unit bag tax, the discount.
    let l = &d.lines;
    assert_eq!(l.len(), 3);
    assert_eq!(l[0].allowances_charges[0].amount, dec!(1000));
    assert!(!l[0].allowances_charges[0].is_charge);
    assert_eq!(l[0].item_code.as_deref(), Some("SRV-001"));
    assert_eq!(l[1].taxes[1], {
        let mut t = LineTax::per_unit("22", dec!(66));
        t.amount = Some(dec!(198));
        t
    });
    assert_eq!(l[2].quantity.to_string(), "1.5");
    assert_eq!(l[2].unit_price.to_string(), "33333.335");
    assert_eq!(l[2].unit_code, "KGM");
    assert_eq!(m.declared_taxes.len(), 3);
    assert_eq!(m.declared_taxes[2].rate, Some(TaxRate::PerUnit(dec!(66))));
}

#[test]
fn transmit_defaults_to_true_and_async_to_false() {
    let mut body = examples::credit_note();
    let m = map(&body).unwrap();
    assert!(m.transmit);
    assert!(!m.asynchronous);
    body["transmit"] = json!(false);
    body["async"] = json!(true);
    let m = map(&body).unwrap();
    assert!(!m.transmit);
    assert!(m.asynchronous);
}

#[test]
fn unknown_fields_are_ignored() {
    let mut body = examples::invoice();
    body["something_else"] = json!({"x": 1});
    body["invoice_lines"][0]["base_quantity"] = json!(1);
    body["customer"]["dv"] = json!(4);
    assert!(map(&body).is_ok());
}

#[test]
fn type_out_of_range_is_named() {
    for code in [0, 11, -1, 300] {
        let mut body = examples::invoice();
        body["id_tipo_documento"] = json!(code);
        assert_eq!(map_fields(&body), ["id_tipo_documento"], "{code}");
    }
}

#[test]
fn export_in_both_forms() {
    for body in [
        examples::export_invoice(),
        examples::export_invoice_as_type_2(),
    ] {
        let m = map(&body).unwrap();
        let d = &m.document;
        assert_eq!(m.kind, DocumentKind::ExportInvoice);
        // FAD02: operation 10 with type 02, never 04.
        assert_eq!(d.customization_id(), "10");
        assert_eq!(d.operation_type, None);
        assert_eq!(d.currency, "USD");
        assert_eq!(
            d.exchange_rate,
            Some(ExchangeRate {
                source_currency: "USD".into(),
                target_currency: "COP".into(),
                rate: dec!(4100.25),
                date: date("2025-03-14"),
            })
        );
        assert_eq!(d.delivery_terms.as_deref(), Some("FOB"));
        assert_eq!(d.counterparty.id_type, "50");
        assert_eq!(d.counterparty.address.as_ref().unwrap().country_code, "US");
    }
    // A type-2 export takes invoice_lines, not credit_note_lines.
    let mut body = examples::export_invoice_as_type_2();
    body["credit_note_lines"] = body["invoice_lines"].take();
    assert_eq!(map_fields(&body), ["invoice_lines"]);
}

#[test]
fn currency_rules() {
    // Alphabetic id, source currency taken from it.
    let mut body = examples::export_invoice();
    body["id_tipo_moneda"] = json!("EUR");
    body["exchange_rate"]["source_currency"] = Value::Null;
    let m = map(&body).unwrap();
    assert_eq!(m.document.currency, "EUR");
    assert_eq!(m.document.exchange_rate.unwrap().source_currency, "EUR");
    // Disagreement, unknown numeric code, missing exchange rate.
    let mut body = examples::export_invoice();
    body["id_tipo_moneda"] = json!(978);
    assert_eq!(map_fields(&body), ["id_tipo_moneda"]);
    body["id_tipo_moneda"] = json!(999);
    assert_eq!(map_fields(&body), ["id_tipo_moneda"]);
    let mut body = examples::export_invoice();
    body.as_object_mut().unwrap().remove("exchange_rate");
    assert_eq!(map_fields(&body), ["exchange_rate"]);
    // Without any currency an export is in pesos.
    body.as_object_mut().unwrap().remove("id_tipo_moneda");
    assert_eq!(map(&body).unwrap().document.currency, "COP");
    // Bad Incoterm, bad rate.
    let mut body = examples::export_invoice();
    body["delivery"]["delivery_terms"] = json!("XYZ");
    body["exchange_rate"]["calculation_rate"] = json!(0);
    assert_eq!(
        map_fields(&body),
        ["exchange_rate.calculation_rate", "delivery.delivery_terms"]
    );
}

#[test]
fn missing_or_empty_line_arrays_name_the_expected_one() {
    let cases = [
        (examples::invoice(), "invoice_lines"),
        (examples::credit_note(), "credit_note_lines"),
        (examples::debit_note(), "debit_note_lines"),
        (examples::support_document(), "invoice_lines"),
        (examples::support_adjustment(), "credit_note_lines"),
        (examples::pos(), "invoice_lines"),
        (examples::pos_adjustment(), "credit_note_lines"),
    ];
    for (body, array) in cases {
        let mut missing = body.clone();
        missing.as_object_mut().unwrap().remove(array);
        assert_eq!(map_fields(&missing), [array]);
        let mut empty = body;
        empty[array] = json!([]);
        assert_eq!(map_fields(&empty), [array]);
    }
    // Lines in the wrong array: the message says which one was sent.
    let mut body = examples::credit_note();
    body["invoice_lines"] = body["credit_note_lines"].take();
    let (field, message) = field_messages(map(&body).unwrap_err()).remove(0);
    assert_eq!(field, "credit_note_lines");
    assert!(message.contains("not invoice_lines"), "{message}");
}

#[test]
fn quantity_name_follows_the_array() {
    let mut body = examples::credit_note();
    let line = &mut body["credit_note_lines"][0];
    line["invoiced_quantity"] = line["credited_quantity"].take();
    let (field, message) = field_messages(map(&body).unwrap_err()).remove(0);
    assert_eq!(field, "credit_note_lines[0].credited_quantity");
    assert!(message.contains("not invoiced_quantity"), "{message}");
}

#[test]
fn five_hundred_lines_at_most() {
    let mut body = examples::pos();
    let line = body["invoice_lines"][0].clone();
    body["invoice_lines"] = Value::Array(vec![line; 501]);
    body.as_object_mut()
        .unwrap()
        .remove("legal_monetary_totals");
    assert_eq!(map_fields(&body), ["invoice_lines"]);
    body["invoice_lines"].as_array_mut().unwrap().pop();
    let m = map(&body).unwrap();
    assert_eq!(m.document.lines.len(), 500);
    assert!(validate_and_total(&m.document, &context(m.kind), None).is_ok());
}

#[test]
fn notes_need_reference_and_concept() {
    for body in [
        examples::credit_note(),
        examples::debit_note(),
        examples::support_adjustment(),
        examples::pos_adjustment(),
    ] {
        let mut body = body;
        let obj = body.as_object_mut().unwrap();
        obj.remove("id_documento_referencia");
        obj.remove("id_concepto_nota");
        assert_eq!(
            map_fields(&body),
            ["id_documento_referencia", "id_concepto_nota"]
        );
    }
    // Reference fields on an invoice are ignored.
    let mut body = examples::invoice();
    body["id_documento_referencia"] = json!(7);
    body["id_concepto_nota"] = json!("9");
    assert!(map(&body).unwrap().document.billing_reference.is_none());
}

#[test]
fn reference_must_exist_and_fit() {
    let req = parse(&examples::credit_note()).unwrap();
    let (field, message) = field_messages(with_original(&req, None).unwrap_err()).remove(0);
    assert_eq!(
        (field.as_str(), message.as_str()),
        ("id_documento_referencia", "document not found")
    );
    // A credit note cannot reference a POS receipt.
    let pos = reference_for(DocumentKind::PosAdjustment);
    assert_eq!(
        fields(with_original(&req, Some(&pos)).unwrap_err()),
        ["id_documento_referencia"]
    );
    // A support adjustment references a support document.
    let req = parse(&examples::support_adjustment()).unwrap();
    let invoice = reference_for(DocumentKind::CreditNote);
    assert_eq!(
        fields(with_original(&req, Some(&invoice)).unwrap_err()),
        ["id_documento_referencia"]
    );
    // A credit note may reference an export invoice; the reference is copied.
    let req = parse(&examples::credit_note()).unwrap();
    let mut export = reference_for(DocumentKind::CreditNote);
    export.kind = DocumentKind::ExportInvoice;
    let m = with_original(&req, Some(&export)).unwrap();
    assert_eq!(
        m.document.billing_reference,
        Some(BillingReference {
            number: "SETP990000000".into(),
            code: "ab".repeat(48),
            issue_date: date("2025-03-01"),
            scheme: CodeScheme::Cufe,
        })
    );
    // The handler passing another document is our fault.
    let mut other = reference_for(DocumentKind::CreditNote);
    other.id = 99;
    assert!(matches!(
        with_original(&req, Some(&other)),
        Err(ApiError::Internal(_))
    ));
}

#[test]
fn concept_codes_per_note_type() {
    let cases = [
        (examples::credit_note(), &["1", "2", "3", "4", "5"][..], "6"),
        (examples::debit_note(), &["1", "2", "3", "4"][..], "5"),
        (examples::support_adjustment(), &["1", "2", "3"][..], "4"),
        (
            examples::pos_adjustment(),
            &["1", "2", "3", "4", "5"][..],
            "6",
        ),
    ];
    for (body, good, bad) in cases {
        for code in good {
            let mut b = body.clone();
            b["id_concepto_nota"] = json!(code);
            let m = map(&b).unwrap();
            let c = m.document.note_concept.unwrap();
            assert_eq!(c.code, *code);
            assert!(!c.description.is_empty());
        }
        for code in [json!(bad), json!("0"), json!("")] {
            let mut b = body.clone();
            b["id_concepto_nota"] = code;
            assert_eq!(map_fields(&b), ["id_concepto_nota"]);
        }
    }
    // An integer concept is the same code.
    let mut body = examples::debit_note();
    body["id_concepto_nota"] = json!(3);
    assert_eq!(map(&body).unwrap().document.note_concept.unwrap().code, "3");
}

#[test]
fn line_arithmetic() {
    let line = |q: Value, p: Value, ext: Value| {
        let mut body = examples::debit_note();
        body.as_object_mut()
            .unwrap()
            .remove("legal_monetary_totals");
        body["debit_note_lines"] = json!([{
            "description": "x", "debited_quantity": q, "price_amount": p, "line_extension_amount": ext
        }]);
        body
    };
    // 3 × 33.335 = 100.005 → 100.01 (half-up); 0.01 of tolerance.
    assert!(map(&line(json!(3), json!(33.335), json!(100.01))).is_ok());
    assert!(map(&line(json!(3), json!(33.335), json!(100.00))).is_ok());
    assert_eq!(
        map_fields(&line(json!(3), json!(33.335), json!(99.99))),
        ["debit_note_lines[0].line_extension_amount"]
    );
    assert_eq!(
        map_fields(&line(json!(2), json!(50000), json!(100000.02))),
        ["debit_note_lines[0].line_extension_amount"]
    );
    // Discounts and charges count.
    let mut body = line(json!(2), json!(100), json!(190));
    body["debit_note_lines"][0]["allowance_charges"] = json!([
        {"amount": 15},
        {"charge_indicator": true, "amount": 5, "reason": "Empaque"}
    ]);
    let m = map(&body).unwrap();
    assert_eq!(
        m.document.lines[0].allowances_charges[0].reason,
        "Descuento"
    );
    assert!(m.document.lines[0].allowances_charges[1].is_charge);
    // Quantity > 0, price ≥ 0, all reported together with other fields.
    let mut body = line(json!(0), json!(-1), json!(0));
    body["customer"]["email"] = json!("not-an-email");
    assert_eq!(
        map_fields(&body),
        [
            "customer.email",
            "debit_note_lines[0].debited_quantity",
            "debit_note_lines[0].price_amount"
        ]
    );
    // Price 0 is fine (a gift), line amount computed when absent.
    let mut body = line(json!(1), json!(0), json!(0));
    body["debit_note_lines"][0]
        .as_object_mut()
        .unwrap()
        .remove("line_extension_amount");
    assert_eq!(map(&body).unwrap().document.lines[0].line_extension, None);
    // Huge values are refused, not overflowed.
    assert_eq!(
        map_fields(&line(json!(1e16), json!(1), json!(1))),
        ["debit_note_lines[0].debited_quantity"]
    );
}

#[test]
fn line_taxes() {
    let with_taxes = |taxes: Value| {
        let mut body = examples::pos();
        body.as_object_mut()
            .unwrap()
            .remove("legal_monetary_totals");
        body["invoice_lines"][0]["tax_totals"] = taxes;
        body
    };
    let ok = with_taxes(json!([
        {"tax_code": 1, "percent": 19},
        {"tax_code": "06", "percent": 2.5},
        {"tax_code": "04", "percent": 8}
    ]));
    let m = map(&ok).unwrap();
    let l = &m.document.lines[0];
    assert_eq!(
        l.taxes,
        [
            LineTax::percent("01", dec!(19)),
            LineTax::percent("04", dec!(8))
        ]
    );
    assert_eq!(l.withholdings, [LineTax::percent("06", dec!(2.5))]);
    assert_eq!(
        map_fields(&with_taxes(json!([
            {"tax_code": "99", "percent": 1},
            {"tax_code": "01", "percent": 101},
            {"tax_code": "04"},
            {"tax_code": "22", "percent": 1, "per_unit_amount": 66},
            {"tax_code": "03", "percent": 1, "tax_amount": -1}
        ]))),
        [
            "invoice_lines[0].tax_totals[0].tax_code",
            "invoice_lines[0].tax_totals[1].percent",
            "invoice_lines[0].tax_totals[2].percent",
            "invoice_lines[0].tax_totals[3].percent",
            "invoice_lines[0].tax_totals[4].tax_amount"
        ]
    );
    assert_eq!(
        map_fields(&with_taxes(json!([
            {"tax_code": "01", "percent": 19},
            {"tax_code": "01", "percent": 5}
        ]))),
        ["invoice_lines[0].tax_totals[1].tax_code"]
    );
}

#[test]
fn declared_totals_mismatches_name_request_paths() {
    // Line tax after a withholding: engine index 0, request index 1.
    let mut body = examples::invoice();
    body["invoice_lines"][0]["tax_totals"] = json!([
        {"tax_code": "06", "percent": 2.5, "tax_amount": 2475},
        {"tax_code": "01", "percent": 19, "tax_amount": 18811}
    ]);
    let m = map(&body).unwrap();
    let errs = validate_and_total(&m.document, &context(m.kind), None).unwrap_err();
    let e = m.validation_error(&errs);
    assert_eq!(
        field_messages(e),
        [(
            "invoice_lines[0].tax_totals[1].tax_amount".to_string(),
            "declared 18811 but computed 18810".to_string()
        )]
    );
    // Wrong payable amount.
    let mut body = examples::invoice();
    body["legal_monetary_totals"]["payable_amount"] = json!(1);
    let m = map(&body).unwrap();
    let errs = validate_and_total(&m.document, &context(m.kind), None).unwrap_err();
    assert_eq!(
        fields(m.validation_error(&errs)),
        ["legal_monetary_totals.payable_amount"]
    );
    // Document tax_totals: compared per code and rate.
    let mut body = examples::invoice();
    body["tax_totals"][0]["tax_amount"] = json!(18000);
    body["tax_totals"][0]["taxable_amount"] = json!(99301);
    body["tax_totals"][2]["tax_amount"] = json!(197.99);
    let m = map(&body).unwrap();
    let totals = validate_and_total(&m.document, &context(m.kind), None).unwrap();
    assert_eq!(
        fields(m.check_declared(&totals).unwrap_err()),
        ["tax_totals[0].tax_amount", "tax_totals[0].taxable_amount"]
    );
    // A tax code given without rate is compared with the whole code; a
    // declared tax the lines do not carry is compared with zero.
    let mut body = examples::invoice();
    body["tax_totals"] = json!([
        {"tax_code": "01", "tax_amount": 18867},
        {"tax_code": "04", "tax_amount": 5}
    ]);
    let m = map(&body).unwrap();
    let totals = validate_and_total(&m.document, &context(m.kind), None).unwrap();
    assert_eq!(
        fields(m.check_declared(&totals).unwrap_err()),
        ["tax_totals[1].tax_amount"]
    );
}

#[test]
fn engine_fields_translate_to_request_paths() {
    let m = map(&examples::support_document()).unwrap();
    let cases = [
        ("lines", "invoice_lines"),
        ("lines[0].quantity", "invoice_lines[0].invoiced_quantity"),
        (
            "lines[0].unit_measure",
            "invoice_lines[0].unit_measure.code",
        ),
        (
            "lines[0].withholdings[0].code",
            "invoice_lines[0].tax_totals[0].tax_code",
        ),
        ("lines[0].description", "invoice_lines[0].description"),
        ("supplier.id_number", "customer.identification_number"),
        (
            "supplier.address.department_code",
            "customer.municipality.code",
        ),
        ("customer.email", "customer.email"),
        ("note_concept.description", "id_concepto_nota"),
        ("billing_reference.issue_date", "id_documento_referencia"),
        ("currency", "id_tipo_moneda"),
        ("payment_form[0].form", "payment_form.id"),
        ("payment_form[0].due_date", "payment_form.due_date"),
        ("notes[0]", "notes"),
        ("delivery_terms", "delivery.delivery_terms"),
        (
            "legal_monetary_totals.payable_amount",
            "legal_monetary_totals.payable_amount",
        ),
        ("resolution.valid_to", "resolution.valid_to"),
    ];
    for (engine, api) in cases {
        assert_eq!(m.api_field(engine), api, "{engine}");
    }
    let m = map(&examples::debit_note()).unwrap();
    assert_eq!(
        m.api_field("lines[0].quantity"),
        "debit_note_lines[0].debited_quantity"
    );
}

#[test]
fn customer_rules() {
    // All customer errors at once, with the `customer.` prefix.
    let mut body = examples::invoice();
    body["customer"] = json!({
        "identification_number": "80019726-8",
        "name": " ",
        "email": "x",
        "type_document_identification": {"code": "31"},
        "municipality": {"code": "123"}
    });
    assert_eq!(
        map_fields(&body),
        [
            "customer.name",
            "customer.email",
            "customer.identification_number",
            "customer.municipality.code"
        ]
    );
    // Support document vendor: a natural person with a CC.
    let m = map(&examples::support_document()).unwrap();
    let v = &m.document.counterparty;
    assert_eq!(v.id_type, "13");
    assert_eq!(v.check_digit, None);
    assert_eq!(v.organization_type, OrganizationType::NaturalPerson);
    assert_eq!(v.address.as_ref().unwrap().department_name, "Antioquia");
    // Defaults: type 13, natural person, no address.
    let mut body = examples::pos();
    body["customer"] =
        json!({"identification_number": "123", "name": "Ana", "email": "ana@example.test"});
    let c = map(&body).unwrap().document.counterparty;
    assert_eq!(
        (c.id_type.as_str(), c.organization_type),
        ("13", OrganizationType::NaturalPerson)
    );
    assert!(c.address.is_none());
    // NIT inferred from a legal entity, check digit computed.
    body["customer"]["identification_number"] = json!("900000001");
    body["customer"]["type_organization"] = json!({"code": "1"});
    let c = map(&body).unwrap().document.counterparty;
    assert_eq!((c.id_type.as_str(), c.check_digit), ("31", Some(2)));
}

#[test]
fn text_xml_cannot_carry_is_refused_by_path() {
    let mut body = examples::invoice();
    body["customer"]["name"] = json!("Ana\u{1}");
    body["invoice_lines"][1]["description"] = json!("bolsa\u{0}");
    body["invoice_lines"][1]["code"] = json!("B\u{FFFF}");
    body["notes"] = json!("tab\tand newline\n are fine, \u{1b} is not");
    body["invoice_lines"][0]["tax_totals"][0]["tax_name"] = json!("IVA\u{7}");
    body["customer"]["email"] = json!("a\u{2}@b.co");
    assert_eq!(
        map_fields(&body),
        [
            "customer.email",
            "customer.name",
            "invoice_lines[0].tax_totals[0].tax_name",
            "invoice_lines[1].description",
            "invoice_lines[1].code",
            "notes"
        ]
    );
}

#[test]
fn header_fields() {
    let mut body = examples::invoice();
    body["id_tipo_operacion"] = json!(30);
    body["payment_form"] = json!({"id": 3, "method": "cash!"});
    body["referencia_externa"] = json!("");
    assert_eq!(
        map_fields(&body),
        [
            "id_tipo_operacion",
            "payment_form.id",
            "payment_form.method",
            "referencia_externa"
        ]
    );
    let mut body = examples::invoice();
    body["payment_form"] = json!({"id": "2"});
    assert_eq!(map_fields(&body), ["payment_form.due_date"]);
    body["payment_form"] = json!({});
    body["referencia_externa"] = json!(" pedido-123 ");
    body["id_tipo_operacion"] = json!(13);
    let m = map(&body).unwrap();
    assert_eq!(
        m.document.payments,
        [Payment {
            form: "1".into(),
            method: "10".into(),
            due_date: None
        }]
    );
    assert_eq!(m.external_reference.as_deref(), Some("pedido-123"));
    assert_eq!(m.document.operation_type.as_deref(), Some("13"));
}

#[test]
fn decimals_are_exact() {
    let body = r#"{"id_tipo_documento": 3, "customer": {"identification_number": "1", "name": "a", "email": "a@b.co"},
        "id_documento_referencia": 1, "id_concepto_nota": "4",
        "debit_note_lines": [
          {"description": "a", "debited_quantity": 0.1, "price_amount": 0.1},
          {"description": "b", "debited_quantity": 1e-2, "price_amount": 12345678901234.123456789012},
          {"description": "c", "debited_quantity": 3, "price_amount": 1.10, "line_extension_amount": 3.30}
        ]}"#;
    let req = parse_text(body).unwrap();
    let lines = req.debit_note_lines.as_ref().unwrap();
    assert_eq!(lines[0].debited_quantity.unwrap().to_string(), "0.1");
    assert_eq!(lines[0].price_amount.to_string(), "0.1");
    assert_eq!(lines[1].debited_quantity, Some(dec!(0.01)));
    assert_eq!(
        lines[1].price_amount.to_string(),
        "12345678901234.123456789012"
    );
    assert_eq!(lines[2].price_amount.to_string(), "1.10");
    // From a serde_json::Value too (the examples).
    let m = map(&examples::contingency_t04()).unwrap();
    assert_eq!(m.document.lines[0].unit_price, dec!(12500.5));
    assert_eq!(m.document.lines[0].taxes[0].amount, Some(dec!(9500.38)));
    // More digits than a Decimal holds: 422 on the field, not a rounding.
    let long = body.replace(
        "0.1, \"price_amount\": 0.1",
        "0.1, \"price_amount\": 0.12345678901234567890123456789",
    );
    match parse_text(&long) {
        Err(ApiError::Validation { details, .. }) => {
            assert_eq!(details[0].field, "debit_note_lines[0].price_amount")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_json_types_are_400() {
    let cases: [(&str, Value); 12] = [
        ("id_tipo_documento", json!("1")),
        ("id_tipo_documento", json!(1.5)),
        ("customer", json!("Ana")),
        // Arrays for objects, which serde would read field by field.
        ("customer", json!(["800197268", "Ana", "ana@example.test"])),
        ("payment_form", json!([])),
        ("legal_monetary_totals", json!([1, 1, 1, 1])),
        ("invoice_lines", json!({"description": "x"})),
        ("transmit", json!("yes")),
        ("async", json!(1)),
        ("id_documento_referencia", json!("12")),
        ("id_tipo_operacion", json!(true)),
        ("notes", json!(["a"])),
    ];
    for (field, value) in cases {
        let mut body = examples::invoice();
        body[field] = value;
        assert!(is_malformed(parse(&body)), "{field}");
    }
    let line_cases: [(&str, Value); 6] = [
        ("price_amount", json!("100")),
        ("invoiced_quantity", json!("2")),
        ("description", json!(5)),
        ("tax_totals", json!({"tax_code": "01"})),
        ("tax_totals", json!([["01", "IVA", 19]])),
        ("unit_measure", json!(["94"])),
    ];
    for (field, value) in line_cases {
        let mut body = examples::invoice();
        body["invoice_lines"][0][field] = value;
        match parse(&body) {
            Err(ApiError::MalformedJson(m)) => {
                assert!(m.contains(&format!("invoice_lines[0].{field}")), "{m}")
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    let mut body = examples::invoice();
    body["invoice_lines"][0]["tax_totals"][0]["percent"] = json!("19");
    assert!(is_malformed(parse(&body)));
    assert!(is_malformed(parse_text("[1, 2]")));
    assert!(is_malformed(parse_text("{\"id_tipo_documento\": 1,")));
    let text = examples::invoice().to_string();
    assert!(is_malformed(parse_text(&format!("{text}x"))), "trailing");
}

#[test]
fn missing_required_fields_are_422_naming_the_path() {
    let remove = |path: &[&str]| {
        let mut body = examples::invoice();
        let (last, parents) = path.split_last().unwrap();
        let mut v = &mut body;
        for p in parents {
            v = match p.parse::<usize>() {
                Ok(i) => &mut v[i],
                Err(_) => &mut v[*p],
            };
        }
        v.as_object_mut().unwrap().remove(*last);
        body
    };
    let cases: [(&[&str], &str); 6] = [
        (&["id_tipo_documento"], "id_tipo_documento"),
        (&["customer"], "customer"),
        (
            &["invoice_lines", "1", "description"],
            "invoice_lines[1].description",
        ),
        (
            &["invoice_lines", "0", "price_amount"],
            "invoice_lines[0].price_amount",
        ),
        (
            &["invoice_lines", "0", "tax_totals", "0", "tax_code"],
            "invoice_lines[0].tax_totals[0].tax_code",
        ),
        (
            &["invoice_lines", "0", "unit_measure", "code"],
            "invoice_lines[0].unit_measure.code",
        ),
    ];
    for (path, field) in cases {
        match parse(&remove(path)) {
            Err(ApiError::Validation { details, .. }) => assert_eq!(details[0].field, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    // Required by the mapping rather than by the JSON shape (a customer's
    // email too: `completar_adquiriente` may fill it).
    assert_eq!(
        map_fields(&remove(&["invoice_lines", "2", "invoiced_quantity"])),
        ["invoice_lines[2].invoiced_quantity"]
    );
    assert_eq!(
        map_fields(&remove(&["customer", "email"])),
        ["customer.email"]
    );
    let mut body = examples::export_invoice();
    body["exchange_rate"]
        .as_object_mut()
        .unwrap()
        .remove("calculation_rate");
    match parse(&body) {
        Err(ApiError::Validation { details, .. }) => {
            assert_eq!(details[0].field, "exchange_rate.calculation_rate")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_are_capped() {
    let mut body = examples::pos();
    body.as_object_mut()
        .unwrap()
        .remove("legal_monetary_totals");
    body["invoice_lines"] = Value::Array(vec![
        json!({"description": "", "invoiced_quantity": 0, "price_amount": 1});
        200
    ]);
    let f = map_fields(&body);
    assert_eq!(f.len(), MAX_DETAILS + 1);
    assert_eq!(f.last().map(String::as_str), Some("body"));
}

#[test]
fn request_schema_names_async() {
    let schema =
        serde_json::to_value(<FacturacionRequest as utoipa::PartialSchema>::schema()).unwrap();
    let props = &schema["properties"];
    assert!(props.get("async").is_some(), "{schema}");
    assert!(props.get("id_tipo_documento").is_some());
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["id_tipo_documento", "customer"]);
}

// --- the authority's operation types and sector data -----------------------

/// `11` is the health sector: `salud` mapped, the XML's operation
/// `SS-SinAporte` for an invoice without the user's copay (`SS-CUDE` on a
/// note), the payment modality defaulting to per event.
#[test]
fn health_operation_maps_the_annex_data() {
    let m = map(&examples::health_invoice()).unwrap();
    let d = &m.document;
    assert_eq!(d.operation_type, None);
    assert_eq!(d.customization_id(), "SS-SinAporte");
    let h = d.health.as_ref().unwrap();
    assert_eq!(h.provider_code, "110010123401");
    assert_eq!(
        (h.payment_modality.as_str(), h.coverage.as_str()),
        ("04", "16")
    );
    assert_eq!(h.contract_number, "CT-2025-118");
    assert_eq!(h.period_start, Some(date("2025-03-01")));
    assert_eq!(h.period_end, Some(date("2025-03-31")));

    let mut body = examples::health_invoice();
    body["salud"] = json!({"codigo_prestador": "1100101", "cobertura": 4});
    let h = map(&body).unwrap().document.health.unwrap();
    assert_eq!(
        (h.payment_modality.as_str(), h.coverage.as_str()),
        ("04", "04")
    );

    let mut note = examples::credit_note();
    note["id_tipo_operacion"] = json!("11");
    note["salud"] = json!({"codigo_prestador": "1100101", "cobertura": "15"});
    let m = map(&note).unwrap();
    assert_eq!(m.document.customization_id(), "SS-CUDE");

    let mut body = examples::health_invoice();
    body.as_object_mut().unwrap().remove("salud");
    assert_eq!(map_fields(&body), ["salud"]);
    body["salud"] =
        json!({"modalidad_pago": "09", "fecha_inicio": "2025-03-02", "fecha_fin": "2025-03-01"});
    assert_eq!(
        map_fields(&body),
        [
            "salud.codigo_prestador",
            "salud.modalidad_pago",
            "salud.cobertura",
            "salud.fecha_fin"
        ]
    );
    // `salud` without the health operation, and `11` on a POS receipt.
    let mut body = examples::invoice();
    body["salud"] = json!({"codigo_prestador": "1", "cobertura": "15"});
    assert_eq!(map_fields(&body), ["salud"]);
    let mut pos = examples::pos();
    pos["id_tipo_operacion"] = json!("11");
    assert_eq!(map_fields(&pos), ["id_tipo_operacion"]);
}

/// `12` is cargo transport: operation 10 in the XML, the consignment on its
/// line (freight defaulting to the line's subtotal).
#[test]
fn transport_operation_maps_the_consignment() {
    let m = map(&examples::transport_invoice()).unwrap();
    let d = &m.document;
    assert_eq!(d.operation_type, None);
    assert_eq!(d.customization_id(), "10");
    let t = d.lines[0].transport.as_ref().unwrap();
    assert_eq!(t.rndc_filing, "93781230");
    assert_eq!(t.consignment, "RM-5521");
    assert_eq!(t.freight, dec!(3200000));
    assert_eq!(t.quantity, dec!(12500));
    assert_eq!(t.unit_code, "KGM");

    let mut body = examples::transport_invoice();
    body["invoice_lines"][0]["transporte"] = json!({"radicado_rndc": " ", "unidad": "TNE"});
    assert_eq!(
        map_fields(&body),
        [
            "invoice_lines[0].transporte.radicado_rndc",
            "invoice_lines[0].transporte.numero_remesa",
            "invoice_lines[0].transporte.unidad"
        ]
    );
    body["invoice_lines"][0]
        .as_object_mut()
        .unwrap()
        .remove("transporte");
    assert_eq!(map_fields(&body), ["invoice_lines"]);
    // `transporte` without the transport operation.
    let mut body = examples::transport_invoice();
    body["id_tipo_operacion"] = json!("10");
    assert_eq!(map_fields(&body), ["invoice_lines[0].transporte"]);
}

/// The stale operation codes (01-08, 14) are not the authority's: refused
/// before they reach it (FAD02).
#[test]
fn operation_codes_are_the_authoritys() {
    for code in ["01", "04", "05", "08", "14"] {
        let mut body = examples::invoice();
        body["id_tipo_operacion"] = json!(code);
        assert_eq!(map_fields(&body), ["id_tipo_operacion"], "{code}");
    }
    for code in ["09", "10", "13", "15", "16"] {
        let mut body = examples::invoice();
        body["id_tipo_operacion"] = json!(code);
        let d = map(&body).unwrap().document;
        assert_eq!(d.customization_id(), code);
    }
    // Support documents keep 11 as the non-resident vendor.
    let mut ds = examples::support_document();
    ds["id_tipo_operacion"] = json!("11");
    let d = map(&ds).unwrap().document;
    assert_eq!((d.customization_id(), d.health.is_none()), ("11", true));
}

/// T03's paper invoice, and the POS register and cashier (defaults `1`).
#[test]
fn contingency_reference_and_point_of_sale() {
    let d = map(&examples::contingency_t03()).unwrap().document;
    let r = d.paper_reference.unwrap();
    assert_eq!(
        (r.number.as_str(), r.issue_date),
        ("TAL-0042", date("2025-03-10"))
    );
    let mut body = examples::contingency_t03();
    body.as_object_mut()
        .unwrap()
        .remove("referencia_contingencia");
    assert_eq!(map(&body).unwrap().document.paper_reference, None);
    body["referencia_contingencia"] = json!({"numero": " ", "fecha": "2025-03-10"});
    assert_eq!(map_fields(&body), ["referencia_contingencia.numero"]);
    // Read on type 7 only.
    let mut fe = examples::invoice();
    fe["referencia_contingencia"] = json!({"numero": "X", "fecha": "2025-03-10"});
    assert_eq!(map(&fe).unwrap().document.paper_reference, None);

    let d = map(&examples::pos()).unwrap().document;
    assert_eq!(
        d.point_of_sale,
        Some(PointOfSale {
            register_id: "3".into(),
            cashier_id: "17".into()
        })
    );
    let mut body = examples::pos();
    body.as_object_mut().unwrap().remove("id_caja");
    body["id_cajero"] = json!(4);
    let p = map(&body).unwrap().document.point_of_sale.unwrap();
    assert_eq!((p.register_id.as_str(), p.cashier_id.as_str()), ("1", "4"));
    body["id_caja"] = json!("");
    assert_eq!(map_fields(&body), ["id_caja"]);
    assert_eq!(
        map(&examples::invoice()).unwrap().document.point_of_sale,
        None
    );
}

/// A foreign buyer's address: no municipality code, its country named.
#[test]
fn foreign_address_names_its_country() {
    let mut body = examples::export_invoice();
    body["customer"]["municipality"] = json!({"code": "33101", "name": "Miami"});
    let d = map(&body).unwrap().document;
    let a = d.counterparty.address.unwrap();
    assert_eq!(a.municipality_code, "");
    assert_eq!(a.municipality_name, "Miami");
    assert_eq!(
        (a.country_code.as_str(), a.country_name.as_str()),
        ("US", "Estados Unidos")
    );
    body["customer"]["country_code"] = json!("ZZ");
    let a = map(&body).unwrap().document.counterparty.address.unwrap();
    assert_eq!(a.country_name, "ZZ");
}

/// The engine's names of the new fields are the request's paths.
#[test]
fn sector_fields_name_the_request_paths() {
    let m = map(&examples::transport_invoice()).unwrap();
    for (engine, api) in [
        ("health.provider_code", "salud.codigo_prestador"),
        ("health.coverage", "salud.cobertura"),
        ("health.period_end", "salud.fecha_fin"),
        ("point_of_sale.register_id", "id_caja"),
        ("point_of_sale.cashier_id", "id_cajero"),
        ("paper_reference.number", "referencia_contingencia.numero"),
        (
            "lines[0].transport.unit_code",
            "invoice_lines[0].transporte.unidad",
        ),
        (
            "lines[0].transport.rndc_filing",
            "invoice_lines[0].transporte.radicado_rndc",
        ),
    ] {
        assert_eq!(m.api_field(engine), api);
    }
}

/// Every example's document, stored as a domain request, reads back the
/// same to the last field (what a rebuild of it then builds).
#[test]
fn every_example_document_comes_back_from_its_stored_domain_request() {
    use crate::issuing::stored::{read, write, Domain, DomainRef, Stored};
    for (name, body) in examples::all() {
        let mapped = map(&body).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let bytes = write(b"{}", DomainRef::Invoicing(&mapped.document)).unwrap();
        match read(&bytes).unwrap() {
            Stored::Domain { domain, .. } => {
                assert_eq!(
                    domain,
                    Domain::Invoicing(Box::new(mapped.document)),
                    "{name}"
                )
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}
