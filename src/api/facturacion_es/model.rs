//! The Spanish-named body (spec 2.9) read into the unified request the
//! shared mapping translates (`FacturacionRequest`), plus what only this API
//! has (health users and copay, the transport's vehicle and route, declared
//! `totales` and `impuestos`), and the caller's spelling of every field.
//!
//! Decisions where the spec is silent:
//! - `tipo` (generic route) takes the long and short names of spec 4.2 and
//!   `pos`; on a typed route a `tipo` naming another document is a 422.
//!   A top-level `tipo_documento` `02` (or `2`) makes an invoice an export.
//! - `cantidad` defaults to 1. Shortcuts are percentages; `impuestos[]`
//!   items take `porcentaje` or `valor_unitario` (a fixed amount per unit,
//!   fuels and bags); their `base` and `valor`, like top-level `impuestos`
//!   and `totales`, are declared values checked against ours (1 peso).
//! - Withholdings are numbered as the spec's callers send them (`05`
//!   ReteICA, `06` ReteIVA, `07` ReteFuente) and written as the authority's
//!   (07, 05, 06), decisions.md §5. `advalorem` is the third fuel tax, 26.
//! - `forma_pago`: `contado`/`1`/`10` cash, `credito`/`2` credit (with
//!   `fecha_vencimiento`, or `dias_credito` counted from today).
//!   `metodo_pago` by name (`efectivo` 10, `cheque` 20, `consignacion` 42,
//!   `transferencia` 47, `tarjeta_credito` 48, `tarjeta_debito` 49, ...) or
//!   by the authority's code.
//! - `cliente.tipo_documento` by code or name (`NIT`, `CC`, `CE`,
//!   `PASAPORTE`, ...); without it, `nit` means NIT and `cedula` CC. A NIT
//!   may carry its check digit (`900123456-7`, dots allowed): it must be the
//!   computed one; it is computed anyway.
//! - `concepto_nota` defaults to `1` (credit note, support adjustment) and
//!   `4` (debit note, "Otros").
//! - `transporte` applies to every line: `manifiesto_numero` is the filing
//!   number in the national cargo registry (item property 01),
//!   `remesa_numero` the consignment (02); plate, origin and destination go
//!   to a note of the document.
//! - Health invoices (`tipo_operacion` 11) need `codigo` and `paciente` on
//!   each line; the patients are the annex's users, `copago_cuota_moderadora`
//!   its `COPAGO`.
//! - Support documents take `proveedor` as another name of `cliente`; a
//!   POS receipt without `cliente` is for the final consumer.

use chrono::{Days, NaiveDate};
use emisor_store::Environment;
use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::names::Names;
use super::reader::{objects, Obj, Problems, TypeResult};
use crate::api::invoice_request::customer::{Code, CustomerRequest, Municipality};
use crate::api::invoice_request::mapping::codes::department_name;
use crate::api::invoice_request::request::{
    Delivery, DocumentLine, ExchangeRateRequest, FacturacionRequest, HealthRequest, PaymentForm,
    TaxTotal, TransportRequest, UnitMeasure,
};
use crate::engine::codes::nit_check_digit;
use crate::engine::model::{DocumentKind, HealthUser};
use crate::engine::ubl::sector::HEALTH_ID_TYPES;
use crate::http::error::ApiError;

/// The eight routes of spec 4.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Generic,
    Factura,
    NotaCredito,
    NotaDebito,
    DocumentoSoporte,
    NotaAjusteDs,
    Pos,
    Exportacion,
}

impl Route {
    pub const ALL: [Route; 8] = [
        Route::Generic,
        Route::Factura,
        Route::NotaCredito,
        Route::NotaDebito,
        Route::DocumentoSoporte,
        Route::NotaAjusteDs,
        Route::Pos,
        Route::Exportacion,
    ];

    /// As stored with the request.
    pub fn tag(self) -> &'static str {
        match self {
            Route::Generic => "",
            Route::Factura => "factura",
            Route::NotaCredito => "nota-credito",
            Route::NotaDebito => "nota-debito",
            Route::DocumentoSoporte => "documento-soporte",
            Route::NotaAjusteDs => "nota-ajuste-ds",
            Route::Pos => "pos",
            Route::Exportacion => "exportacion",
        }
    }

    pub fn from_tag(tag: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.tag() == tag)
    }

    fn kind(self) -> Option<DocumentKind> {
        match self {
            Route::Generic => None,
            Route::Factura => Some(DocumentKind::Invoice),
            Route::NotaCredito => Some(DocumentKind::CreditNote),
            Route::NotaDebito => Some(DocumentKind::DebitNote),
            Route::DocumentoSoporte => Some(DocumentKind::SupportDocument),
            Route::NotaAjusteDs => Some(DocumentKind::SupportAdjustment),
            Route::Pos => Some(DocumentKind::Pos),
            Route::Exportacion => Some(DocumentKind::ExportInvoice),
        }
    }
}

/// `tipo` values (spec 4.2).
fn kind_of_tipo(tipo: &str) -> Option<DocumentKind> {
    Some(match tipo.trim().to_ascii_lowercase().as_str() {
        "factura" | "fe" => DocumentKind::Invoice,
        "nota_credito" | "nc" => DocumentKind::CreditNote,
        "nota_debito" | "nd" => DocumentKind::DebitNote,
        "documento_soporte" | "ds" => DocumentKind::SupportDocument,
        "nota_ajuste_ds" | "na" => DocumentKind::SupportAdjustment,
        "exportacion" | "fx" => DocumentKind::ExportInvoice,
        "pos" => DocumentKind::Pos,
        _ => return None,
    })
}

const TIPOS: &str = "factura|fe, nota_credito|nc, nota_debito|nd, documento_soporte|ds, nota_ajuste_ds|na, exportacion|fx, pos";

