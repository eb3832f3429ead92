//! `/admin/companies`: create (plain or `demo: true`), list, read, update limits.

use actix_web::{get, patch, post, web, HttpMessage, HttpRequest, HttpResponse};
use emisor_store::{Company, SecretText};
use serde::Deserialize;
use utoipa::ToSchema;

use super::auth::AdminToken;
use super::views::CompanyView;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::json::Json;
use crate::http::state::AppState;
use crate::provisioning::companies::{create_company, CompanyRequest};
use crate::provisioning::demo::{provision_demo_company, DemoKeys};

/// Creates a company. With `demo: true` it is provisioned like the demo
/// company and the answer has the `demo-keys.json` shape.
#[utoipa::path(post, path = "/admin/companies", operation_id = "createCompany", tag = "admin",
    security(("admin_token" = [])),
    request_body = CompanyRequest,
    responses((status = 201, description = "created: a company, or DemoKeys when demo", body = inline(envelope::Envelope<DemoKeys>)),
              (status = 409, description = "NIT already registered", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "invalid", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies")]
pub async fn create(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: Json<CompanyRequest>,
) -> ApiResult<HttpResponse> {
    let request = body.0;
    let token = req
        .extensions()
        .get::<AdminToken>()
        .map(|t| t.0.clone())
        .unwrap_or_default();
    let st = state.clone();
    if request.demo {
        let sim = state.tax_sim_url.clone().unwrap_or_default();
        let (company, keys) = st
            .store
            .blocking(move |s| provision_demo_company(s, &request, &token, &sim))
            .await??;
        // Its simulator must know it before its first document.
        state.sync_authority(company.id).await;
        Ok(envelope::created("Empresa demo creada", keys))
    } else {
        let company = create_plain(&state, request).await?;
        Ok(envelope::created(
            "Empresa creada",
            CompanyView::from(company),
        ))
    }
}

/// Creates a company (not a demo one): the admin API's and the console's.
pub async fn create_plain(state: &AppState, request: CompanyRequest) -> ApiResult<Company> {
    Ok(state
        .store
        .blocking(move |s| create_company(s, &request))
        .await??)
}

#[utoipa::path(get, path = "/admin/companies", operation_id = "listCompanies", tag = "admin", security(("admin_token" = [])),
    responses((status = 200, description = "all companies", body = inline(envelope::Envelope<Vec<CompanyView>>))))]
#[get("/companies")]
pub async fn list(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let st = state.clone();
    let all = st.store.blocking(move |s| s.companies()).await??;
    Ok(envelope::ok(
        "Empresas",
        all.into_iter().map(CompanyView::from).collect::<Vec<_>>(),
    ))
}

#[utoipa::path(get, path = "/admin/companies/{id}", operation_id = "getCompany", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")),
    description = "The company, with `alertas`: the numbers left in each of its resolutions (and, from the last days' rate, the days until they run out), each resolution's validity end, its certificate's expiry and the month's plan use, each with `en_alerta` when it crossed a `[warnings]` threshold (10 % left, 30 days by default).",
    responses((status = 200, description = "the company", body = inline(envelope::Envelope<CompanyView>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope)))]
#[get("/companies/{id}")]
pub async fn get(state: web::Data<AppState>, id: web::Path<u64>) -> ApiResult<HttpResponse> {
    let st = state.clone();
    let id = id.into_inner();
    let company = st
        .store
        .blocking(move |s| s.company(id))
        .await??
        .ok_or_else(|| ApiError::NotFound("company".into()))?;
    let alertas =
        crate::operator::warnings::current(&state.store, &state.settings.warnings, &company)
            .await?;
    let mut view = CompanyView::from(company);
    view.alertas = Some(alertas);
    Ok(envelope::ok("Empresa", view))
}

/// Per-company settings an operator changes after creation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompanyUpdate {
    pub rate_limit_per_minute: Option<u32>,
    pub limite_documentos_mes: Option<u32>,
    pub webhook_url: Option<String>,
}

