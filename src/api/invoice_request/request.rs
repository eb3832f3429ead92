//! The JSON body of `POST /facturacion` (spec 2.5–2.7), as the caller sends it.
//!
//! Shape decisions where the spec is silent:
//! - Unknown fields are ignored (lenient), at every level: client libraries
//!   written for similar APIs send extra keys, and every field that changes
//!   the document is checked when present.
//! - Every number that is money, a quantity, a rate or a percentage is read
//!   exactly from the JSON text into a [`Decimal`] (`0.1` stays `0.1`, `1e-2`
//!   is `0.01`); a JSON string where a number is expected is a wrong type
//!   (400). Integers are plain JSON integers.
//! - Codes (`id_concepto_nota`, `id_tipo_operacion`, `payment_form.id`,
//!   `payment_form.method`, `tax_code`, `unit_measure.code`) are strings, but
//!   a JSON integer is accepted too (`2` means `"2"`); anything else is 400.
//! - `id_tipo_moneda` is the ISO 4217 numeric code (`840` USD, `978` EUR,
//!   `170` COP); the alphabetic code as a string (`"USD"`) is accepted too.
//! - `payment_form` is `{id, method, due_date}`: `id` `1` cash or `2` credit
//!   (default `1`), `method` a payment means code (`10` cash, `42` deposit,
//!   `47` transfer, `48` credit card ...; default `10`), `due_date`
//!   `YYYY-MM-DD`, required for credit.
//! - One line type serves the three arrays; it carries the three quantity
//!   names and the mapping requires the one of its array
//!   (`invoice_lines[].invoiced_quantity`, `credit_note_lines[].credited_quantity`,
//!   `debit_note_lines[].debited_quantity`).
//! - `line_extension_amount` (spec: required) is optional: computed when
//!   absent, checked when present.
//! - An object is sent as a JSON object: an array in its place (which serde
//!   would read field by field) is a wrong type (400), see `json::object`.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde::de::Unexpected;
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

use crate::api::invoice_request::customer::CustomerRequest;
use crate::http::json::object;

/// `POST /facturacion` body (spec 2.5).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct FacturacionRequest {
    /// Document type 1–10 (spec 2.2): 1 FE, 2 NC, 3 ND, 4 DS, 5 DS adjustment,
    /// 6 export, 7 T03, 8 T04, 9 POS, 10 POS adjustment. Type 2 with
    /// `id_tipo_operacion` `10` is also an export invoice.
    pub id_tipo_documento: i64,
    /// Transmit to the tax authority now; default `true`. `false` keeps the
    /// document as a draft (state 1) with its number, XML and code.
    #[serde(default)]
    pub transmit: Option<bool>,
    /// `true`: answer 202 and process in the background; default `false`.
    #[serde(default, rename = "async")]
    pub r#async: Option<bool>,
    /// The customer (for support documents 4 and 5: the vendor not obliged
    /// to invoice, usually a natural person with a CC, `13`).
    #[serde(deserialize_with = "object::required")]
    pub customer: CustomerRequest,
    /// Lines of types 1, 4, 6, 7, 8, 9 (and of an export sent as type 2).
    #[serde(default, deserialize_with = "object::option_vec")]
    pub invoice_lines: Option<Vec<DocumentLine>>,
    /// Lines of types 2, 5 and 10.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub credit_note_lines: Option<Vec<DocumentLine>>,
    /// Lines of type 3.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub debit_note_lines: Option<Vec<DocumentLine>>,
    /// Totals the caller computed; checked against ours (0.01 tolerance).
    #[serde(default, deserialize_with = "object::option")]
    pub legal_monetary_totals: Option<LegalMonetaryTotals>,
    /// Document taxes the caller computed, one item per tax code (and rate);
    /// checked against ours.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub tax_totals: Option<Vec<TaxTotal>>,
    #[serde(default, deserialize_with = "object::option")]
    pub payment_form: Option<PaymentForm>,
    /// Free text printed on the document.
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub notes: Option<String>,
    /// Notes and adjustments (2, 3, 5, 10): id of the original document.
    #[serde(default)]
    pub id_documento_referencia: Option<u64>,
    /// Notes and adjustments: concept code (spec 2.8).
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub id_concepto_nota: Option<String>,
    /// Caller's unique reference (idempotency key), up to 100 characters.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub referencia_externa: Option<String>,
    /// Operation type: `10` standard (with type 2: export); `11` health
    /// sector (types 1, 2, 3, 7, 8; needs `salud`; written as the
    /// authority's `SS-SinAporte` on an invoice, this API taking no copay,
    /// and `SS-CUDE` on a note); `12` cargo transport (types 1, 7,
    /// 8; lines carry `transporte`; written as operation 10 with the freight
    /// data on the lines); `09` AIU, `13`, `15`, `16` are written as given.
    /// Notes: `20` (credit), `30` (debit). Support documents: `10` resident
    /// vendor, `11` non-resident.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub id_tipo_operacion: Option<String>,
    /// Health-sector data, required with `id_tipo_operacion` `11`.
    #[serde(default, deserialize_with = "object::option")]
    pub salud: Option<HealthRequest>,
    /// Contingency T03 (type 7): the paper invoice it transcribes; when
    /// absent, the document's own number and issue date are written.
    #[serde(default, deserialize_with = "object::option")]
    pub referencia_contingencia: Option<ContingencyReference>,
    /// POS receipt (type 9): the register (`PlacaCaja`); `1` when absent.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>, max_length = 50)]
    pub id_caja: Option<String>,
    /// POS receipt (type 9): the cashier (`Cajero`); `1` when absent.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>, max_length = 50)]
    pub id_cajero: Option<String>,
    /// Currency: ISO 4217 numeric (`840`) or alphabetic (`"USD"`); default COP.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<i64>)]
    pub id_tipo_moneda: Option<String>,
    /// Required when the currency is not COP.
    #[serde(default, deserialize_with = "object::option")]
    pub exchange_rate: Option<ExchangeRateRequest>,
    #[serde(default, deserialize_with = "object::option")]
    pub delivery: Option<Delivery>,
}