/// A tax or withholding the caller declared an amount for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredTax {
    /// The caller's path of the item (`impuestos[1]`, `lineas[0].impuestos[2]`).
    pub path: String,
    /// The authority's code.
    pub code: String,
    pub percent: Option<Decimal>,
    pub base: Option<Decimal>,
    pub amount: Option<Decimal>,
    /// Lines only: the line, and the tax's place among the line's taxes or
    /// withholdings (as the engine keeps them).
    pub line: Option<(usize, bool, usize)>,
}

/// `totales` (decisions.md §5: the answer's names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredTotals {
    pub subtotal: Option<Decimal>,
    pub total_impuestos: Option<Decimal>,
    pub total_retenciones: Option<Decimal>,
    pub total: Option<Decimal>,
}

/// What only the Spanish API carries, applied to the mapped document.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub users: Vec<HealthUser>,
    pub copay: Option<Decimal>,
    /// The transport's vehicle and route, as a note.
    pub transport_note: Option<String>,
    pub totals: DeclaredTotals,
    pub taxes: Vec<DeclaredTax>,
}

/// A body read: the unified request, our extras, the caller's spelling.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub kind: DocumentKind,
    pub request: FacturacionRequest,
    pub extras: Extras,
    pub names: Names,
    /// `cufe_factura_referencia`: the original named by its code.
    pub original_code: Option<String>,
}

fn unified_array(kind: DocumentKind) -> (&'static str, &'static str) {
    match kind {
        DocumentKind::CreditNote
        | DocumentKind::SupportAdjustment
        | DocumentKind::PosAdjustment => ("credit_note_lines", "credited_quantity"),
        DocumentKind::DebitNote => ("debit_note_lines", "debited_quantity"),
        _ => ("invoice_lines", "invoiced_quantity"),
    }
}

