//! `GET /pos/arqueo`: the cash count of a day (decisions.md §4): `fecha`
//! (default today, Colombia time), optionally one register (`id_caja`) and
//! cashier (`id_cajero`). It reads that day's POS documents of the company
//! through the document index (never a scan of all documents) and sums
//! the amounts each kept at issue (list keys): receipts counted, first and
//! last number, totals by payment method and by tax, tips; adjustment notes
//! subtracted. Receipts the authority rejected (state 4) are not sales and
//! are left out (counted apart).

use std::collections::BTreeMap;
use std::str::FromStr;

use actix_web::{get, web, HttpResponse};
use emisor_store::{DocumentRecord, Family, ListQuery};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::engine::model::DocumentKind;
use crate::engine::totals::tax_name;
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorEnvelope};
use crate::http::numbers::money;
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::issuing::context::colombia_now;
use crate::issuing::kind::invoicing_kind;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ArqueoQuery {
    /// `YYYY-MM-DD`; today (Colombia time) when absent.
    pub fecha: Option<String>,
    pub id_caja: Option<String>,
    pub id_cajero: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PorMetodo {
    pub metodo: String,
    pub nombre: &'static str,
    pub total: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PorImpuesto {
    pub tipo: String,
    pub nombre: &'static str,
    pub porcentaje: String,
    pub base: String,
    pub valor: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotasAjuste {
    pub cantidad: u64,
    pub subtotal: String,
    pub total_impuestos: String,
    pub total: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Arqueo {
    pub fecha: String,
    pub id_caja: Option<String>,
    pub id_cajero: Option<String>,
    /// Receipts counted (type 9, not rejected).
    pub cantidad: u64,
    pub primer_numero: Option<String>,
    pub ultimo_numero: Option<String>,
    pub subtotal: String,
    pub total_impuestos: String,
    pub propinas: String,
    /// Σ receipt totals (subtotal + taxes + tips).
    pub total_ventas: String,
    pub por_metodo_pago: Vec<PorMetodo>,
    pub por_impuesto: Vec<PorImpuesto>,
    pub notas_ajuste: NotasAjuste,
    /// `total_ventas` − the adjustment notes' totals.
    pub total_neto: String,
    /// Receipts the authority rejected that day (not counted).
    pub rechazados: u64,
}

fn dec(keys: &BTreeMap<String, String>, k: &str) -> Decimal {
    keys.get(k)
        .and_then(|v| Decimal::from_str(v).ok())
        .unwrap_or_default()
}

/// A cash count being summed, one document at a time ([`Sums::add`]);
/// [`Sums::arqueo`] is the answer. The console's POS page sums each
/// register and cashier of a day with it.
#[derive(Default)]
pub struct Sums {
    count: u64,
    first: Option<(u64, String)>,
    last: Option<(u64, String)>,
    subtotal: Decimal,
    taxes: Decimal,
    tips: Decimal,
    total: Decimal,
    methods: BTreeMap<String, Decimal>,
    /// (code, rate) → (base, amount)
    by_tax: BTreeMap<(String, String), (Decimal, Decimal)>,
    notes: u64,
    notes_subtotal: Decimal,
    notes_taxes: Decimal,
    notes_total: Decimal,
    rejected: u64,
}

impl Sums {
    pub fn add(&mut self, d: &DocumentRecord) {
        let k = &d.list_keys;
        let total = Decimal::from_str(&d.total).unwrap_or_default();
        if d.state == emisor_store::state::REJECTED {
            self.rejected += 1;
            return;
        }
        if invoicing_kind(d) == Some(DocumentKind::PosAdjustment) {
            self.notes += 1;
            self.notes_subtotal += dec(k, "subtotal");
            self.notes_taxes += dec(k, "impuestos");
            self.notes_total += total;
            return;
        }
        self.count += 1;
        let number = (d.number, d.full_number());
        if self.first.as_ref().is_none_or(|f| number.0 < f.0) {
            self.first = Some(number.clone());
        }
        if self.last.as_ref().is_none_or(|l| number.0 > l.0) {
            self.last = Some(number);
        }
        self.subtotal += dec(k, "subtotal");
        self.taxes += dec(k, "impuestos");
        self.tips += dec(k, "propina");
        self.total += total;
        for entry in k.get("pagos").map(String::as_str).unwrap_or("").split(';') {
            if let Some((m, a)) = entry.split_once('=') {
                *self.methods.entry(m.to_string()).or_default() +=
                    Decimal::from_str(a).unwrap_or_default();
            }
        }
        let detail = k.get("impuestos_detalle").map(String::as_str).unwrap_or("");
        for entry in detail.split(';') {
            let Some((tax, amounts)) = entry.split_once('=') else {
                continue;
            };
            let (Some((code, rate)), Some((base, amount))) =
                (tax.split_once('/'), amounts.split_once(':'))
            else {
                continue;
            };
            let e = self
                .by_tax
                .entry((code.to_string(), rate.to_string()))
                .or_default();
            e.0 += Decimal::from_str(base).unwrap_or_default();
            e.1 += Decimal::from_str(amount).unwrap_or_default();
        }
    }

    /// The count as `/pos/arqueo` answers it.
    pub fn arqueo(
        self,
        fecha: chrono::NaiveDate,
        id_caja: Option<String>,
        id_cajero: Option<String>,
    ) -> Arqueo {
        Arqueo {
            fecha: fecha.to_string(),
            id_caja,
            id_cajero,
            cantidad: self.count,
            primer_numero: self.first.map(|f| f.1),
            ultimo_numero: self.last.map(|l| l.1),
            subtotal: money(self.subtotal),
            total_impuestos: money(self.taxes),
            propinas: money(self.tips),
            total_ventas: money(self.total),
            por_metodo_pago: self
                .methods
                .iter()
                .map(|(m, t)| PorMetodo {
                    metodo: m.clone(),
                    nombre: payment_method_name(m),
                    total: money(*t),
                })
                .collect(),
            por_impuesto: self
                .by_tax
                .iter()
                .map(|((code, rate), (base, amount))| PorImpuesto {
                    tipo: code.clone(),
                    nombre: tax_name(code),
                    porcentaje: rate.clone(),
                    base: money(*base),
                    valor: money(*amount),
                })
                .collect(),
            notas_ajuste: NotasAjuste {
                cantidad: self.notes,
                subtotal: money(self.notes_subtotal),
                total_impuestos: money(self.notes_taxes),
                total: money(self.notes_total),
            },
            total_neto: money(self.total - self.notes_total),
            rechazados: self.rejected,
        }
    }
}

/// Documents read per page of a day.
const DAY_PAGE: u32 = 100;

/// Hands each POS document of `owner` issued on `fecha` (with the list
/// `keys` given) to `each`, through the document index a page at a time;
/// at most `bound` documents when one is given. Answers how many the day
/// has.
pub async fn day_documents(
    store: &emisor_store::AsyncStore,
    (company_id, environment): (emisor_store::CompanyId, emisor_store::Environment),
    fecha: chrono::NaiveDate,
    keys: Vec<(String, String)>,
    bound: Option<u64>,
    mut each: impl FnMut(&DocumentRecord),
) -> emisor_store::StoreResult<u64> {
    let mut page = 1;
    let mut seen = 0u64;
    loop {
        let q = ListQuery {
            company_id,
            environment,
            family: Family::Pos,
            from: Some(fecha),
            to: Some(fecha),
            states: Vec::new(),
            keys: keys.clone(),
            page,
            limit: DAY_PAGE,
        };
        let found = store.list_documents(q).await?;
        let n = found.items.len() as u64;
        for d in &found.items {
            if bound.is_some_and(|b| seen >= b) {
                return Ok(found.total);
            }
            each(d);
            seen += 1;
        }
        if n == 0 || u64::from(page) * u64::from(DAY_PAGE) >= found.total {
            return Ok(found.total);
        }
        page += 1;
    }
}

/// Payment means names of the authority's list (the ones a till uses).
pub fn payment_method_name(code: &str) -> &'static str {
    match code {
        "10" => "Efectivo",
        "20" => "Cheque",
        "42" => "Consignación",
        "47" => "Transferencia",
        "48" => "Tarjeta crédito",
        "49" => "Tarjeta débito",
        "ZZZ" => "Otro",
        _ => "Otro medio",
    }
}

#[utoipa::path(get, path = "/v1/api/pos/arqueo", operation_id = "posCashCount", tag = "pos",
    security(("api_key" = [])),
    params(ArqueoQuery),
    responses((status = 200, description = "the day's cash count", body = inline(envelope::Envelope<Arqueo>)),
              (status = 422, description = "a bad date", body = ErrorEnvelope)))]
#[get("/pos/arqueo")]
pub async fn arqueo(
    state: web::Data<AppState>,
    ctx: AuthContext,
    query: Query<ArqueoQuery>,
) -> ApiResult<HttpResponse> {
    let fecha = match query.fecha.as_deref().filter(|f| !f.is_empty()) {
        Some(f) => chrono::NaiveDate::parse_from_str(f, "%Y-%m-%d")
            .map_err(|_| ApiError::validation("fecha", "must be a date YYYY-MM-DD"))?,
        None => colombia_now().date_naive(),
    };
    let clean = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let caja = clean(&query.id_caja);
    let cajero = clean(&query.id_cajero);
    let mut keys = Vec::new();
    if let Some(c) = &caja {
        keys.push(("id_caja".to_string(), c.clone()));
    }
    if let Some(c) = &cajero {
        keys.push(("id_cajero".to_string(), c.clone()));
    }
    let mut sums = Sums::default();
    day_documents(&state.store, ctx.owner(), fecha, keys, None, |d| {
        sums.add(d)
    })
    .await?;
    let answer = sums.arqueo(fecha, caja, cajero);
    Ok(envelope::ok("Arqueo de caja", answer))
}
