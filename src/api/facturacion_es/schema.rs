//! The Spanish-named body as the OpenAPI document describes it (spec 2.9),
//! aliases included, and the examples of each route and sector. The body
//! is read by `model`, field by field; these types only document it.

#![allow(dead_code)]

use serde::Deserialize;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::OpenApi;
use utoipa::{Modify, ToSchema};

/// Spanish-named request (spec 2.9). Aliases: `lineas` = `productos` =
/// `items`; `observaciones` = `notas`; `transmitir` = `enviar_tax`;
/// `referencia` = `referencia_externa` = `id_unico`; support documents take
/// `proveedor` for `cliente`. A field under two of its names with different
/// values is a 422 naming both.
#[derive(Deserialize, ToSchema)]
pub struct SpanishRequest {
    /// Generic route only: `factura`|`fe`, `nota_credito`|`nc`,
    /// `nota_debito`|`nd`, `documento_soporte`|`ds`, `nota_ajuste_ds`|`na`,
    /// `exportacion`|`fx`, `pos`.
    pub tipo: Option<String>,
    /// Required except on `/pos` (final consumer `222222222222` when absent).
    pub cliente: Option<SpanishCustomer>,
    /// Aliases `productos`, `items`.
    pub lineas: Vec<SpanishLine>,
    /// Alias `notas`.
    #[schema(max_length = 4000)]
    pub observaciones: Option<String>,
    /// Default `true`; alias `enviar_tax`. `false` keeps a draft (Borrador).
    pub transmitir: Option<bool>,
    /// Unique caller reference (idempotency key, shared with the unified
    /// API's `referencia_externa`); aliases `referencia_externa`, `id_unico`.
    #[schema(max_length = 100)]
    pub referencia: Option<String>,
    /// Notes: id of the original document.
    pub documento_referencia: Option<u64>,
    /// Credit and debit notes: the original's CUFE instead of its id.
    pub cufe_factura_referencia: Option<String>,
    /// Notes: concept (spec 2.8); default `1` (credit, support adjustment)
    /// or `4` (debit).
    pub concepto_nota: Option<String>,
    /// `1` production, `2` testing: must agree with the API key.
    pub ambiente: Option<String>,
    /// `true`: 202 and background processing (never on `/pos`: 422).
    pub asincrono: Option<bool>,
    /// Declared totals, checked against the computed ones (1 peso).
    pub totales: Option<SpanishTotals>,
    /// Declared global taxes `{tipo, porcentaje, base, valor}`, checked.
    pub impuestos: Option<Vec<SpanishTax>>,
    /// `contado` (`1`) or `credito` (`2`).
    pub forma_pago: Option<String>,
    /// `efectivo`, `cheque`, `consignacion`, `transferencia`,
    /// `tarjeta_credito`, `tarjeta_debito`, or the authority's code (`10`, `42`, `47`, `48` ...).
    pub metodo_pago: Option<String>,
    /// With `credito`: days from today, when `fecha_vencimiento` is absent.
    pub dias_credito: Option<u32>,
    /// With `credito` (`YYYY-MM-DD`).
    pub fecha_vencimiento: Option<String>,
    /// `11` health sector (needs `salud`), `12` cargo transport (needs `transporte`).
    pub tipo_operacion: Option<String>,
    /// `02` makes an invoice an export.
    pub tipo_documento: Option<String>,
    /// Export: ISO 4217 currency (`USD`).
    pub moneda: Option<String>,
    /// Export: the exchange rate.
    pub tasa_cambio: Option<SpanishExchangeRate>,
    /// Export: `FOB`, `CIF`, `EXW` ...
    pub incoterms: Option<String>,
    pub salud: Option<SpanishHealth>,
    /// Health: the user's copay (`COPAGO` of the annex).
    pub copago_cuota_moderadora: Option<f64>,
    pub transporte: Option<SpanishTransport>,
    /// POS: register and cashier (default `1`).
    #[schema(max_length = 50)]
    pub id_caja: Option<String>,
    #[schema(max_length = 50)]
    pub id_cajero: Option<String>,
}

/// `cliente` (or `proveedor`).
#[derive(Deserialize, ToSchema)]
pub struct SpanishCustomer {
    /// Alias `razon_social`. Required unless `completar_adquiriente`.
    #[schema(max_length = 450)]
    pub nombre: String,
    /// Aliases `nit`, `cedula`. A NIT may carry its check digit
    /// (`900123456-7`), which must be right; it is computed anyway.
    #[schema(max_length = 20)]
    pub numero_identificacion: String,
    /// Aliases `correo_electronico`, `email`. Required unless
    /// `completar_adquiriente`.
    #[schema(max_length = 254)]
    pub correo: String,
    #[schema(max_length = 450)]
    pub direccion: Option<String>,
    #[schema(max_length = 50)]
    pub telefono: Option<String>,
    /// Code (`13`, `31`, `22`, `41` ...) or name (`CC`, `NIT`, `CE`,
    /// `PASAPORTE`, `TI`, `NIT_EXTRANJERO` ...).
    pub tipo_documento: Option<String>,
    /// `1` legal entity, `2` natural person.
    pub tipo_organizacion: Option<String>,
    /// ISO 3166-1 alpha-2.
    pub pais: Option<String>,
    /// DIVIPOLA code (5 digits) or, abroad, the city's name.
    pub municipio: Option<String>,
    /// Never on `/pos`: `nombre` and `correo`, when left out, are filled
    /// from the authority's register of buyers (`GetAcquirer`, Res.
    /// 000202/2025) by `tipo_documento` (then required) and the number,
    /// before anything is issued; an unknown buyer is a 404 `NOT_FOUND`,
    /// the authority out of reach a 503 `TAX_UNAVAILABLE`.
    pub completar_adquiriente: Option<bool>,
}