/// Reads `body` sent to `route`; `environment` is the key's (absent when a
/// stored request is read again).
pub fn read(
    body: &Value,
    route: Route,
    environment: Option<Environment>,
) -> Result<Parsed, ApiError> {
    let top = Obj::new(body, "")?;
    let mut p = Problems::default();
    let mut names = Names::default();
    let mut extras = Extras::default();

    // The document type.
    let tipo = top.code(&["tipo"], &mut p)?;
    let from_tipo = match &tipo {
        Some((_, t)) => match kind_of_tipo(t) {
            Some(k) => Some(k),
            None => {
                p.push("tipo", format!("debe ser uno de: {TIPOS}"));
                None
            }
        },
        None => None,
    };
    let mut kind = match (route.kind(), from_tipo) {
        (None, Some(k)) => k,
        (None, None) => {
            if tipo.is_none() {
                p.push(
                    "tipo",
                    format!("es obligatorio en /facturacion-es/: {TIPOS}"),
                );
            }
            DocumentKind::Invoice
        }
        (Some(r), Some(k))
            if r != k && !(r == DocumentKind::Invoice && k == DocumentKind::ExportInvoice) =>
        {
            p.push(
                "tipo",
                format!("no corresponde a la ruta /facturacion-es/{}", route.tag()),
            );
            r
        }
        (Some(_), Some(k)) => k,
        (Some(r), None) => r,
    };
    names.set("id_tipo_documento", "tipo");
    if let Some((name, t)) = top.code(&["tipo_documento"], &mut p)? {
        match t.as_str() {
            "02" | "2" if matches!(kind, DocumentKind::Invoice | DocumentKind::ExportInvoice) => {
                kind = DocumentKind::ExportInvoice
            }
            "01" | "1" if kind == DocumentKind::Invoice => {}
            _ => p.push(
                name,
                "en el cuerpo solo marca una factura: `01` nacional o `02` exportación",
            ),
        }
    }

    // Flags.
    let transmit = top.boolean(&["transmitir", "enviar_tax"], &mut p)?;
    if let Some((name, _)) = transmit {
        names.set("transmit", name);
    }
    let asynchronous = top.boolean(&["asincrono"], &mut p)?.map(|(_, b)| b);
    if kind == DocumentKind::Pos && asynchronous == Some(true) {
        p.push(
            "asincrono",
            "un documento POS se emite siempre de forma síncrona; envíe asincrono false o no lo envíe",
        );
    }
    if let Some((name, a)) = top.code(&["ambiente"], &mut p)? {
        let wanted = match a.as_str() {
            "1" => Some(Environment::Live),
            "2" => Some(Environment::Test),
            _ => {
                p.push(name, "debe ser `1` (producción) o `2` (pruebas)");
                None
            }
        };
        if let (Some(w), Some(env)) = (wanted, environment) {
            if w != env {
                p.push(
                    name,
                    format!(
                        "es {a} pero la clave de API es de {}: el ambiente lo decide la clave",
                        if env == Environment::Live {
                            "producción (1)"
                        } else {
                            "pruebas (2)"
                        }
                    ),
                );
            }
        }
    }
    let reference = top.code(&["referencia", "referencia_externa", "id_unico"], &mut p)?;
    if let Some((name, _)) = &reference {
        names.set("referencia_externa", *name);
    }
    let notes = top.text(&["observaciones", "notas"], &mut p)?;
    if let Some((name, _)) = notes {
        names.set("notes", name);
    }

    // The customer (the vendor of a support document).
    let support = matches!(
        kind,
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment
    );
    let customer_names: &[&'static str] = if support {
        &["cliente", "proveedor"]
    } else {
        &["cliente"]
    };
    let customer = match top.object(customer_names, &mut p)? {
        Some((name, map)) => {
            names.set("customer", name);
            read_customer(map, name, &mut names, &mut p)?
        }
        None if kind == DocumentKind::Pos => final_consumer(),
        None => {
            p.push(customer_names[0], "es obligatorio");
            empty_customer()
        }
    };

    // Operation and sectors.
    let operation = top.code(&["tipo_operacion"], &mut p)?;
    if operation.is_some() {
        names.set("id_tipo_operacion", "tipo_operacion");
    }
    let op = operation.as_ref().map(|(_, o)| o.as_str());
    let health = op == Some("11") && !support;
    let transport_op = op == Some("12") && !support;
    let salud = match top.object(&["salud"], &mut p)? {
        Some((_, m)) => Some(read_health(m, &mut p)?),
        None => None,
    };
    if let Some((name, c)) = top.decimal(&["copago_cuota_moderadora"], &mut p)? {
        if !health {
            p.push(
                name,
                "solo para un documento del sector salud (tipo_operacion 11)",
            );
        } else if c.is_sign_negative() && !c.is_zero() {
            p.push(name, "no puede ser negativo");
        } else {
            names.set("salud.copago", name);
            extras.copay = Some(c);
        }
    }
    let transport = match top.object(&["transporte"], &mut p)? {
        Some((_, m)) if transport_op => Some(read_transport(m, &mut extras, &mut p)?),
        Some(_) => {
            p.push(
                "transporte",
                "solo para una factura de transporte de carga (tipo_operacion 12)",
            );
            None
        }
        None => {
            if transport_op {
                p.push(
                    "transporte",
                    "es obligatorio en una factura de transporte de carga (tipo_operacion 12): remesa_numero y manifiesto_numero",
                );
            }
            None
        }
    };

    // Lines.
    let (array, quantity_name) = unified_array(kind);
    let lines = match top.array(&["lineas", "productos", "items"], &mut p)? {
        Some((name, items)) => {
            names.set(array, name);
            let maps = objects(name, items)?;
            if maps.is_empty() {
                p.push(name, "debe tener al menos una línea");
            }
            let mut out = Vec::with_capacity(maps.len());
            for (i, m) in maps.into_iter().enumerate() {
                let ctx = LineContext {
                    array,
                    quantity_name,
                    spanish: name,
                    index: i,
                    health: health && kind == DocumentKind::Invoice,
                    health_allowed: health,
                };
                let mut line = read_line(m, &ctx, &mut names, &mut extras, &mut p)?;
                if let Some(t) = &transport {
                    line.transporte = Some(t.clone());
                    let u = format!("{array}[{i}].transporte");
                    names.set(format!("{u}.radicado_rndc"), "transporte.manifiesto_numero");
                    names.set(format!("{u}.numero_remesa"), "transporte.remesa_numero");
                    names.set(u, "transporte");
                }
                out.push(line);
            }
            out
        }
        None => {
            p.push(
                "lineas",
                "es obligatorio: al menos una línea (alias productos, items)",
            );
            Vec::new()
        }
    };

    // Global declared taxes and totals.
    if let Some((name, items)) = top.array(&["impuestos"], &mut p)? {
        for (j, m) in objects(name, items)?.into_iter().enumerate() {
            let path = format!("{name}[{j}]");
            let item = Obj {
                map: m,
                path: &path,
            };
            if let Some(t) = read_tax_item(&item, &mut p)? {
                if t.rate.is_none() && t.base.is_none() && t.amount.is_none() {
                    p.push(&path, "indique porcentaje, base o valor");
                }
                extras.taxes.push(DeclaredTax {
                    path: path.clone(),
                    code: t.code,
                    percent: match t.rate {
                        Some(Rate::Percent(pc)) => Some(pc),
                        _ => None,
                    },
                    base: t.base,
                    amount: t.amount,
                    line: None,
                });
            }
        }
    }
    if let Some((name, m)) = top.object(&["totales"], &mut p)? {
        let t = Obj { map: m, path: name };
        let get = |field: &'static str, p: &mut Problems| -> TypeResult<Option<Decimal>> {
            Ok(t.decimal(&[field], p)?.map(|(_, d)| d))
        };
        extras.totals = DeclaredTotals {
            subtotal: get("subtotal", &mut p)?,
            total_impuestos: get("total_impuestos", &mut p)?,
            total_retenciones: get("total_retenciones", &mut p)?,
            total: get("total", &mut p)?,
        };
    }

    // Notes: the original and the concept.
    let is_note = matches!(
        kind,
        DocumentKind::CreditNote | DocumentKind::DebitNote | DocumentKind::SupportAdjustment
    );
    let original_id = top.integer(&["documento_referencia"], &mut p)?;
    let original_code = top.text(&["cufe_factura_referencia"], &mut p)?;
    let concept = top.code(&["concepto_nota"], &mut p)?;
    let mut id_documento_referencia = None;
    let mut original = None;
    if is_note {
        names.set("id_concepto_nota", "concepto_nota");
        match (original_id, original_code) {
            (None, None) => p.push(
                "documento_referencia",
                "es obligatorio en una nota: el id del documento original (o cufe_factura_referencia)",
            ),
            (Some((_, id)), code) => {
                names.set("id_documento_referencia", "documento_referencia");
                id_documento_referencia = Some(id);
                original = code.map(|(_, c)| c.trim().to_string());
            }
            (None, Some((_, c))) => {
                names.set("id_documento_referencia", "cufe_factura_referencia");
                let c = c.trim();
                if c.len() != 96 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
                    p.push(
                        "cufe_factura_referencia",
                        "debe ser el CUFE de la factura: 96 caracteres hexadecimales",
                    );
                } else {
                    original = Some(c.to_ascii_lowercase());
                }
            }
        }
    } else {
        for (given, name) in [
            (original_id.is_some(), "documento_referencia"),
            (original_code.is_some(), "cufe_factura_referencia"),
            (concept.is_some(), "concepto_nota"),
        ] {
            if given {
                p.push(name, "solo para notas crédito, débito y de ajuste");
            }
        }
    }
    let concept = is_note.then(|| {
        concept.map(|(_, c)| c).unwrap_or_else(|| {
            if kind == DocumentKind::DebitNote {
                "4"
            } else {
                "1"
            }
            .to_string()
        })
    });

    // Payment.
    let payment_form = read_payment(&top, &mut names, &mut p)?;

    // Currency and delivery.
    let moneda = top.code(&["moneda"], &mut p)?;
    if moneda.is_some() {
        names.set("id_tipo_moneda", "moneda");
    }
    let exchange_rate = read_exchange_rate(&top, &mut names, &mut p)?;
    let incoterms = top.text(&["incoterms"], &mut p)?;
    if incoterms.is_some() {
        names.set("delivery.delivery_terms", "incoterms");
    }

    // POS register and cashier.
    let id_caja = top.code(&["id_caja"], &mut p)?;
    let id_cajero = top.code(&["id_cajero"], &mut p)?;
    if kind != DocumentKind::Pos {
        for (given, name) in [
            (id_caja.is_some(), "id_caja"),
            (id_cajero.is_some(), "id_cajero"),
        ] {
            if given {
                p.push(name, "solo para un documento POS");
            }
        }
    }

    if !p.is_empty() {
        return Err(ApiError::validation_list(crate::issuing::request::cap(p.0)));
    }
    let (mut invoice_lines, mut credit_note_lines, mut debit_note_lines) = (None, None, None);
    match array {
        "credit_note_lines" => credit_note_lines = Some(lines),
        "debit_note_lines" => debit_note_lines = Some(lines),
        _ => invoice_lines = Some(lines),
    }
    let request = FacturacionRequest {
        id_tipo_documento: i64::from(kind.code()),
        transmit: transmit.map(|(_, b)| b),
        r#async: asynchronous,
        customer,
        invoice_lines,
        credit_note_lines,
        debit_note_lines,
        legal_monetary_totals: None,
        tax_totals: None,
        payment_form,
        notes: notes.map(|(_, n)| n.to_string()),
        id_documento_referencia,
        id_concepto_nota: concept,
        referencia_externa: reference.map(|(_, r)| r),
        id_tipo_operacion: operation.map(|(_, o)| o),
        salud,
        referencia_contingencia: None,
        id_caja: id_caja.map(|(_, c)| c),
        id_cajero: id_cajero.map(|(_, c)| c),
        id_tipo_moneda: moneda.map(|(_, m)| m),
        exchange_rate,
        delivery: incoterms.map(|(_, t)| Delivery {
            delivery_terms: Some(t.to_string()),
        }),
    };
    Ok(Parsed {
        kind,
        request,
        extras,
        names,
        original_code: original,
    })
}