/// One line of `invoice_lines`, `credit_note_lines` or `debit_note_lines`
/// (spec 2.7).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct DocumentLine {
    #[schema(max_length = 4000)]
    pub description: String,
    /// Quantity of an `invoice_lines` item.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub invoiced_quantity: Option<Decimal>,
    /// Quantity of a `credit_note_lines` item.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub credited_quantity: Option<Decimal>,
    /// Quantity of a `debit_note_lines` item.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub debited_quantity: Option<Decimal>,
    /// Line subtotal without taxes: quantity × price rounded half-up to 2
    /// decimals, − discounts + charges. Computed when absent.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub line_extension_amount: Option<Decimal>,
    /// Unit price.
    #[serde(deserialize_with = "amount::required")]
    #[schema(value_type = f64)]
    pub price_amount: Decimal,
    /// Unit of measure; `94` (unit) when absent. Others: `KGM`, `E48`, `LTR` ...
    #[serde(default, deserialize_with = "object::option")]
    pub unit_measure: Option<UnitMeasure>,
    /// Item code (`cac:StandardItemIdentification`); the line number when absent.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub code: Option<String>,
    /// Taxes and withholdings (`05` ReteIVA, `06` ReteRenta, `07` ReteICA) of
    /// the line.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub tax_totals: Option<Vec<TaxTotal>>,
    /// Discounts and charges of the line.
    #[serde(default, deserialize_with = "object::option_vec")]
    pub allowance_charges: Option<Vec<AllowanceChargeRequest>>,
    /// Cargo transport (`id_tipo_operacion` `12`): the consignment this line
    /// bills.
    #[serde(default, deserialize_with = "object::option")]
    pub transporte: Option<TransportRequest>,
}

