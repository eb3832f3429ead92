//! Valid `POST /facturacion` bodies, one per document type (and the export
//! sent as type 2 with `id_tipo_operacion` `10`). Used by the unit tests of
//! the mapping and by the HTTP integration tests.
//!
//! Every example declares its totals, computed by hand with the authority's
//! rules, so a change in the arithmetic shows up as a mismatch. Notes and
//! adjustments reference document [`REFERENCE_ID`]; integration tests issue
//! the original first and put its id in with [`with_reference`].

use serde_json::{json, Value};

/// `id_documento_referencia` of the note examples.
pub const REFERENCE_ID: u64 = 1;

/// A company customer identified by NIT (check digit 4), in Bogotá.
pub fn company_customer() -> Value {
    json!({
        "identification_number": "800197268",
        "name": "Cliente Ejemplo S.A.S.",
        "email": "cliente@example.test",
        "type_document_identification": {"code": "31"},
        "type_organization": {"code": "1"},
        "address": "Calle 100 # 10-20",
        "municipality": {"code": "11001", "name": "Bogotá, D.C."},
        "country_code": "CO",
        "phone": "6015550101"
    })
}

/// A natural person not obliged to invoice (vendor of a support document).
pub fn natural_person() -> Value {
    json!({
        "identification_number": "1020304050",
        "name": "Pedro Pérez",
        "email": "pedro.perez@example.test",
        "type_document_identification": {"code": "13"},
        "type_organization": {"code": "2"},
        "address": "Carrera 7 # 45-10",
        "municipality": {"code": "05001", "name": "Medellín"}
    })
}

/// A foreign buyer (export).
pub fn foreign_customer() -> Value {
    json!({
        "identification_number": "123456789",
        "name": "Global Imports LLC",
        "email": "buyer@globalimports.example",
        "type_document_identification": {"code": "50"},
        "type_organization": {"code": "1"},
        "address": "500 Main Street",
        "municipality": {"name": "Miami"},
        "country_code": "US"
    })
}

/// The final consumer of a POS receipt.
pub fn final_consumer() -> Value {
    json!({
        "identification_number": "222222222222",
        "name": "Consumidor final",
        "email": "consumidor.final@example.test",
        "type_document_identification": {"code": "13"},
        "type_organization": {"code": "2"}
    })
}

/// Type 1: three lines with IVA 19 %, IVA 0 %, a line discount and the
/// per-unit bag tax; credit payment.
pub fn invoice() -> Value {
    json!({
        "id_tipo_documento": 1,
        "transmit": true,
        "async": false,
        "id_tipo_operacion": "10",
        "customer": company_customer(),
        "invoice_lines": [
            {
                "description": "Servicio de consultoría",
                "invoiced_quantity": 2,
                "price_amount": 50000,
                "line_extension_amount": 99000,
                "unit_measure": {"code": "94"},
                "code": "SRV-001",
                "allowance_charges": [
                    {"charge_indicator": false, "reason": "Descuento por volumen", "reason_code": "01", "amount": 1000}
                ],
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 99000, "tax_amount": 18810}
                ]
            },
            {
                "description": "Bolsa plástica",
                "invoiced_quantity": 3,
                "price_amount": 100,
                "line_extension_amount": 300,
                "unit_measure": {"code": "94"},
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 300, "tax_amount": 57},
                    {"tax_code": "22", "tax_name": "INC Bolsas", "per_unit_amount": 66, "tax_amount": 198}
                ]
            },
            {
                "description": "Libro (excluido de IVA)",
                "invoiced_quantity": 1.5,
                "price_amount": 33333.335,
                "line_extension_amount": 50000.00,
                "unit_measure": {"code": "KGM"},
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 0, "taxable_amount": 50000, "tax_amount": 0}
                ]
            }
        ],
        "tax_totals": [
            {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 99300, "tax_amount": 18867},
            {"tax_code": "01", "tax_name": "IVA", "percent": 0, "taxable_amount": 50000, "tax_amount": 0},
            {"tax_code": "22", "tax_name": "INC Bolsas", "per_unit_amount": 66, "tax_amount": 198}
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 149300,
            "tax_exclusive_amount": 149300,
            "tax_inclusive_amount": 168365,
            "payable_amount": 168365
        },
        "payment_form": {"id": "2", "method": "42", "due_date": "2030-12-31"},
        "notes": "Gracias por su compra"
    })
}