/// The customer (or vendor) at `path`.
fn read_customer(
    map: &Map<String, Value>,
    path: &'static str,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<CustomerRequest> {
    let c = Obj { map, path };
    let mut required = |found: Option<(&'static str, String)>,
                        main: &'static str,
                        unified: &str,
                        p: &mut Problems| {
        match found {
            Some((name, v)) => {
                names.set(format!("customer.{unified}"), c.at(name));
                if v.trim().is_empty() {
                    p.push(c.at(name), "es obligatorio");
                }
                v
            }
            None => {
                names.set(format!("customer.{unified}"), c.at(main));
                p.push(c.at(main), "es obligatorio");
                String::new()
            }
        }
    };
    let name = c
        .text(&["nombre", "razon_social"], p)?
        .map(|(n, v)| (n, v.to_string()));
    let name = required(name, "nombre", "name", p);
    let email = c
        .text(&["correo", "correo_electronico", "email"], p)?
        .map(|(n, v)| (n, v.to_string()));
    let email = required(email, "correo", "email", p);
    let number = c.code(&["numero_identificacion", "nit", "cedula"], p)?;
    let used_number_name = number.as_ref().map(|(n, _)| *n);
    let number = required(number, "numero_identificacion", "identification_number", p);

    let id_type = match c.code(&["tipo_documento"], p)? {
        Some((name, t)) => match id_type_code(&t) {
            Some(code) => Some(code.to_string()),
            None => {
                p.push(
                    c.at(name),
                    "tipo de identificación desconocido: use el código (13, 31, 22, 41 ...) o el nombre (CC, NIT, CE, PASAPORTE, TI, RC, TE, DIE, PEP, PPT, NIT_EXTRANJERO, NUIP)",
                );
                None
            }
        },
        None => match used_number_name {
            Some("nit") => Some("31".to_string()),
            Some("cedula") => Some("13".to_string()),
            _ => None,
        },
    };
    names.set(
        "customer.type_document_identification.code",
        c.at("tipo_documento"),
    );

    // A NIT: dots and spaces out, a check digit after a dash checked.
    let mut number = number.trim().to_string();
    if id_type.as_deref() == Some("31") {
        number.retain(|ch| ch != '.' && ch != ' ');
        let field = c.at(used_number_name.unwrap_or("numero_identificacion"));
        let mut given_dv = None;
        if let Some((n, dv)) = number.split_once('-') {
            given_dv = Some((field.clone(), dv.to_string()));
            number = n.to_string();
        }
        if let Some((name, dv)) = c.code(&["dv", "digito_verificacion"], p)? {
            given_dv = Some((c.at(name), dv));
        }
        if let Some((field, dv)) = given_dv {
            match nit_check_digit(&number) {
                Some(computed) if dv.trim() == computed.to_string() => {}
                Some(computed) => p.push(
                    field,
                    format!("el dígito de verificación {dv} no corresponde al NIT {number} (es {computed})"),
                ),
                None => {}
            }
        }
    }

    let organization = match c.code(&["tipo_organizacion"], p)? {
        Some((name, o)) => {
            let code = match o.to_ascii_lowercase().as_str() {
                "1" | "juridica" | "persona_juridica" => Some("1"),
                "2" | "natural" | "persona_natural" => Some("2"),
                _ => None,
            };
            if code.is_none() {
                p.push(
                    c.at(name),
                    "debe ser 1 (persona jurídica) o 2 (persona natural)",
                );
            }
            code.map(|c| Code { code: c.into() })
        }
        None => None,
    };
    names.set("customer.type_organization.code", c.at("tipo_organizacion"));
    let address = c.text(&["direccion"], p)?.map(|(_, v)| v.to_string());
    names.set("customer.address", c.at("direccion"));
    let phone = c.code(&["telefono"], p)?.map(|(_, v)| v);
    names.set("customer.phone", c.at("telefono"));
    let country = c
        .text(&["pais"], p)?
        .map(|(_, v)| v.trim().to_ascii_uppercase());
    names.set("customer.country_code", c.at("pais"));
    let municipality = c.code(&["municipio"], p)?.map(|(_, m)| {
        if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) {
            Municipality {
                code: Some(m),
                name: None,
            }
        } else {
            Municipality {
                code: None,
                name: Some(m),
            }
        }
    });
    names.set("customer.municipality", c.at("municipio"));
    Ok(CustomerRequest {
        identification_number: number,
        name,
        email,
        type_document_identification: id_type.map(|code| Code { code }),
        type_organization: organization,
        address,
        municipality,
        country_code: country,
        phone,
    })
}