/// Health-sector data of a document (the Ministry of Health's annex for
/// health-sector invoices, Resolución 2275 de 2023).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct HealthRequest {
    /// The provider's code in the health system (`CODIGO_PRESTADOR`).
    #[serde(default)]
    #[schema(max_length = 50)]
    pub codigo_prestador: Option<String>,
    /// Payment modality: `01` per case / package, `02` global prospective,
    /// `03` capitation, `04` per event (default), `05` other.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub modalidad_pago: Option<String>,
    /// Coverage or benefit plan, `01` to `17` (`15` private, `16`/`17` UPC
    /// contributory / subsidized, `04` SOAT ...). Required.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub cobertura: Option<String>,
    /// Contract with the paying entity.
    #[serde(default)]
    #[schema(max_length = 50)]
    pub numero_contrato: Option<String>,
    /// SOAT or voluntary-plan policy.
    #[serde(default)]
    #[schema(max_length = 50)]
    pub numero_poliza: Option<String>,
    /// Start of the billed period; the issue date when absent.
    #[serde(default)]
    pub fecha_inicio: Option<NaiveDate>,
    /// End of the billed period; the issue date when absent.
    #[serde(default)]
    pub fecha_fin: Option<NaiveDate>,
}

/// The consignment a cargo-transport line bills.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct TransportRequest {
    /// Filing number of the consignment in the national cargo registry (RNDC).
    #[serde(default)]
    #[schema(max_length = 50)]
    pub radicado_rndc: Option<String>,
    /// The carrier's consignment (remesa) number.
    #[serde(default)]
    #[schema(max_length = 50)]
    pub numero_remesa: Option<String>,
    /// Freight charged; the line's subtotal when absent.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub valor_flete: Option<Decimal>,
    /// Quantity transported; the line's quantity when absent.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub cantidad: Option<Decimal>,
    /// `KGM` (default) or `GLL`.
    #[serde(default)]
    pub unidad: Option<String>,
}

/// The paper invoice a contingency T03 transcribes.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ContingencyReference {
    /// Its number, as printed.
    #[schema(max_length = 50)]
    pub numero: String,
    /// Its issue date.
    pub fecha: NaiveDate,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct UnitMeasure {
    #[serde(deserialize_with = "code::required")]
    #[schema(value_type = String)]
    pub code: String,
}

/// A tax of a line, or of the document (top-level `tax_totals`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct TaxTotal {
    /// `01` IVA, `02` IC, `03` ICA, `04` INC, `22` INC bags, `24`/`25`/`26`
    /// fuels ...; withholdings `05`, `06`, `07`.
    #[serde(deserialize_with = "code::required")]
    #[schema(value_type = String)]
    pub tax_code: String,
    /// Informative; the authority's name is used.
    #[serde(default)]
    #[schema(max_length = 450)]
    pub tax_name: Option<String>,
    /// Rate in percent, 0–100. A line tax needs `percent` or `per_unit_amount`.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub percent: Option<Decimal>,
    /// Fixed amount per unit of quantity (bags `22`, fuels `24`–`26`).
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub per_unit_amount: Option<Decimal>,
    /// Taxable base; the line subtotal when absent (ReteIVA: the line's IVA).
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub taxable_amount: Option<Decimal>,
    /// Tax amount; checked against ours when present.
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub tax_amount: Option<Decimal>,
}

/// A discount (`charge_indicator` false, the default) or a charge of a line.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AllowanceChargeRequest {
    #[serde(default)]
    pub charge_indicator: bool,
    #[serde(deserialize_with = "amount::required")]
    #[schema(value_type = f64)]
    pub amount: Decimal,
    /// Free text; `Descuento` or `Cargo` when absent.
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub reason: Option<String>,
    /// Discount reason code of the authority's list (`00`–`11`).
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>, max_length = 100)]
    pub reason_code: Option<String>,
}

/// Spec 2.7 `legal_monetary_totals`; any may be omitted.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LegalMonetaryTotals {
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub line_extension_amount: Option<Decimal>,
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub tax_exclusive_amount: Option<Decimal>,
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub tax_inclusive_amount: Option<Decimal>,
    #[serde(default, deserialize_with = "amount::option")]
    #[schema(value_type = Option<f64>)]
    pub payable_amount: Option<Decimal>,
}

/// Payment form and means (not shown by the spec; decided here).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct PaymentForm {
    /// `1` cash (default), `2` credit.
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub id: Option<String>,
    /// Payment means code: `10` cash (default), `42` deposit, `47` transfer,
    /// `48` credit card, `49` debit card ...
    #[serde(default, deserialize_with = "code::option")]
    #[schema(value_type = Option<String>)]
    pub method: Option<String>,
    /// Required for credit.
    #[serde(default)]
    pub due_date: Option<NaiveDate>,
}

