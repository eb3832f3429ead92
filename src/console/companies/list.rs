//! `GET /console/empresas`: every company with its NIT and where it stands
//! with the authority (enablement test set, certificate, keys by
//! environment), the form that creates one (`POST`, the admin API's
//! create), and the backups.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use emisor_store::{Company, Environment};
use maud::{html, Markup};
use serde::Deserialize;

use super::{backups, given, notice, number, PATH};
use crate::admin::test_set_run::{self, TestSetRun};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::format;
use crate::console::guard::{Posted, Signed};
use crate::console::{headers, layout};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::provisioning::companies::CompanyRequest;

#[derive(Deserialize)]
pub struct Query {
    ok: Option<String>,
}

/// The create form as typed (every field text; empty = not given).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct NewCompany {
    nit: String,
    dv: String,
    razon_social: String,
    nombre_comercial: String,
    direccion: String,
    municipio_codigo: String,
    municipio_nombre: String,
    departamento_codigo: String,
    departamento_nombre: String,
    email: String,
    telefono: String,
    tipo_organizacion: String,
    regimen: String,
    responsabilidades: String,
}

impl NewCompany {
    /// The admin API's request; a number that is not one is refused as the
    /// API refuses it.
    fn request(&self) -> Result<CompanyRequest, ApiError> {
        Ok(CompanyRequest {
            nit: self.nit.trim().to_string(),
            dv: number("dv", &self.dv)?,
            razon_social: self.razon_social.trim().to_string(),
            nombre_comercial: given(&self.nombre_comercial),
            direccion: given(&self.direccion),
            municipio_codigo: given(&self.municipio_codigo),
            municipio_nombre: given(&self.municipio_nombre),
            departamento_codigo: given(&self.departamento_codigo),
            departamento_nombre: given(&self.departamento_nombre),
            email: given(&self.email),
            telefono: given(&self.telefono),
            tipo_organizacion: number("tipo_organizacion", &self.tipo_organizacion)?,
            regimen: given(&self.regimen),
            responsabilidades: given(&self.responsabilidades),
            ..CompanyRequest::default()
        })
    }
}

/// One company's row.
struct Row {
    company: Company,
    run: Option<TestSetRun>,
    certificate_until: Option<chrono::DateTime<chrono::Utc>>,
    keys: (usize, usize),
}

async fn rows(state: &AppState) -> ConsoleResult<Vec<Row>> {
    let mut rows = Vec::new();
    for company in state.store.companies().await? {
        let run = test_set_run::load(&state.issuing, company.id).await?;
        let certificate_until = state
            .store
            .certificate(company.id)
            .await?
            .map(|c| c.not_after);
        let keys = state.store.api_keys(company.id).await?;
        let live = |env: Environment| {
            keys.iter()
                .filter(|k| k.environment == env && k.revoked_at.is_none())
                .count()
        };
        let keys = (live(Environment::Test), live(Environment::Live));
        rows.push(Row {
            company,
            run,
            certificate_until,
            keys,
        });
    }
    Ok(rows)
}

/// Where a company stands with the authority, by its last test set run.
pub fn enablement(run: Option<&TestSetRun>) -> Markup {
    match run.map(|r| r.estado.as_str()) {
        None => html! { span.badge { "Sin set de pruebas" } },
        Some("aceptado") => html! { span.badge.ok { "Set de pruebas aceptado" } },
        Some("rechazado") => html! { span.badge.bad { "Set de pruebas rechazado" } },
        Some(_) => html! { span.badge.wait { "Set de pruebas en curso" } },
    }
}

async fn render(
    state: &AppState,
    signed: &Signed,
    ok: Option<&str>,
    form: &NewCompany,
    error: Option<&str>,
) -> ConsoleResult<String> {
    let rows = rows(state).await?;
    let backups = backups::section(state, signed).await;
    let content = html! {
        @if let Some(text) = notice(ok) { p.notice role="status" { (text) } }
        section {
            h2 { "Empresas" }
            @if rows.is_empty() {
                p.muted { "Ninguna todavía." }
            } @else {
                div.table-wrap { table.rows {
                    thead { tr {
                        th { "Empresa" } th { "NIT" } th { "Habilitación" }
                        th { "Certificado" } th { "Llaves activas" }
                    } }
                    tbody {
                        @for row in &rows {
                            tr {
                                td data-label="Empresa" {
                                    a href={ (PATH) "/" (row.company.id) } { (row.company.name) }
                                    " " span.muted { "#" (row.company.id) }
                                    @if row.company.demo { " " span.badge { "demo" } }
                                }
                                td data-label="NIT" { (row.company.nit) "-" (row.company.dv) }
                                td data-label="Habilitación" { (enablement(row.run.as_ref())) }
                                td data-label="Certificado" {
                                    @match row.certificate_until {
                                        Some(until) => { "vence el " (format::instant(until)) }
                                        None => span.muted { "sin certificado" },
                                    }
                                }
                                td data-label="Llaves activas" {
                                    "pruebas: " (row.keys.0) " · producción: " (row.keys.1)
                                }
                            }
                        }
                    }
                } }
            }
        }
        section.card id="nueva" {
            h2 { "Crear una empresa" }
            @if let Some(e) = error { p.error role="alert" { (e) } }
            (create_form(signed, form))
        }
        (backups)
    };
    let body = layout::page(signed, PATH, "Empresas", true, content);
    Ok(body.into_string())
}