/// Identification type by code or name.
fn id_type_code(t: &str) -> Option<&'static str> {
    let t = t.trim().to_ascii_uppercase().replace([' ', '-'], "_");
    Some(match t.as_str() {
        "11" | "RC" | "REGISTRO_CIVIL" => "11",
        "12" | "TI" | "TARJETA_IDENTIDAD" | "TARJETA_DE_IDENTIDAD" => "12",
        "13" | "CC" | "CEDULA" | "CEDULA_CIUDADANIA" | "CÉDULA" => "13",
        "21" | "TE" | "TARJETA_EXTRANJERIA" => "21",
        "22" | "CE" | "CEDULA_EXTRANJERIA" => "22",
        "31" | "NIT" => "31",
        "41" | "PASAPORTE" | "PA" | "PP" => "41",
        "42" | "DIE" | "DOCUMENTO_EXTRANJERO" => "42",
        "47" | "PEP" => "47",
        "48" | "PPT" => "48",
        "50" | "NIT_EXTRANJERO" | "NIT_OTRO_PAIS" => "50",
        "91" | "NUIP" => "91",
        _ => return None,
    })
}

/// The final consumer of a POS receipt without `cliente`; the mapping
/// writes the authority's final consumer in its place.
fn final_consumer() -> CustomerRequest {
    CustomerRequest {
        identification_number: "222222222222".into(),
        name: "Consumidor final".into(),
        email: FINAL_CONSUMER_EMAIL.into(),
        type_document_identification: Some(Code { code: "13".into() }),
        type_organization: Some(Code { code: "2".into() }),
        address: None,
        municipality: None,
        country_code: None,
        phone: None,
    }
}

/// Stands in for the final consumer's missing address while the shared
/// mapping checks the customer; never written (see `mapping`).
pub const FINAL_CONSUMER_EMAIL: &str = "consumidor.final@consumidor-final.invalid";

fn empty_customer() -> CustomerRequest {
    CustomerRequest {
        identification_number: String::new(),
        name: String::new(),
        email: String::new(),
        type_document_identification: None,
        type_organization: None,
        address: None,
        municipality: None,
        country_code: None,
        phone: None,
    }
}

fn read_health(m: &Map<String, Value>, p: &mut Problems) -> TypeResult<HealthRequest> {
    let h = Obj {
        map: m,
        path: "salud",
    };
    Ok(HealthRequest {
        codigo_prestador: h.code(&["codigo_prestador"], p)?.map(|(_, v)| v),
        modalidad_pago: h.code(&["modalidad_pago"], p)?.map(|(_, v)| v),
        cobertura: h.code(&["cobertura"], p)?.map(|(_, v)| v),
        numero_contrato: h.code(&["numero_contrato"], p)?.map(|(_, v)| v),
        numero_poliza: h.code(&["numero_poliza"], p)?.map(|(_, v)| v),
        fecha_inicio: h.date(&["fecha_inicio"], p)?.map(|(_, d)| d),
        fecha_fin: h.date(&["fecha_fin"], p)?.map(|(_, d)| d),
    })
}

fn read_transport(
    m: &Map<String, Value>,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<TransportRequest> {
    let t = Obj {
        map: m,
        path: "transporte",
    };
    let required = |name: &'static str, p: &mut Problems| -> TypeResult<Option<String>> {
        let v = t
            .code(&[name], p)?
            .map(|(_, v)| v)
            .filter(|v| !v.is_empty());
        if v.is_none() {
            p.push(
                t.at(name),
                "es obligatorio en una factura de transporte de carga",
            );
        }
        Ok(v)
    };
    let consignment = required("remesa_numero", p)?;
    let manifest = required("manifiesto_numero", p)?;
    let plate = t.code(&["vehiculo_placa"], p)?.map(|(_, v)| v);
    let place = |name: &'static str, p: &mut Problems| -> TypeResult<Option<String>> {
        let v = t.code(&[name], p)?.map(|(_, v)| v);
        if let Some(code) = &v {
            let ok = code.len() == 5
                && code.bytes().all(|b| b.is_ascii_digit())
                && department_name(&code[..2]).is_some();
            if !ok {
                p.push(
                    t.at(name),
                    "debe ser el código DIVIPOLA de 5 dígitos del municipio (p. ej. 11001)",
                );
            }
        }
        Ok(v)
    };
    let origin = place("origen", p)?;
    let destination = place("destino", p)?;
    let mut parts = Vec::new();
    if let Some(v) = &plate {
        parts.push(format!("vehículo {v}"));
    }
    if let Some(v) = &origin {
        parts.push(format!("origen {v}"));
    }
    if let Some(v) = &destination {
        parts.push(format!("destino {v}"));
    }
    if !parts.is_empty() {
        extras.transport_note = Some(format!("Transporte de carga: {}", parts.join(", ")));
    }
    Ok(TransportRequest {
        radicado_rndc: manifest,
        numero_remesa: consignment,
        valor_flete: None,
        cantidad: None,
        unidad: None,
    })
}