/// Type 2: partial return of one consulting hour.
pub fn credit_note() -> Value {
    json!({
        "id_tipo_documento": 2,
        "customer": company_customer(),
        "id_documento_referencia": REFERENCE_ID,
        "id_concepto_nota": "1",
        "credit_note_lines": [
            {
                "description": "Devolución parcial: servicio de consultoría",
                "credited_quantity": 1,
                "price_amount": 50000,
                "line_extension_amount": 50000,
                "unit_measure": {"code": "94"},
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 50000, "tax_amount": 9500}
                ]
            }
        ],
        "tax_totals": [
            {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 50000, "tax_amount": 9500}
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 50000,
            "tax_exclusive_amount": 50000,
            "tax_inclusive_amount": 59500,
            "payable_amount": 59500
        },
        "notes": "Devolución parcial"
    })
}

/// Type 3: late-payment interest.
pub fn debit_note() -> Value {
    json!({
        "id_tipo_documento": 3,
        "customer": company_customer(),
        "id_documento_referencia": REFERENCE_ID,
        "id_concepto_nota": "1",
        "debit_note_lines": [
            {
                "description": "Intereses de mora",
                "debited_quantity": 1,
                "price_amount": 15000,
                "line_extension_amount": 15000,
                "unit_measure": {"code": "94"}
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 15000,
            "tax_exclusive_amount": 0,
            "tax_inclusive_amount": 15000,
            "payable_amount": 15000
        }
    })
}

/// Type 4: a service bought from a natural person, with ReteRenta 3.5 %.
pub fn support_document() -> Value {
    json!({
        "id_tipo_documento": 4,
        "customer": natural_person(),
        "invoice_lines": [
            {
                "description": "Servicio de transporte de mercancía",
                "invoiced_quantity": 1,
                "price_amount": 800000,
                "line_extension_amount": 800000,
                "unit_measure": {"code": "E48"},
                "tax_totals": [
                    {"tax_code": "06", "tax_name": "ReteRenta", "percent": 3.5, "taxable_amount": 800000, "tax_amount": 28000}
                ]
            }
        ],
        "tax_totals": [
            {"tax_code": "06", "tax_name": "ReteRenta", "percent": 3.5, "taxable_amount": 800000, "tax_amount": 28000}
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 800000,
            "tax_exclusive_amount": 0,
            "tax_inclusive_amount": 800000,
            "payable_amount": 800000
        },
        "payment_form": {"id": "1", "method": "10"}
    })
}

/// Type 5: price adjustment of a support document.
pub fn support_adjustment() -> Value {
    json!({
        "id_tipo_documento": 5,
        "customer": natural_person(),
        "id_documento_referencia": REFERENCE_ID,
        "id_concepto_nota": "3",
        "credit_note_lines": [
            {
                "description": "Ajuste de precio: servicio de transporte",
                "credited_quantity": 1,
                "price_amount": 100000,
                "line_extension_amount": 100000,
                "unit_measure": {"code": "E48"}
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 100000,
            "tax_exclusive_amount": 0,
            "tax_inclusive_amount": 100000,
            "payable_amount": 100000
        }
    })
}

fn export_body(id_tipo_documento: u8) -> Value {
    json!({
        "id_tipo_documento": id_tipo_documento,
        "customer": foreign_customer(),
        "id_tipo_moneda": 840,
        "exchange_rate": {
            "source_currency": "USD",
            "target_currency": "COP",
            "calculation_rate": 4100.25,
            "date": "2025-03-14"
        },
        "delivery": {"delivery_terms": "FOB"},
        "invoice_lines": [
            {
                "description": "Café especial de exportación",
                "invoiced_quantity": 100,
                "price_amount": 12.5,
                "line_extension_amount": 1250,
                "unit_measure": {"code": "KGM"},
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 0, "taxable_amount": 1250, "tax_amount": 0}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 1250,
            "tax_exclusive_amount": 1250,
            "tax_inclusive_amount": 1250,
            "payable_amount": 1250
        },
        "payment_form": {"id": "1", "method": "47"}
    })
}

/// Type 6: export in USD, FOB.
pub fn export_invoice() -> Value {
    export_body(6)
}

/// The export as the spec's example sends it: type 2 with
/// `id_tipo_operacion` `10` (and `invoice_lines`).
pub fn export_invoice_as_type_2() -> Value {
    let mut v = export_body(2);
    if let Some(fields) = v.as_object_mut() {
        fields.insert("id_tipo_operacion".into(), json!("10"));
    }
    v
}

/// Type 7: contingency T03, transcribing paper invoice `TAL-0042`.
pub fn contingency_t03() -> Value {
    json!({
        "id_tipo_documento": 7,
        "customer": company_customer(),
        "referencia_contingencia": {"numero": "TAL-0042", "fecha": "2025-03-10"},
        "invoice_lines": [
            {
                "description": "Mantenimiento preventivo",
                "invoiced_quantity": 1,
                "price_amount": 250000,
                "line_extension_amount": 250000,
                "unit_measure": {"code": "E48"},
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 250000, "tax_amount": 47500}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 250000,
            "tax_exclusive_amount": 250000,
            "tax_inclusive_amount": 297500,
            "payable_amount": 297500
        }
    })
}

/// Type 8: contingency T04.
pub fn contingency_t04() -> Value {
    json!({
        "id_tipo_documento": 8,
        "customer": company_customer(),
        "invoice_lines": [
            {
                "description": "Suministro de repuestos",
                "invoiced_quantity": 4,
                "price_amount": 12500.50,
                "line_extension_amount": 50002,
                "unit_measure": {"code": "94"},
                "code": "REP-77",
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 19, "taxable_amount": 50002, "tax_amount": 9500.38}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 50002,
            "tax_exclusive_amount": 50002,
            "tax_inclusive_amount": 59502.38,
            "payable_amount": 59502.38
        }
    })
}

/// Type 9: POS receipt to the final consumer, INC 8 %, at register 3.
pub fn pos() -> Value {
    json!({
        "id_tipo_documento": 9,
        "customer": final_consumer(),
        "id_caja": "3",
        "id_cajero": "17",
        "invoice_lines": [
            {
                "description": "Café americano",
                "invoiced_quantity": 2,
                "price_amount": 4500,
                "line_extension_amount": 9000,
                "tax_totals": [
                    {"tax_code": "04", "tax_name": "INC", "percent": 8, "taxable_amount": 9000, "tax_amount": 720}
                ]
            },
            {
                "description": "Croissant",
                "invoiced_quantity": 1,
                "price_amount": 6000,
                "line_extension_amount": 6000,
                "tax_totals": [
                    {"tax_code": "04", "tax_name": "INC", "percent": 8, "taxable_amount": 6000, "tax_amount": 480}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 15000,
            "tax_exclusive_amount": 15000,
            "tax_inclusive_amount": 16200,
            "payable_amount": 16200
        },
        "payment_form": {"id": "1", "method": "10"}
    })
}

/// Type 10: POS adjustment returning the croissant.
pub fn pos_adjustment() -> Value {
    json!({
        "id_tipo_documento": 10,
        "customer": final_consumer(),
        "id_documento_referencia": REFERENCE_ID,
        "id_concepto_nota": "1",
        "credit_note_lines": [
            {
                "description": "Devolución: croissant",
                "credited_quantity": 1,
                "price_amount": 6000,
                "line_extension_amount": 6000,
                "tax_totals": [
                    {"tax_code": "04", "tax_name": "INC", "percent": 8, "taxable_amount": 6000, "tax_amount": 480}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 6000,
            "tax_exclusive_amount": 6000,
            "tax_inclusive_amount": 6480,
            "payable_amount": 6480
        }
    })
}

/// Type 1 in the health sector (`id_tipo_operacion` `11`): a consultation
/// billed per event to a health insurer under UPC contributory coverage.
pub fn health_invoice() -> Value {
    json!({
        "id_tipo_documento": 1,
        "id_tipo_operacion": "11",
        "customer": company_customer(),
        "salud": {
            "codigo_prestador": "110010123401",
            "modalidad_pago": "04",
            "cobertura": "16",
            "numero_contrato": "CT-2025-118",
            "fecha_inicio": "2025-03-01",
            "fecha_fin": "2025-03-31"
        },
        "invoice_lines": [
            {
                "description": "Consulta de medicina general",
                "invoiced_quantity": 1,
                "price_amount": 65000,
                "line_extension_amount": 65000,
                "unit_measure": {"code": "94"},
                "code": "890201",
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 0, "taxable_amount": 65000, "tax_amount": 0}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 65000,
            "tax_exclusive_amount": 65000,
            "tax_inclusive_amount": 65000,
            "payable_amount": 65000
        }
    })
}

/// Type 1 for cargo transport (`id_tipo_operacion` `12`): one consignment,
/// 12.5 t, VAT-exempt freight with ReteFuente 1 %.
pub fn transport_invoice() -> Value {
    json!({
        "id_tipo_documento": 1,
        "id_tipo_operacion": "12",
        "customer": company_customer(),
        "invoice_lines": [
            {
                "description": "Flete Bogotá - Medellín",
                "invoiced_quantity": 1,
                "price_amount": 3200000,
                "line_extension_amount": 3200000,
                "unit_measure": {"code": "94"},
                "transporte": {
                    "radicado_rndc": "93781230",
                    "numero_remesa": "RM-5521",
                    "cantidad": 12500,
                    "unidad": "KGM"
                },
                "tax_totals": [
                    {"tax_code": "01", "tax_name": "IVA", "percent": 0, "taxable_amount": 3200000, "tax_amount": 0},
                    {"tax_code": "06", "tax_name": "ReteFuente", "percent": 1, "taxable_amount": 3200000, "tax_amount": 32000}
                ]
            }
        ],
        "legal_monetary_totals": {
            "line_extension_amount": 3200000,
            "tax_exclusive_amount": 3200000,
            "tax_inclusive_amount": 3200000,
            "payable_amount": 3200000
        }
    })
}

/// The example of a type code 1–10 (type 2 is the credit note).
pub fn for_type(id_tipo_documento: u8) -> Option<Value> {
    Some(match id_tipo_documento {
        1 => invoice(),
        2 => credit_note(),
        3 => debit_note(),
        4 => support_document(),
        5 => support_adjustment(),
        6 => export_invoice(),
        7 => contingency_t03(),
        8 => contingency_t04(),
        9 => pos(),
        10 => pos_adjustment(),
        _ => return None,
    })
}

/// Every example with a name: the ten types and the export as type 2.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        ("invoice", invoice()),
        ("credit_note", credit_note()),
        ("debit_note", debit_note()),
        ("support_document", support_document()),
        ("support_adjustment", support_adjustment()),
        ("export_invoice", export_invoice()),
        ("export_invoice_as_type_2", export_invoice_as_type_2()),
        ("contingency_t03", contingency_t03()),
        ("contingency_t04", contingency_t04()),
        ("pos", pos()),
        ("pos_adjustment", pos_adjustment()),
        ("health_invoice", health_invoice()),
        ("transport_invoice", transport_invoice()),
    ]
}

/// The body with `id_documento_referencia` set to `id` (notes only; other
/// bodies are returned unchanged).
pub fn with_reference(mut body: Value, id: u64) -> Value {
    if let Some(reference) = body.get_mut("id_documento_referencia") {
        *reference = json!(id);
    }
    body
}
