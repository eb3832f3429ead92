//! `GET /facturacion/consecutivo/{tipo}` and `GET /facturacion/suscripcion`
//! (decisions.md §4).

use actix_web::{get, web, HttpResponse};
use chrono::{Datelike, NaiveDate};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::state::AppState;
use crate::issuing::context::colombia_now;
use crate::issuing::issue::DEFAULT_MONTHLY_LIMIT;

/// `:tipo` as a code 1–10 or a short name.
pub fn document_type(tipo: &str) -> Option<u8> {
    let t = tipo.trim().to_ascii_lowercase();
    if let Ok(n) = t.parse::<u8>() {
        return (1..=10).contains(&n).then_some(n);
    }
    Some(match t.as_str() {
        "fe" => 1,
        "nc" => 2,
        "nd" => 3,
        "ds" => 4,
        "na" => 5,
        "fx" => 6,
        "t03" => 7,
        "t04" => 8,
        "pos" => 9,
        "nap" => 10,
        _ => return None,
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NextNumber {
    pub prefijo: String,
    pub siguiente: u64,
    pub desde: u64,
    pub hasta: u64,
    pub restantes: u64,
    pub vigencia_hasta: String,
}

#[utoipa::path(get, path = "/v1/api/facturacion/consecutivo/{tipo}", operation_id = "getNextNumber", tag = "facturacion",
    security(("api_key" = [])),
    params(("tipo" = String, Path, description = "1-10 or fe nc nd ds na fx t03 t04 pos nap")),
    responses((status = 200, description = "next number", body = inline(envelope::Envelope<NextNumber>)),
              (status = 422, description = "unknown type or no valid resolution", body = crate::http::error::ErrorEnvelope)))]
#[get("/facturacion/consecutivo/{tipo}")]
pub async fn next_number(
    state: web::Data<AppState>,
    ctx: AuthContext,
    tipo: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let doc_type = document_type(&tipo).ok_or_else(|| {
        ApiError::validation(
            "tipo",
            "must be 1-10 or one of fe nc nd ds na fx t03 t04 pos nap",
        )
    })?;
    let today = colombia_now().date_naive();
    // The key's environment decides: a `sk_test_` key numbers from the
    // authority's test set for the type (decisions.md §5).
    let r = state
        .store
        .active_resolution(ctx.company_id, ctx.environment, doc_type, today)
        .await?
        .ok_or_else(|| {
            ApiError::validation(
                "tipo",
                format!(
                    "no valid numbering resolution for type {doc_type} in the {} environment",
                    ctx.environment.name()
                ),
            )
        })?;
    let next = state.store.next_number(r.clone()).await?;
    Ok(envelope::ok(
        "Consecutivo",
        NextNumber {
            prefijo: r.prefix.clone(),
            siguiente: next,
            desde: r.from,
            hasta: r.to,
            restantes: (r.to + 1).saturating_sub(next),
            vigencia_hasta: r.valid_to.to_string(),
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Subscription {
    pub plan: String,
    pub limite: u64,
    pub usados: u64,
    pub disponibles: u64,
    pub periodo_inicio: String,
    pub periodo_fin: String,
}

/// The calendar month of `date` (Colombian time).
pub fn month_bounds(date: NaiveDate) -> (NaiveDate, NaiveDate) {
    let start = date.with_day(1).unwrap_or(date);
    let next = if date.month() == 12 {
        NaiveDate::from_ymd_opt(date.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(date.year(), date.month() + 1, 1)
    };
    let end = next.and_then(|n| n.pred_opt()).unwrap_or(date);
    (start, end)
}

#[utoipa::path(get, path = "/v1/api/facturacion/suscripcion", operation_id = "getSubscription", tag = "facturacion",
    security(("api_key" = [])),
    responses((status = 200, description = "documents used and available this month", body = inline(envelope::Envelope<Subscription>))))]
#[get("/facturacion/suscripcion")]
pub async fn subscription(state: web::Data<AppState>, ctx: AuthContext) -> ApiResult<HttpResponse> {
    let company = state
        .store
        .company(ctx.company_id)
        .await?
        .ok_or_else(|| ApiError::NotFound("company".into()))?;
    let today = colombia_now().date_naive();
    let period = today.year() as u32 * 100 + today.month();
    let used = state.store.monthly_usage(company.id, period).await?;
    let (limit, plan) = match company.monthly_document_limit {
        Some(l) => (u64::from(l), "personalizado"),
        None => (DEFAULT_MONTHLY_LIMIT, "estandar"),
    };
    let (start, end) = month_bounds(today);
    Ok(envelope::ok(
        "Suscripción",
        Subscription {
            plan: plan.into(),
            limite: limit,
            usados: used,
            disponibles: limit.saturating_sub(used),
            periodo_inicio: start.to_string(),
            periodo_fin: end.to_string(),
        },
    ))
}