struct LineContext {
    array: &'static str,
    quantity_name: &'static str,
    spanish: &'static str,
    index: usize,
    /// A health invoice: `codigo` and `paciente` required.
    health: bool,
    /// `paciente` accepted.
    health_allowed: bool,
}

/// The tax shortcuts of a line: name, the authority's code, withholding.
const SHORTCUTS: [(&str, &str, bool); 7] = [
    ("iva", "01", false),
    ("inc", "04", false),
    ("ica", "03", false),
    ("bolsas", "22", false),
    ("reteiva", "05", true),
    ("retefuente", "06", true),
    ("reteica", "07", true),
];

fn read_line(
    m: &Map<String, Value>,
    ctx: &LineContext,
    names: &mut Names,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<DocumentLine> {
    let path = format!("{}[{}]", ctx.spanish, ctx.index);
    let l = Obj {
        map: m,
        path: &path,
    };
    let u = format!("{}[{}]", ctx.array, ctx.index);

    let description = match l.text(&["descripcion", "producto", "nombre_producto"], p)? {
        Some((name, d)) => {
            names.set(format!("{u}.description"), l.at(name));
            if d.trim().is_empty() {
                p.push(l.at(name), "es obligatorio");
            }
            d.to_string()
        }
        None => {
            p.push(
                l.at("descripcion"),
                "es obligatorio (alias producto, nombre_producto)",
            );
            String::new()
        }
    };
    let quantity = l
        .decimal(&["cantidad"], p)?
        .map(|(_, q)| q)
        .unwrap_or(Decimal::ONE);
    names.set(format!("{u}.{}", ctx.quantity_name), l.at("cantidad"));
    let price = match l.decimal(&["precio", "precio_unitario", "valor_unitario"], p)? {
        Some((name, v)) => {
            names.set(format!("{u}.price_amount"), l.at(name));
            v
        }
        None => {
            if !p.has(&l.at("precio")) {
                p.push(
                    l.at("precio"),
                    "es obligatorio (alias precio_unitario, valor_unitario)",
                );
            }
            Decimal::ZERO
        }
    };
    names.set(format!("{u}.line_extension_amount"), path.clone());
    let code = l.code(&["codigo", "codigo_producto", "referencia"], p)?;
    match &code {
        Some((name, _)) => names.set(format!("{u}.code"), l.at(name)),
        None if ctx.health => p.push(
            l.at("codigo"),
            "es obligatorio en una factura del sector salud: el código del procedimiento",
        ),
        None => {}
    }
    let unit = l.code(&["unidad_medida"], p)?;
    names.set(format!("{u}.unit_measure"), l.at("unidad_medida"));

    // Taxes: the shortcuts, then `impuestos[]`, in the order the shared
    // mapping keeps them (taxes and withholdings apart).
    let mut taxes = Vec::new();
    let (mut n_taxes, mut n_withholdings) = (0usize, 0usize);
    let mut place = |withholding: bool| {
        let counter = if withholding {
            &mut n_withholdings
        } else {
            &mut n_taxes
        };
        let at = *counter;
        *counter += 1;
        (ctx.index, withholding, at)
    };
    for (name, code, withholding) in SHORTCUTS {
        if let Some((_, percent)) = l.decimal(&[name], p)? {
            let k = taxes.len();
            let field = l.at(name);
            for sub in ["", ".tax_code", ".percent"] {
                names.set(format!("{u}.tax_totals[{k}]{sub}"), field.clone());
            }
            place(withholding);
            taxes.push(TaxTotal {
                tax_code: code.into(),
                tax_name: None,
                percent: Some(percent),
                per_unit_amount: None,
                taxable_amount: None,
                tax_amount: None,
            });
        }
    }
    if let Some((name, items)) = l.array(&["impuestos"], p)? {
        for (j, im) in objects(&l.at(name), items)?.into_iter().enumerate() {
            let ipath = format!("{}[{j}]", l.at(name));
            let item = Obj {
                map: im,
                path: &ipath,
            };
            let Some(t) = read_tax_item(&item, p)? else {
                continue;
            };
            let k = taxes.len();
            names.set(format!("{u}.tax_totals[{k}]"), ipath.clone());
            names.set(
                format!("{u}.tax_totals[{k}].tax_code"),
                format!("{ipath}.tipo"),
            );
            names.set(
                format!("{u}.tax_totals[{k}].percent"),
                format!("{ipath}.porcentaje"),
            );
            names.set(
                format!("{u}.tax_totals[{k}].per_unit_amount"),
                format!("{ipath}.valor_unitario"),
            );
            let (percent, per_unit) = match t.rate {
                Some(Rate::Percent(pc)) => (Some(pc), None),
                Some(Rate::PerUnit(a)) => (None, Some(a)),
                None => {
                    p.push(&ipath, "indique porcentaje o valor_unitario");
                    (None, None)
                }
            };
            let withholding = matches!(t.code.as_str(), "05" | "06" | "07");
            let slot = place(withholding);
            if t.base.is_some() || t.amount.is_some() {
                extras.taxes.push(DeclaredTax {
                    path: ipath.clone(),
                    code: t.code.clone(),
                    percent,
                    base: t.base,
                    amount: t.amount,
                    line: Some(slot),
                });
            }
            taxes.push(TaxTotal {
                tax_code: t.code,
                tax_name: None,
                percent,
                per_unit_amount: per_unit,
                taxable_amount: None,
                tax_amount: None,
            });
        }
    }

    // The patient of a health line.
    match l.object(&["paciente"], p)? {
        Some((name, pm)) if ctx.health_allowed => {
            let ppath = l.at(name);
            let pt = Obj { map: pm, path: &ppath };
            let get = |field: &'static str, p: &mut Problems| -> TypeResult<String> {
                let v = pt.code(&[field], p)?.map(|(_, v)| v).unwrap_or_default();
                if v.is_empty() {
                    p.push(pt.at(field), "es obligatorio");
                } else if v.chars().count() > 60 || v.chars().any(char::is_control) {
                    p.push(pt.at(field), "hasta 60 caracteres, sin caracteres de control");
                }
                Ok(v)
            };
            let id_type = get("tipo_documento", p)?;
            let id_type = health_id_type(&id_type).map(str::to_string).unwrap_or_else(|| {
                if !id_type.is_empty() {
                    let list: Vec<&str> = HEALTH_ID_TYPES.iter().map(|(c, _)| *c).collect();
                    p.push(pt.at("tipo_documento"), format!("debe ser uno de: {}", list.join(", ")));
                }
                id_type
            });
            let user = HealthUser {
                id_type,
                id_number: get("numero_documento", p)?,
                first_name: get("primer_nombre", p)?,
                last_name: get("primer_apellido", p)?,
            };
            if !extras
                .users
                .iter()
                .any(|x| x.id_type == user.id_type && x.id_number == user.id_number)
            {
                extras.users.push(user);
            }
        }
        Some((name, _)) => p.push(l.at(name), "solo para un documento del sector salud (tipo_operacion 11)"),
        None if ctx.health => p.push(
            l.at("paciente"),
            "es obligatorio en una factura del sector salud: tipo_documento, numero_documento, primer_nombre, primer_apellido",
        ),
        None => {}
    }

    Ok(DocumentLine {
        description,
        invoiced_quantity: (ctx.array == "invoice_lines").then_some(quantity),
        credited_quantity: (ctx.array == "credit_note_lines").then_some(quantity),
        debited_quantity: (ctx.array == "debit_note_lines").then_some(quantity),
        line_extension_amount: None,
        price_amount: price,
        unit_measure: unit.map(|(_, code)| UnitMeasure { code }),
        code: code.map(|(_, c)| c),
        tax_totals: (!taxes.is_empty()).then_some(taxes),
        allowance_charges: None,
        transporte: None,
    })
}

