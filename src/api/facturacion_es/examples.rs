//! Valid Spanish-named bodies, one per route and sector: the OpenAPI
//! document's examples and the integration tests' starting points. Notes
//! name document [`REFERENCE_ID`]; tests put the real original in.

use serde_json::{json, Value};

/// `documento_referencia` of the note examples.
pub const REFERENCE_ID: u64 = 1;

/// A company customer by NIT, with the aliases a caller may use.
pub fn cliente() -> Value {
    json!({
        "razon_social": "Cliente Ejemplo S.A.S.",
        "nit": "800197268",
        "correo": "cliente@example.test",
        "tipo_documento": "NIT",
        "tipo_organizacion": 1,
        "direccion": "Calle 100 # 10-20",
        "telefono": "6015550101",
        "pais": "CO",
        "municipio": "11001"
    })
}

/// A natural person (support-document vendor, health patient's payer).
pub fn persona() -> Value {
    json!({
        "nombre": "Pedro Pérez",
        "cedula": "1020304050",
        "correo_electronico": "pedro.perez@example.test",
        "tipo_documento": 13,
        "tipo_organizacion": 2,
        "municipio": "05001"
    })
}

/// A sales invoice: VAT 19 % and VAT 5 % + INC 8 % on one line, withholdings.
pub fn factura() -> Value {
    json!({
        "cliente": cliente(),
        "lineas": [
            {"descripcion": "Servicio de consultoría", "cantidad": 2, "precio": 150000, "iva": 19,
             "retefuente": 4, "reteiva": 15, "codigo": "SRV-01", "unidad_medida": "E48"},
            {"producto": "Almuerzo ejecutivo", "cantidad": 3, "precio_unitario": 24.90, "iva": 5, "inc": 8}
        ],
        "forma_pago": "credito",
        "metodo_pago": "transferencia",
        "dias_credito": 30,
        "observaciones": "Gracias por su compra",
        "transmitir": true
    })
}

/// A credit note returning part of an invoice.
pub fn nota_credito() -> Value {
    json!({
        "documento_referencia": REFERENCE_ID,
        "concepto_nota": "1",
        "cliente": cliente(),
        "lineas": [{"descripcion": "Servicio de consultoría (devolución parcial)", "cantidad": 1, "precio": 150000, "iva": 19}]
    })
}

/// A debit note: interest on an invoice.
pub fn nota_debito() -> Value {
    json!({
        "documento_referencia": REFERENCE_ID,
        "concepto_nota": "1",
        "cliente": cliente(),
        "lineas": [{"descripcion": "Intereses de mora", "cantidad": 1, "precio": 25000}]
    })
}

/// A support document: a purchase from a person not obliged to invoice.
pub fn documento_soporte() -> Value {
    json!({
        "proveedor": persona(),
        "items": [{"nombre_producto": "Servicio de transporte local", "cantidad": 1, "valor_unitario": 800000,
                   "retefuente": 4, "reteica": 0.966, "unidad_medida": "E48"}],
        "forma_pago": "contado",
        "metodo_pago": "efectivo"
    })
}

/// A support-document adjustment note.
pub fn nota_ajuste_ds() -> Value {
    json!({
        "documento_referencia": REFERENCE_ID,
        "concepto_nota": "3",
        "proveedor": persona(),
        "lineas": [{"descripcion": "Ajuste de precio", "cantidad": 1, "precio": 50000}]
    })
}

/// A POS receipt to the final consumer.
pub fn pos() -> Value {
    json!({
        "lineas": [{"descripcion": "Café americano", "cantidad": 2, "precio": 6000, "iva": 19},
                   {"descripcion": "Croissant", "cantidad": 1, "precio": 3000, "inc": 8}],
        "id_caja": "3",
        "id_cajero": "17",
        "metodo_pago": "tarjeta_debito"
    })
}

/// An export invoice in US dollars.
pub fn exportacion() -> Value {
    json!({
        "cliente": {
            "razon_social": "Global Imports LLC",
            "numero_identificacion": "123456789",
            "email": "buyer@globalimports.example",
            "tipo_documento": "NIT_EXTRANJERO",
            "pais": "US",
            "municipio": "Miami",
            "direccion": "500 Main Street"
        },
        "lineas": [{"descripcion": "Café verde de exportación", "cantidad": 100, "precio": 12.35, "unidad_medida": "KGM"}],
        "moneda": "USD",
        "tasa_cambio": {"moneda_origen": "USD", "moneda_destino": "COP", "tasa": 4150.25, "fecha": "2025-03-10"},
        "incoterms": "FOB"
    })
}

