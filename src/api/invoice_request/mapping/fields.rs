//! Engine field names → JSON paths of the request, so that an error found by
//! the engine (validation, declared totals) names what the caller sent:
//! `lines[2].withholdings[0].tax_amount` → `invoice_lines[2].tax_totals[1].tax_amount`,
//! `supplier.id_number` → `customer.identification_number`,
//! `note_concept.code` → `id_concepto_nota`.

/// Where each engine line field came from in the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldMap {
    /// `invoice_lines`, `credit_note_lines` or `debit_note_lines`.
    pub(super) array: &'static str,
    /// `invoiced_quantity` ...
    pub(super) quantity: &'static str,
    /// Per line: the request `tax_totals` index of each engine tax, and of
    /// each engine withholding.
    pub(super) taxes: Vec<(Vec<usize>, Vec<usize>)>,
}

/// `[12].rest` → `(12, ".rest")`.
fn split_index(s: &str) -> Option<(usize, &str)> {
    let inner = s.strip_prefix('[')?;
    let close = inner.find(']')?;
    let index = inner.get(..close)?.parse().ok()?;
    Some((index, inner.get(close + 1..)?))
}

fn customer_field(sub: &str) -> &'static str {
    match sub {
        "name" | "trade_name" => "customer.name",
        "email" => "customer.email",
        "phone" => "customer.phone",
        "id_number" | "check_digit" => "customer.identification_number",
        "id_type" => "customer.type_document_identification.code",
        "address.line" => "customer.address",
        "address.municipality_name" => "customer.municipality.name",
        "address.country_code" | "address.country_name" => "customer.country_code",
        s if s.starts_with("address") => "customer.municipality.code",
        _ => "customer",
    }
}

impl FieldMap {
    /// The request path of an engine field; fields with no counterpart in
    /// the request (company, resolution, certificate ...) are returned as is.
    pub fn api_field(&self, field: &str) -> String {
        if let Some(rest) = field.strip_prefix("lines") {
            if let Some(path) = self.line_field(rest) {
                return path;
            }
        }
        for party in ["customer", "supplier"] {
            if let Some(rest) = field.strip_prefix(party) {
                if rest.is_empty() {
                    return "customer".into();
                }
                if let Some(sub) = rest.strip_prefix('.') {
                    return customer_field(sub).into();
                }
            }
        }
        let head = field.split(['.', '[']).next().unwrap_or_default();
        match head {
            "note_concept" => "id_concepto_nota".into(),
            "billing_reference" => "id_documento_referencia".into(),
            "currency" => "id_tipo_moneda".into(),
            "operation_type" => "id_tipo_operacion".into(),
            "health" => {
                let sub = field.rsplit('.').next().unwrap_or_default();
                match sub {
                    "provider_code" => "salud.codigo_prestador".into(),
                    "payment_modality" => "salud.modalidad_pago".into(),
                    "coverage" => "salud.cobertura".into(),
                    "contract_number" => "salud.numero_contrato".into(),
                    "policy_number" => "salud.numero_poliza".into(),
                    "period_start" => "salud.fecha_inicio".into(),
                    "period_end" => "salud.fecha_fin".into(),
                    "copay" => "salud.copago".into(),
                    _ => "salud".into(),
                }
            }
            "point_of_sale" => match field.rsplit('.').next().unwrap_or_default() {
                "cashier_id" => "id_cajero".into(),
                _ => "id_caja".into(),
            },
            "paper_reference" => "referencia_contingencia.numero".into(),
            "delivery_terms" => "delivery.delivery_terms".into(),
            "notes" => "notes".into(),
            "payment_form" => {
                let sub = field.rsplit('.').next().unwrap_or_default();
                match sub {
                    "form" => "payment_form.id".into(),
                    "method" | "due_date" => format!("payment_form.{sub}"),
                    _ => "payment_form".into(),
                }
            }
            _ => field.to_string(),
        }
    }

    fn line_field(&self, rest: &str) -> Option<String> {
        if rest.is_empty() {
            return Some(self.array.to_string());
        }
        let (i, rest) = split_index(rest)?;
        let line = format!("{}[{i}]", self.array);
        if rest.is_empty() {
            return Some(line);
        }
        let sub = rest.strip_prefix('.')?;
        let mapped = match sub {
            "quantity" => self.quantity.to_string(),
            "unit_measure" => "unit_measure.code".into(),
            "transport.rndc_filing" => "transporte.radicado_rndc".into(),
            "transport.consignment" => "transporte.numero_remesa".into(),
            "transport.freight" => "transporte.valor_flete".into(),
            "transport.quantity" => "transporte.cantidad".into(),
            "transport.unit_code" => "transporte.unidad".into(),
            _ => {
                let (list, after) = if let Some(after) = sub.strip_prefix("tax_totals") {
                    (0, after)
                } else if let Some(after) = sub.strip_prefix("withholdings") {
                    (1, after)
                } else {
                    return Some(format!("{line}.{sub}"));
                };
                let (j, tail) = split_index(after)?;
                let source = self.taxes.get(i).and_then(|(taxes, withholdings)| {
                    if list == 0 { taxes } else { withholdings }.get(j).copied()
                });
                let k = source.unwrap_or(j);
                let tail = match tail {
                    ".code" => ".tax_code",
                    t => t,
                };
                format!("tax_totals[{k}]{tail}")
            }
        };
        Some(format!("{line}.{mapped}"))
    }
}