#[utoipa::path(patch, path = "/admin/companies/{id}", operation_id = "updateCompany", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")),
    request_body = CompanyUpdate,
    responses((status = 200, description = "updated", body = inline(envelope::Envelope<CompanyView>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope)))]
#[patch("/companies/{id}")]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    body: Json<CompanyUpdate>,
) -> ApiResult<HttpResponse> {
    let (company, new_secret) = apply_update(&state, id.into_inner(), body.0).await?;
    let mut view = CompanyView::from(company);
    view.webhook_secret = new_secret;
    Ok(envelope::ok("Empresa actualizada", view))
}

/// Changes a company's limits and webhook URL (the admin API's and the
/// console's): the company as it now is, and the webhook signing secret
/// when this change made it (the first URL), to be shown once.
pub async fn apply_update(
    state: &AppState,
    id: u64,
    u: CompanyUpdate,
) -> ApiResult<(Company, Option<String>)> {
    if let Some(url) = u.webhook_url.as_deref().filter(|s| !s.is_empty()) {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ApiError::validation(
                "webhook_url",
                "must be an http(s) URL",
            ));
        }
    }
    if u.rate_limit_per_minute == Some(0) {
        return Err(ApiError::validation(
            "rate_limit_per_minute",
            "must be at least 1",
        ));
    }
    let (company, new_secret) = state
        .store
        .blocking(move |s| -> ApiResult<_> {
            let mut c = s
                .company(id)?
                .ok_or_else(|| ApiError::NotFound("company".into()))?;
            let mut new_secret = None;
            if u.rate_limit_per_minute.is_some() {
                c.rate_limit_per_minute = u.rate_limit_per_minute;
            }
            if u.limite_documentos_mes.is_some() {
                c.monthly_document_limit = u.limite_documentos_mes;
            }
            if u.webhook_url.is_some() {
                c.webhook_url = u.webhook_url.filter(|s| !s.is_empty());
                // A signing secret is made once, the first time a URL is set.
                // It is shown in this answer only, like an API key.
                if c.webhook_url.is_some() && c.webhook_secret.is_none() {
                    let secret = format!(
                        "whsec_{}",
                        crate::provisioning::api_keys::generate_secret(
                            emisor_store::Environment::Test
                        )
                        .trim_start_matches("sk_test_")
                    );
                    c.webhook_secret = Some(SecretText::new(secret.clone()));
                    new_secret = Some(secret);
                }
            }
            s.update_company(&c)?;
            Ok((c, new_secret))
        })
        .await??;
    // Cached key contexts carry the old limit, here and on every node.
    state.forget_keys();
    crate::fanout::keys_changed(&state.store).await;
    Ok((company, new_secret))
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct WebhookDelivery {
    pub at: String,
    #[schema(value_type = Object)]
    pub delivery: serde_json::Value,
}

/// The webhook delivery log: every attempt, newest last (last 100).
#[utoipa::path(get, path = "/admin/companies/{id}/webhooks", operation_id = "listWebhookDeliveries", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa")),
    responses((status = 200, description = "delivery attempts", body = inline(envelope::Envelope<Vec<WebhookDelivery>>)),
              (status = 404, description = "no such company", body = crate::http::error::ErrorEnvelope)))]
#[get("/companies/{id}/webhooks")]
pub async fn webhook_log(
    state: web::Data<AppState>,
    id: web::Path<u64>,
) -> ApiResult<HttpResponse> {
    let st = state.clone();
    let id = id.into_inner();
    let events = st
        .store
        .blocking(move |s| -> ApiResult<_> {
            s.company(id)?
                .ok_or_else(|| ApiError::NotFound("company".into()))?;
            Ok(s.events(id, crate::issuing::webhooks::DELIVERY_EVENT, 100)?)
        })
        .await??;
    Ok(envelope::ok(
        "Entregas de webhooks",
        events
            .into_iter()
            .map(|e| WebhookDelivery {
                at: e.at.to_rfc3339(),
                delivery: e.data,
            })
            .collect::<Vec<_>>(),
    ))
}