/// `lineas[]`.
#[derive(Deserialize, ToSchema)]
pub struct SpanishLine {
    /// Aliases `producto`, `nombre_producto`.
    #[schema(max_length = 4000)]
    pub descripcion: String,
    /// Default 1.
    pub cantidad: Option<f64>,
    /// Unit price; aliases `precio_unitario`, `valor_unitario`.
    pub precio: f64,
    /// VAT % (01).
    pub iva: Option<f64>,
    /// ICA % (03).
    pub ica: Option<f64>,
    /// Consumption tax % (04).
    pub inc: Option<f64>,
    /// Plastic bags % (22).
    pub bolsas: Option<f64>,
    /// ReteICA % (spec 05; the authority's 07).
    pub reteica: Option<f64>,
    /// ReteIVA %, of the line's VAT (spec 06; the authority's 05).
    pub reteiva: Option<f64>,
    /// ReteFuente % (spec 07; the authority's 06).
    pub retefuente: Option<f64>,
    pub impuestos: Option<Vec<SpanishTax>>,
    /// Aliases `codigo_producto`, `referencia`; health: the procedure code.
    #[schema(max_length = 100)]
    pub codigo: Option<String>,
    /// Default `94`; `GLL`, `LTR`, `HUR`, `E48`, `KGM` ...
    pub unidad_medida: Option<String>,
    /// Health lines: the patient.
    pub paciente: Option<SpanishPatient>,
}

/// A tax item.
#[derive(Deserialize, ToSchema)]
pub struct SpanishTax {
    /// `iva`, `inc`, `ica`, `bolsas`, `combustibles` (24),
    /// `sobretasa_combustibles` (25), `advalorem` (26), `reteiva`,
    /// `retefuente`, `reteica`, or a code (`01`, `04` ...).
    pub tipo: String,
    pub porcentaje: Option<f64>,
    /// A fixed amount per unit (fuels, bags) instead of `porcentaje`.
    pub valor_unitario: Option<f64>,
    /// Declared base, checked.
    pub base: Option<f64>,
    /// Declared amount, checked.
    pub valor: Option<f64>,
}

#[derive(Deserialize, ToSchema)]
pub struct SpanishTotals {
    pub subtotal: Option<f64>,
    pub total_impuestos: Option<f64>,
    pub total_retenciones: Option<f64>,
    pub total: Option<f64>,
}

#[derive(Deserialize, ToSchema)]
pub struct SpanishExchangeRate {
    pub moneda_origen: Option<String>,
    /// Default `COP`.
    pub moneda_destino: Option<String>,
    /// Pesos per unit of the currency.
    pub tasa: f64,
    /// Default today.
    pub fecha: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct SpanishHealth {
    #[schema(max_length = 50)]
    pub codigo_prestador: String,
    /// `salud_modalidad_pago.gc`: `01` per case, `02` global prospective,
    /// `03` capitation, `04` per event (default), `05` other.
    pub modalidad_pago: Option<String>,
    /// `salud_cobertura.gc`, `01` to `17`.
    pub cobertura: String,
    #[schema(max_length = 50)]
    pub numero_contrato: Option<String>,
    #[schema(max_length = 50)]
    pub numero_poliza: Option<String>,
    pub fecha_inicio: Option<String>,
    pub fecha_fin: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct SpanishPatient {
    /// `CC`, `TI`, `RC`, `CE`, `PA` ... (`salud_identificacion.gc`).
    pub tipo_documento: String,
    pub numero_documento: String,
    pub primer_nombre: String,
    pub primer_apellido: String,
}

#[derive(Deserialize, ToSchema)]
pub struct SpanishTransport {
    pub remesa_numero: String,
    pub manifiesto_numero: String,
    pub vehiculo_placa: Option<String>,
    /// DIVIPOLA codes.
    pub origen: Option<String>,
    pub destino: Option<String>,
}

/// Adds the examples of each route (every sector on `/factura`).
pub struct SpanishExamples;

impl Modify for SpanishExamples {
    fn modify(&self, openapi: &mut OpenApi) {
        for (name, summary, path, body) in super::examples::all() {
            let Some(item) = openapi.paths.paths.get_mut(path) else {
                continue;
            };
            let Some(op) = item.post.as_mut() else {
                continue;
            };
            let Some(rb) = op.request_body.as_mut() else {
                continue;
            };
            for content in rb.content.values_mut() {
                content.examples.insert(
                    name.to_string(),
                    ExampleBuilder::new()
                        .summary(summary)
                        .value(Some(body.clone()))
                        .build()
                        .into(),
                );
            }
        }
    }
}