/// A health-sector invoice (`tipo_operacion` 11) with patients and copay.
pub fn factura_salud() -> Value {
    json!({
        "tipo_operacion": "11",
        "cliente": cliente(),
        "salud": {"codigo_prestador": "110010123401", "modalidad_pago": "04", "cobertura": "16",
                  "numero_contrato": "CT-2025-001"},
        "copago_cuota_moderadora": 4500,
        "lineas": [
            {"descripcion": "Consulta de medicina general", "codigo": "890201", "cantidad": 1, "precio": 45000,
             "paciente": {"tipo_documento": "CC", "numero_documento": "52123456", "primer_nombre": "Ana", "primer_apellido": "Gómez"}},
            {"descripcion": "Hemograma", "codigo": "902210", "cantidad": 1, "precio": 18000,
             "paciente": {"tipo_documento": "TI", "numero_documento": "1012345678", "primer_nombre": "Luis", "primer_apellido": "Gómez"}}
        ]
    })
}

/// A cargo-transport invoice (`tipo_operacion` 12): VAT 0, ReteFuente 1.
pub fn factura_transporte() -> Value {
    json!({
        "tipo_operacion": "12",
        "cliente": cliente(),
        "transporte": {"remesa_numero": "RM-45871", "manifiesto_numero": "MF-99812", "vehiculo_placa": "TKL123",
                       "origen": "11001", "destino": "76001"},
        "lineas": [{"descripcion": "Flete Bogotá - Cali", "cantidad": 1, "precio": 3200000, "iva": 0, "retefuente": 1,
                    "unidad_medida": "KGM"}]
    })
}

/// Fuel lines: gallons and litres with the fuel taxes by name.
pub fn factura_combustibles() -> Value {
    json!({
        "cliente": cliente(),
        "lineas": [
            {"descripcion": "ACPM", "cantidad": 10, "precio": 10500, "unidad_medida": "GLL",
             "impuestos": [{"tipo": "combustibles", "valor_unitario": 1210.5},
                           {"tipo": "sobretasa_combustibles", "valor_unitario": 850}]},
            {"descripcion": "Gasolina corriente", "cantidad": 20, "precio": 2950, "unidad_medida": "LTR",
             "impuestos": [{"tipo": "advalorem", "porcentaje": 2}, {"tipo": "iva", "porcentaje": 19}]}
        ]
    })
}

/// The generic route with `tipo`.
pub fn generica() -> Value {
    let mut body = factura();
    if let Some(fields) = body.as_object_mut() {
        fields.insert("tipo".into(), json!("fe"));
    }
    body
}

/// Every example, by name: (name, summary, route, body).
pub fn all() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    vec![
        (
            "generica",
            "Factura por la ruta genérica con tipo",
            "/v1/api/facturacion-es/",
            generica(),
        ),
        (
            "factura",
            "Factura: IVA, IVA + INC en una línea, retenciones, crédito",
            "/v1/api/facturacion-es/factura",
            factura(),
        ),
        (
            "salud",
            "Sector salud: pacientes y copago",
            "/v1/api/facturacion-es/factura",
            factura_salud(),
        ),
        (
            "transporte",
            "Transporte de carga",
            "/v1/api/facturacion-es/factura",
            factura_transporte(),
        ),
        (
            "combustibles",
            "Combustibles: GLL/LTR e impuestos 24, 25, 26",
            "/v1/api/facturacion-es/factura",
            factura_combustibles(),
        ),
        (
            "nota_credito",
            "Nota crédito: devolución parcial",
            "/v1/api/facturacion-es/nota-credito",
            nota_credito(),
        ),
        (
            "nota_debito",
            "Nota débito: intereses",
            "/v1/api/facturacion-es/nota-debito",
            nota_debito(),
        ),
        (
            "documento_soporte",
            "Documento soporte con retenciones",
            "/v1/api/facturacion-es/documento-soporte",
            documento_soporte(),
        ),
        (
            "nota_ajuste_ds",
            "Nota de ajuste al documento soporte",
            "/v1/api/facturacion-es/nota-ajuste-ds",
            nota_ajuste_ds(),
        ),
        (
            "pos",
            "Documento POS al consumidor final",
            "/v1/api/facturacion-es/pos",
            pos(),
        ),
        (
            "exportacion",
            "Factura de exportación en USD",
            "/v1/api/facturacion-es/exportacion",
            exportacion(),
        ),
    ]
}