fn field(label: &str, name: &str, value: &str, required: bool) -> Markup {
    html! {
        label for={ "c-" (name) } { (label) }
        input id={ "c-" (name) } type="text" name=(name) value=(value) required[required];
    }
}

fn create_form(signed: &Signed, f: &NewCompany) -> Markup {
    html! {
        form method="post" action=(PATH) {
            (layout::csrf_field(signed))
            (field("NIT (sin dígito de verificación)", "nit", &f.nit, true))
            (field("Dígito de verificación (opcional: se calcula)", "dv", &f.dv, false))
            (field("Razón social", "razon_social", &f.razon_social, true))
            (field("Nombre comercial", "nombre_comercial", &f.nombre_comercial, false))
            (field("Dirección", "direccion", &f.direccion, false))
            (field("Código de municipio (DIVIPOLA)", "municipio_codigo", &f.municipio_codigo, false))
            (field("Municipio", "municipio_nombre", &f.municipio_nombre, false))
            (field("Código de departamento", "departamento_codigo", &f.departamento_codigo, false))
            (field("Departamento", "departamento_nombre", &f.departamento_nombre, false))
            (field("Correo", "email", &f.email, false))
            (field("Teléfono", "telefono", &f.telefono, false))
            label for="c-tipo_organizacion" { "Tipo de organización" }
            select id="c-tipo_organizacion" name="tipo_organizacion" {
                option value="1" selected[f.tipo_organizacion != "2"] { "1 · Persona jurídica" }
                option value="2" selected[f.tipo_organizacion == "2"] { "2 · Persona natural" }
            }
            label for="c-regimen" { "Régimen" }
            select id="c-regimen" name="regimen" {
                option value="48" selected[f.regimen != "49"] { "48 · Responsable de IVA" }
                option value="49" selected[f.regimen == "49"] { "49 · No responsable de IVA" }
            }
            (field("Responsabilidades fiscales (por omisión R-99-PN)", "responsabilidades", &f.responsabilidades, false))
            div.actions { button type="submit" { "Crear empresa" } }
        }
    }
}

pub async fn show(
    state: web::Data<AppState>,
    signed: Signed,
    query: web::Query<Query>,
) -> ConsoleResult<HttpResponse> {
    signed.require_admin()?;
    let body = render(
        &state,
        &signed,
        query.ok.as_deref(),
        &NewCompany::default(),
        None,
    )
    .await?;
    Ok(headers::page(HttpResponse::Ok()).body(body))
}

/// `POST /console/empresas`: the admin API's create (never a demo
/// company: its keys answer belongs to the API).
pub async fn create(
    state: web::Data<AppState>,
    posted: Posted<NewCompany>,
) -> ConsoleResult<HttpResponse> {
    let Posted { signed, form } = posted;
    signed.require_admin()?;
    let created = match form.request() {
        Ok(request) => crate::admin::companies::create_plain(&state, request).await,
        Err(e) => Err(e),
    };
    match created {
        Ok(company) => Ok(super::done(&super::company_path(company.id), "creada")),
        Err(e) => {
            let status = refused(e)?;
            let message = status.1;
            let body = render(&state, &signed, None, &form, Some(&message)).await?;
            Ok(headers::page(HttpResponse::build(status.0)).body(body))
        }
    }
}

/// A refusal shown at its form (a 4xx with the API's message); anything
/// else is the console's error page.
pub fn refused(e: ApiError) -> Result<(StatusCode, String), ConsoleError> {
    use actix_web::ResponseError;
    let status = e.status_code();
    if status.is_client_error() && !matches!(e, ApiError::NotFound(_)) {
        Ok((status, e.to_string()))
    } else {
        Err(e.into())
    }
}