/// A patient's identification type: the annex's letters, or the
/// authority's numeric code of the same document.
fn health_id_type(t: &str) -> Option<&'static str> {
    let t = t.trim().to_ascii_uppercase();
    if let Some((c, _)) = HEALTH_ID_TYPES.iter().find(|(c, _)| *c == t) {
        return Some(c);
    }
    Some(match t.as_str() {
        "11" => "RC",
        "12" => "TI",
        "13" => "CC",
        "22" => "CE",
        "41" | "PASAPORTE" => "PA",
        "42" => "DE",
        "47" => "PE",
        "48" => "PT",
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy)]
enum Rate {
    Percent(Decimal),
    PerUnit(Decimal),
}

struct TaxItem {
    code: String,
    rate: Option<Rate>,
    base: Option<Decimal>,
    amount: Option<Decimal>,
}

/// The authority's tax code of an `impuestos[].tipo`.
pub fn tax_code(tipo: &str) -> Option<String> {
    let t = tipo.trim().to_ascii_lowercase();
    Some(
        match t.as_str() {
            "iva" => "01",
            "ic" => "02",
            "ica" => "03",
            "inc" => "04",
            "bolsas" | "inc_bolsas" => "22",
            "combustibles" => "24",
            "sobretasa_combustibles" => "25",
            "advalorem" | "ad_valorem" => "26",
            "reteiva" => "05",
            "retefuente" | "reterenta" => "06",
            "reteica" => "07",
            // The spec's withholding numbers (decisions.md §5).
            "05" | "5" => "07",
            "06" | "6" => "05",
            "07" | "7" => "06",
            _ => {
                let code = if t.len() == 1 {
                    format!("0{t}")
                } else {
                    t.to_ascii_uppercase()
                };
                const CODES: &[&str] = &[
                    "01", "02", "03", "04", "20", "21", "22", "23", "24", "25", "26", "30", "32",
                    "33", "34", "35", "36", "ZZ",
                ];
                return CODES.contains(&code.as_str()).then_some(code);
            }
        }
        .to_string(),
    )
}

