//! The enablement test set: `POST /console/empresas/{id}/set-pruebas`
//! starts a run (the admin API's `start_run`: the same plan checks and the
//! same refusal while one is in progress), `GET` shows its progress.
//!
//! A run's progress is stored as it goes but tells the hub nothing, so the
//! live stream cannot refresh it: while the run is in progress the
//! progress page reloads itself every [`REFRESH_S`] seconds (a `<meta
//! http-equiv="refresh">`, no script), and stops once the run is over.

use actix_web::{web, HttpResponse};
use maud::{html, Markup};
use serde::Deserialize;

use super::page::{refused, Form};
use super::{company_path, list, notice, number, PATH};
use crate::admin::test_set_run::{self, TestSetPlan};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::guard::{Posted, Signed};
use crate::console::{format, headers, layout};
use crate::http::state::AppState;

/// Seconds between reloads of a run in progress.
pub const REFRESH_S: u32 = 5;

#[derive(Deserialize)]
pub struct Query {
    ok: Option<String>,
}

#[derive(Deserialize)]
pub struct Plan {
    #[serde(default)]
    facturas: String,
    #[serde(default)]
    notas_credito: String,
    #[serde(default)]
    notas_debito: String,
}

impl Plan {
    /// The admin API's plan; an empty field keeps its default.
    fn plan(&self) -> Result<TestSetPlan, crate::http::error::ApiError> {
        let d = TestSetPlan::default();
        Ok(TestSetPlan {
            facturas: number("facturas", &self.facturas)?.unwrap_or(d.facturas),
            notas_credito: number("notas_credito", &self.notas_credito)?.unwrap_or(d.notas_credito),
            notas_debito: number("notas_debito", &self.notas_debito)?.unwrap_or(d.notas_debito),
        })
    }
}

/// The form on the company's page.
pub fn start_form(signed: &Signed, base: &str) -> Markup {
    let d = TestSetPlan::default();
    html! {
        form method="post" action={ (base) "/set-pruebas" }
            data-confirm="¿Iniciar el set de pruebas? Envía los documentos a la autoridad con el TestSetId del software de facturación." {
            (layout::csrf_field(signed))
            label for="t-f" { "Facturas" }
            input id="t-f" type="text" inputmode="numeric" name="facturas" value=(d.facturas);
            label for="t-nc" { "Notas crédito" }
            input id="t-nc" type="text" inputmode="numeric" name="notas_credito" value=(d.notas_credito);
            label for="t-nd" { "Notas débito" }
            input id="t-nd" type="text" inputmode="numeric" name="notas_debito" value=(d.notas_debito);
            div.actions { button type="submit" { "Iniciar set de pruebas" } }
        }
    }
}

pub async fn start(
    state: web::Data<AppState>,
    id: web::Path<u64>,
    posted: Posted<Plan>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    signed.require_admin()?;
    let id = id.into_inner();
    let started = match form.plan() {
        Ok(plan) => crate::admin::test_set::start_run(&state, id, plan).await,
        Err(e) => Err(e),
    };
    match started {
        Ok(_) => Ok(super::done(
            &format!("{}/set-pruebas", company_path(id)),
            "set-iniciado",
        )),
        Err(e) => refused(&state, &signed, id, Form::TestSet, e).await,
    }
}

pub async fn show(
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
    query: web::Query<Query>,
) -> ConsoleResult<HttpResponse> {
    signed.require_admin()?;
    let id = id.into_inner();
    let company = state
        .store
        .company(id)
        .await?
        .ok_or_else(|| ConsoleError::NotFound(format!("empresa {id}")))?;
    let run = test_set_run::load(&state.issuing, id).await?;
    let base = company_path(id);
    let here = format!("{base}/set-pruebas");
    let running = run.as_ref().is_some_and(|r| r.estado == "en_progreso");
    let content = html! {
        p { a href=(base) { "← " (company.name) } }
        @if let Some(text) = notice(query.ok.as_deref()) { p.notice role="status" { (text) } }
        @match run.as_ref() {
            None => p.muted { "Esta empresa no ha corrido el set de pruebas." },
            Some(r) => {
                section.card {
                    p { (list::enablement(Some(r))) }
                    dl.facts {
                        dt { "TestSetId" } dd { code { (r.test_set_id) } }
                        dt { "Documentos" } dd { (r.total) }
                        dt { "Enviados" } dd { (r.enviados) }
                        dt { "Aceptados" } dd { (r.aceptados) }
                        dt { "Rechazados" } dd { (r.rechazados) }
                        dt { "Pendientes" } dd { (r.pendientes) }
                        dt { "Iniciado" } dd { (format::instant_s(r.iniciado)) }
                        dt { "Terminado" } dd { (r.terminado.map(format::instant_s).unwrap_or_else(|| "—".into())) }
                    }
                    @if running {
                        p.muted { "Esta página se recarga cada " (REFRESH_S) " segundos mientras el set avanza." }
                    }
                }
                @if !r.documentos.is_empty() {
                    div.table-wrap { table.rows {
                        thead { tr { th { "Número" } th { "Estado" } th { "Errores" } } }
                        tbody {
                            @for d in &r.documentos {
                                tr {
                                    td data-label="Número" { a href={ "/console/documentos/" (d.id) } { (d.numero) } }
                                    td data-label="Estado" { (d.estado) }
                                    td data-label="Errores" class="rules" { @for e in &d.errores { div { (e) } } }
                                }
                            }
                        }
                    } }
                }
            }
        }
    };
    let refresh = running.then_some((REFRESH_S, here.as_str()));
    let body = layout::page_refreshing(&signed, PATH, "Set de pruebas", false, refresh, content);
    Ok(headers::page(HttpResponse::Ok()).body(body.into_string()))
}