/// Spec 2.5 `exchange_rate`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ExchangeRateRequest {
    /// Document currency (ISO 4217); from `id_tipo_moneda` when absent.
    #[serde(default)]
    pub source_currency: Option<String>,
    /// `COP` when absent.
    #[serde(default)]
    pub target_currency: Option<String>,
    /// Pesos per unit of the source currency.
    #[serde(deserialize_with = "amount::required")]
    #[schema(value_type = f64)]
    pub calculation_rate: Decimal,
    pub date: NaiveDate,
}

/// Spec 2.5 `delivery`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct Delivery {
    /// Incoterm: `EXW`, `FCA`, `FAS`, `FOB`, `CFR`, `CIF`, `CPT`, `CIP`,
    /// `DAP`, `DPU`, `DDP` (and the older `DAT`, `DAF`, `DES`, `DEQ`, `DDU`).
    #[serde(default)]
    pub delivery_terms: Option<String>,
}

impl FacturacionRequest {
    /// `transmit`, default `true` (decisions.md §5).
    pub fn transmit(&self) -> bool {
        self.transmit.unwrap_or(true)
    }

    /// `async`, default `false`.
    pub fn asynchronous(&self) -> bool {
        self.r#async.unwrap_or(false)
    }
}

/// Exact decimals from JSON numbers. With serde_json's `arbitrary_precision`
/// (enabled by rust_decimal's `serde-with-arbitrary-precision`) a
/// [`serde_json::Number`] keeps the literal text, which is parsed exactly.
pub(crate) mod amount {
    use std::fmt;

    use serde::de::value::MapAccessDeserializer;
    use serde::de::{MapAccess, Visitor};

    use super::*;

    /// Parses a JSON number literal without rounding; `None` when it does
    /// not fit a `Decimal` exactly.
    pub fn parse_exact(text: &str) -> Option<Decimal> {
        if text.contains(['e', 'E']) {
            Decimal::from_scientific(text).ok()
        } else {
            Decimal::from_str_exact(text).ok()
        }
    }

    fn exact<E: serde::de::Error>(text: &str) -> Result<Decimal, E> {
        parse_exact(text).ok_or_else(|| {
            E::custom(format!(
                "number {text} is out of range or has more than 28 decimals"
            ))
        })
    }

    /// A JSON number read as a `serde_json::Number` reads it, then exactly:
    /// an integer straight from the parser's value (its text is its
    /// digits), any other from its text (arbitrary precision hands it over
    /// as a one-entry map). No text is copied for an integer.
    struct Exact(Decimal);

    impl<'de> Deserialize<'de> for Exact {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(ExactVisitor).map(Exact)
        }
    }

    struct ExactVisitor;

    impl<'de> Visitor<'de> for ExactVisitor {
        type Value = Decimal;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON number")
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Decimal, E> {
            let n =
                serde_json::Number::from_f64(v).ok_or_else(|| E::custom("not a JSON number"))?;
            exact(n.as_str())
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Decimal, A::Error> {
            let n = serde_json::Number::deserialize(MapAccessDeserializer::new(map))?;
            exact(n.as_str())
        }
    }

    pub fn required<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        Exact::deserialize(d).map(|e| e.0)
    }

    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        Ok(Option::<Exact>::deserialize(d)?.map(|e| e.0))
    }
}

/// Code strings that also accept a JSON integer.
pub(crate) mod code {
    use std::fmt;

    use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
    use serde::de::{MapAccess, SeqAccess, Visitor};
    use serde_json::Value;

    use super::*;

    const NOT_AN_INTEGER: Unexpected<'static> =
        Unexpected::Other("a number that is not a non-negative integer");

    /// What a code read as a JSON value gives: a string as it is, a
    /// non-negative integer as its digits, anything else refused.
    fn convert<E: serde::de::Error>(v: Value) -> Result<String, E> {
        let unexpected = match &v {
            Value::String(s) => return Ok(s.clone()),
            Value::Number(n) => match n.as_u64() {
                Some(u) => return Ok(u.to_string()),
                None => NOT_AN_INTEGER,
            },
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
        };
        Err(E::invalid_type(unexpected, &"a code string"))
    }