fn read_tax_item(item: &Obj<'_>, p: &mut Problems) -> TypeResult<Option<TaxItem>> {
    let code = match item.code(&["tipo"], p)? {
        Some((name, t)) => match tax_code(&t) {
            Some(c) => Some(c),
            None => {
                p.push(
                    item.at(name),
                    "tipo de impuesto desconocido: iva, inc, ica, bolsas, combustibles, sobretasa_combustibles, advalorem, reteiva, retefuente, reteica, o un código (01, 04, 24 ...)",
                );
                None
            }
        },
        None => {
            p.push(item.at("tipo"), "es obligatorio");
            None
        }
    };
    let percent = item.decimal(&["porcentaje"], p)?;
    let per_unit = item.decimal(&["valor_unitario"], p)?;
    let rate = match (percent, per_unit) {
        (Some(_), Some(_)) => {
            p.push(
                item.at("porcentaje"),
                "envíe porcentaje o valor_unitario, no ambos",
            );
            None
        }
        (Some((_, pc)), None) => Some(Rate::Percent(pc)),
        (None, Some((_, a))) => Some(Rate::PerUnit(a)),
        (None, None) => None,
    };
    let base = item.decimal(&["base"], p)?.map(|(_, d)| d);
    let amount = item.decimal(&["valor"], p)?.map(|(_, d)| d);
    Ok(code.map(|code| TaxItem {
        code,
        rate,
        base,
        amount,
    }))
}

/// `forma_pago`, `metodo_pago`, `dias_credito`, `fecha_vencimiento`.
fn read_payment(
    top: &Obj<'_>,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<Option<PaymentForm>> {
    let form = top.code(&["forma_pago"], p)?;
    let method = top.code(&["metodo_pago"], p)?;
    let days = top.integer(&["dias_credito"], p)?;
    let due = top.date(&["fecha_vencimiento"], p)?;
    names.set("payment_form.id", "forma_pago");
    names.set("payment_form.method", "metodo_pago");
    names.set("payment_form.due_date", "fecha_vencimiento");
    names.set("payment_form", "forma_pago");
    if form.is_none() && method.is_none() && days.is_none() && due.is_none() {
        return Ok(None);
    }
    let form = match form.as_ref().map(|(_, f)| f.to_ascii_lowercase()) {
        None => "1".to_string(),
        Some(f) => match f.as_str() {
            "contado" | "1" | "10" => "1".into(),
            "credito" | "crédito" | "2" => "2".into(),
            _ => {
                p.push("forma_pago", "debe ser contado (1) o credito (2)");
                "1".into()
            }
        },
    };
    let method = match method {
        None => "10".to_string(),
        Some((_, m)) => match payment_method(&m) {
            Some(code) => code,
            None => {
                p.push(
                    "metodo_pago",
                    "método de pago desconocido: efectivo, cheque, consignacion, transferencia, tarjeta_credito, tarjeta_debito, o el código (10, 42, 47, 48 ...)",
                );
                "10".into()
            }
        },
    };
    let due_date = if form == "2" {
        match (due, days) {
            (Some((_, d)), _) => Some(d),
            (None, Some((_, n))) => {
                let today = crate::issuing::context::colombia_now().date_naive();
                let due = today.checked_add_days(Days::new(n)).filter(|_| n <= 3650);
                if due.is_none() {
                    p.push("dias_credito", "máximo 3650 días");
                }
                due
            }
            (None, None) => {
                p.push(
                    "fecha_vencimiento",
                    "es obligatorio con forma_pago credito (o dias_credito)",
                );
                None
            }
        }
    } else {
        for (given, name) in [
            (days.is_some(), "dias_credito"),
            (due.is_some(), "fecha_vencimiento"),
        ] {
            if given {
                p.push(name, "solo con forma_pago credito");
            }
        }
        None
    };
    Ok(Some(PaymentForm {
        id: Some(form),
        method: Some(method),
        due_date,
    }))
}

/// A payment means by name, or the authority's code as given.
fn payment_method(m: &str) -> Option<String> {
    let t = m.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    let code = match t.as_str() {
        "efectivo" => "10",
        "cheque" => "20",
        "consignacion" | "consignación" | "deposito" => "42",
        "transferencia" | "transferencia_debito" => "47",
        "transferencia_credito" => "45",
        "tarjeta_credito" | "tarjeta_de_credito" => "48",
        "tarjeta_debito" | "tarjeta_de_debito" => "49",
        "instrumento_no_definido" => "1",
        "acuerdo_mutuo" | "otro" => "ZZZ",
        _ => {
            let ok = !t.is_empty() && t.len() <= 3 && t.bytes().all(|b| b.is_ascii_alphanumeric());
            return ok.then(|| t.to_ascii_uppercase());
        }
    };
    Some(code.to_string())
}

/// `tasa_cambio`: `{moneda_origen, moneda_destino, tasa, fecha}`.
fn read_exchange_rate(
    top: &Obj<'_>,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<Option<ExchangeRateRequest>> {
    names.set("exchange_rate", "tasa_cambio");
    let today = || crate::issuing::context::colombia_now().date_naive();
    let Some((_, m)) = top.object(&["tasa_cambio"], p)? else {
        return Ok(None);
    };
    let x = Obj {
        map: m,
        path: "tasa_cambio",
    };
    names.set("exchange_rate.source_currency", "tasa_cambio.moneda_origen");
    names.set(
        "exchange_rate.target_currency",
        "tasa_cambio.moneda_destino",
    );
    names.set("exchange_rate.calculation_rate", "tasa_cambio.tasa");
    names.set("exchange_rate.date", "tasa_cambio.fecha");
    let source = x
        .text(&["moneda_origen"], p)?
        .map(|(_, v)| v.trim().to_ascii_uppercase());
    let target = x
        .text(&["moneda_destino"], p)?
        .map(|(_, v)| v.trim().to_ascii_uppercase());
    let rate = x.decimal(&["tasa"], p)?.map(|(_, d)| d);
    let date: Option<NaiveDate> = x.date(&["fecha"], p)?.map(|(_, d)| d);
    match rate {
        Some(r) => Ok(Some(ExchangeRateRequest {
            source_currency: source,
            target_currency: target,
            calculation_rate: r,
            date: date.unwrap_or_else(today),
        })),
        None => {
            p.push(
                "tasa_cambio.tasa",
                "es obligatorio: pesos por unidad de la moneda",
            );
            Ok(None)
        }
    }
}
