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
//!
//! The body is read section by section, in the order its problems are
//! reported: `route` (the document type), `flags`, `customer`, `sectors`,
//! `lines` (with `taxes` and the health `paciente`), `declared`, `note`,
//! `payment`, `currency`, and the POS register in `flags`.

mod currency;
mod customer;
mod declared;
mod flags;
mod health;
mod lines;
mod note;
mod payment;
mod route;
mod sectors;
mod taxes;

use emisor_store::Environment;
use rust_decimal::Decimal;
use serde_json::Value;

use super::names::Names;
use super::reader::{Obj, Problems};
use crate::api::invoice_request::request::FacturacionRequest;
use crate::engine::model::{DocumentKind, HealthUser};
use crate::http::error::ApiError;

pub use self::customer::FINAL_CONSUMER_EMAIL;
pub use self::route::Route;

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

    let kind = route::read_kind(&top, route, &mut names, &mut p)?;
    let flags = flags::read_flags(&top, kind, environment, &mut names, &mut p)?;
    let customer = customer::read_party(&top, kind, &mut names, &mut p)?;
    let sectors = sectors::read_sectors(&top, kind, &mut names, &mut extras, &mut p)?;
    let (array, lines) = lines::read_lines(&top, kind, &sectors, &mut names, &mut extras, &mut p)?;
    declared::read_declared(&top, &mut extras, &mut p)?;
    let note = note::read_note(&top, kind, &mut names, &mut p)?;
    let payment_form = payment::read_payment(&top, &mut names, &mut p)?;
    let currency = currency::read_currency(&top, &mut names, &mut p)?;
    let (id_caja, id_cajero) = flags::read_register(&top, kind, &mut p)?;

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
        transmit: flags.transmit,
        r#async: flags.asynchronous,
        customer,
        invoice_lines,
        credit_note_lines,
        debit_note_lines,
        legal_monetary_totals: None,
        tax_totals: None,
        payment_form,
        notes: flags.notes,
        id_documento_referencia: note.id,
        id_concepto_nota: note.concept,
        referencia_externa: flags.reference,
        id_tipo_operacion: sectors.operation,
        salud: sectors.salud,
        referencia_contingencia: None,
        id_caja,
        id_cajero,
        id_tipo_moneda: currency.moneda,
        exchange_rate: currency.exchange_rate,
        delivery: currency.delivery,
    };
    Ok(Parsed {
        kind,
        request,
        extras,
        names,
        original_code: note.original_code,
    })
}
