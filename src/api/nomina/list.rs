//! `GET /nomina/listar`: a page of the key's company's payrolls, newest
//! first, from the document index (spec 4.5, decisions.md §4): `page`,
//! `limit`, `tipo` (`INDIVIDUAL` | `AJUSTE`), `estado` (the payroll state
//! names, several separated by commas), `fecha_desde`, `fecha_hasta`.

use actix_web::{get, web, HttpResponse};
use emisor_store::Family;
use serde::Deserialize;
use utoipa::IntoParams;

use super::responses::{record, states_of, PayrollRecord};
use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::query::{ListPage, ListParams, Query};
use crate::http::state::AppState;

/// The payroll filters besides the common ones.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PayrollFilters {
    /// `INDIVIDUAL` or `AJUSTE`.
    pub tipo: Option<String>,
    /// Optional; when given it must be the key's company.
    pub id_empresa: Option<u64>,
}

/// `estado` as payroll names (`borrador`, `enviada`, `aceptada`,
/// `rechazada`, `error`), several separated by commas; empty: all.
fn states(estado: Option<&str>) -> ApiResult<Vec<u8>> {
    let Some(estado) = estado.filter(|e| !e.trim().is_empty()) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for name in estado.split(',') {
        let found = states_of(&name.trim().to_ascii_lowercase()).ok_or_else(|| {
            ApiError::validation(
                "estado",
                "must be borrador, enviada, aceptada, rechazada or error (several separated by commas)",
            )
        })?;
        out.extend_from_slice(found);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[utoipa::path(get, path = "/v1/api/nomina/listar", operation_id = "listPayrolls", tag = "nomina",
    security(("api_key" = [])),
    params(ListParams, PayrollFilters),
    responses((status = 200, description = "a page of the company's payrolls, newest first", body = inline(envelope::Envelope<ListPage<PayrollRecord>>)),
              (status = 422, description = "bad paging, date, tipo or estado", body = crate::http::error::ErrorEnvelope)))]
#[get("/nomina/listar")]
pub async fn listar(
    state: web::Data<AppState>,
    ctx: AuthContext,
    params: Query<ListParams>,
    filters: Query<PayrollFilters>,
) -> ApiResult<HttpResponse> {
    if let Some(id) = filters.id_empresa {
        ctx.ensure_company(id)?;
    }
    let mut keys = Vec::new();
    if let Some(tipo) = filters.tipo.as_deref().filter(|t| !t.trim().is_empty()) {
        let tipo = tipo.trim().to_ascii_uppercase();
        if tipo != "INDIVIDUAL" && tipo != "AJUSTE" {
            return Err(ApiError::validation("tipo", "must be INDIVIDUAL or AJUSTE"));
        }
        keys.push(("tipo".to_string(), tipo));
    }
    let states = states(params.estado.as_deref())?;
    let query = params.query_with_states(&ctx, Family::Payroll, states, keys)?;
    let page = state.store.list_documents(query).await?;
    Ok(envelope::ok("Nóminas", ListPage::of(page, |d| record(&d))))
}