    /// [`convert`] without the `Value` for a string or an integer (nearly
    /// every code); anything else is read as a `Value` and converted.
    struct Code(String);

    impl<'de> Deserialize<'de> for Code {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(CodeVisitor).map(Code)
        }
    }

    struct CodeVisitor;

    impl<'de> Visitor<'de> for CodeVisitor {
        type Value = String;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a code string")
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }

        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<String, E> {
            Ok(v)
        }

        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }

        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
            convert(Value::from(v))
        }

        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<String, E> {
            convert(Value::from(v))
        }

        fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<String, E> {
            convert(Value::Bool(v))
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<String, E> {
            convert(Value::Null)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<String, A::Error> {
            convert(Value::deserialize(SeqAccessDeserializer::new(seq))?)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<String, A::Error> {
            convert(Value::deserialize(MapAccessDeserializer::new(map))?)
        }
    }

    pub fn required<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Code::deserialize(d).map(|c| c.0)
    }

    pub fn option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(Option::<Code>::deserialize(d)?.map(|c| c.0))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[derive(Debug, Deserialize)]
        struct Codes {
            #[serde(deserialize_with = "required")]
            code: String,
            #[serde(default, deserialize_with = "option")]
            optional: Option<String>,
            #[serde(default, deserialize_with = "super::super::amount::option")]
            amount: Option<Decimal>,
        }

        /// The route these replaced: the field read as a `Value` (or a
        /// `Number`), then converted.
        fn through_value(json: &str) -> Result<String, String> {
            let v: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
            let code =
                convert::<serde_json::Error>(v["code"].clone()).map_err(|e| e.to_string())?;
            let optional = match &v["optional"] {
                Value::Null => None,
                o => Some(convert::<serde_json::Error>(o.clone()).map_err(|e| e.to_string())?),
            };
            let amount = match &v["amount"] {
                Value::Null => None,
                Value::Number(n) => Some(
                    super::super::amount::parse_exact(&n.to_string())
                        .ok_or_else(|| format!("number {n} is out of range"))?,
                ),
                other => return Err(format!("invalid type: {other}")),
            };
            Ok(format!("{code:?} {optional:?} {amount:?}"))
        }

        fn directly(json: &str) -> Result<String, String> {
            let c: Codes = serde_json::from_str(json).map_err(|e| e.to_string())?;
            Ok(format!("{:?} {:?} {:?}", c.code, c.optional, c.amount))
        }

        #[test]
        fn codes_and_amounts_read_as_through_a_value() {
            for json in [
                r#"{"code":"01","optional":"ZZ","amount":19}"#,
                r#"{"code":2,"optional":null,"amount":12.50}"#,
                r#"{"code":"\u0041","amount":-0}"#,
                r#"{"code":18446744073709551615,"amount":1e-2}"#,
                r#"{"code":"x","amount":-7}"#,
                r#"{"code":"x","amount":79228162514264337593543950335}"#,
                r#"{"code":"x","amount":0.0000000000000000000000000001}"#,
            ] {
                assert_eq!(directly(json), through_value(json), "{json}");
            }
            // Refusals: the same kind and the same words (the position aside).
            for (json, words) in [
                (
                    r#"{"code":-1}"#,
                    "a number that is not a non-negative integer",
                ),
                (
                    r#"{"code":1.5}"#,
                    "a number that is not a non-negative integer",
                ),
                (
                    r#"{"code":true}"#,
                    "invalid type: boolean `true`, expected a code string",
                ),
                (
                    r#"{"code":null}"#,
                    "invalid type: null, expected a code string",
                ),
                (
                    r#"{"code":[1]}"#,
                    "invalid type: sequence, expected a code string",
                ),
                (
                    r#"{"code":{"a":1}}"#,
                    "invalid type: map, expected a code string",
                ),
                (
                    r#"{"code":"x","optional":3.5}"#,
                    "not a non-negative integer",
                ),
                (r#"{"code":"x","amount":"1"}"#, "expected a JSON number"),
                (
                    r#"{"code":"x","amount":1e400}"#,
                    "out of range or has more than 28 decimals",
                ),
            ] {
                let got = directly(json).unwrap_err();
                assert!(got.contains(words), "{json}: {got}");
            }
        }
    }
}
