//! `GET /console/empresas/{id}`: a company. Its certificate (subject,
//! serial, validity end, days left) and the upload form; its invoicing and
//! payroll software; its numbering resolutions with what is left of each
//! range and its validity end (`operator::warnings`, the figures of
//! `GET /admin/companies/{id}`); its API keys (create, revoke); its webhook
//! and limits; its enablement test set. Live: the page refreshes when the
//! stream of the signed-in user tells of a change.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use emisor_store::{ApiKeyRecord, Company, Environment, SoftwareKind, SoftwareRegistration};
use maud::{html, Markup};
use serde::Deserialize;

use super::{company_path, list, notice, PATH};
use crate::admin::test_set_run::{self, TestSetRun};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::guard::Signed;
use crate::console::views::type_name;
use crate::console::{format, headers, layout};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::operator::warnings::evaluate::Alertas;

#[derive(Deserialize)]
pub struct Query {
    ok: Option<String>,
}

/// The page's forms, to show a refusal at the one that was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Certificate,
    Software,
    Keys,
    Webhook,
    Limits,
    TestSet,
}

/// A refusal to show at its form.
pub struct Refusal {
    pub form: Form,
    pub message: String,
}

/// What the page reads.
struct Facts {
    company: Company,
    alertas: Alertas,
    certificate: Option<emisor_store::CertificateRecord>,
    software: Vec<(SoftwareKind, Option<SoftwareRegistration>)>,
    resolutions: Vec<(emisor_store::NumberingResolution, u64)>,
    keys: Vec<ApiKeyRecord>,
    run: Option<TestSetRun>,
    deliveries: Vec<emisor_store::EventRecord>,
}

/// Webhook delivery attempts shown (the admin API lists 100).
const DELIVERIES: usize = 10;

async fn facts(state: &AppState, id: u64) -> ConsoleResult<Facts> {
    let company = state
        .store
        .company(id)
        .await?
        .ok_or_else(|| ConsoleError::NotFound(format!("empresa {id}")))?;
    let alertas =
        crate::operator::warnings::current(&state.store, &state.settings.warnings, &company)
            .await?;
    let mut software = Vec::new();
    for kind in [SoftwareKind::Invoicing, SoftwareKind::Payroll] {
        software.push((kind, state.store.software(id, kind).await?));
    }
    let mut resolutions = Vec::new();
    for r in state.store.resolutions(id).await? {
        let next = state.store.next_number(r.clone()).await?;
        resolutions.push((r, next));
    }
    Ok(Facts {
        alertas,
        certificate: state.store.certificate(id).await?,
        software,
        resolutions,
        keys: state.store.api_keys(id).await?,
        run: test_set_run::load(&state.issuing, id).await?,
        deliveries: state
            .store
            .events(id, crate::issuing::webhooks::DELIVERY_EVENT, DELIVERIES)
            .await?,
        company,
    })
}

/// The page, with a notice or a refusal at its form.
pub async fn render(
    state: &AppState,
    signed: &Signed,
    id: u64,
    ok: Option<&str>,
    refusal: Option<&Refusal>,
) -> ConsoleResult<String> {
    let f = facts(state, id).await?;
    let error_at = |form: Form| -> Markup {
        html! {
            @if let Some(r) = refusal.filter(|r| r.form == form) {
                p.error role="alert" { (r.message) }
            }
        }
    };
    let base = company_path(id);
    let content = html! {
        p { a href=(PATH) { "← Empresas" } }
        @if let Some(text) = notice(ok) { p.notice role="status" { (text) } }
        section.card {
            dl.facts {
                dt { "NIT" } dd { (f.company.nit) "-" (f.company.dv) }
                dt { "Número interno" } dd { "#" (f.company.id) }
                dt { "Municipio" } dd { (f.company.municipality_name) " (" (f.company.department_name) ")" }
                dt { "Creada" } dd { (format::instant(f.company.created_at)) }
                dt { "Habilitación" } dd { (list::enablement(f.run.as_ref())) }
            }
        }
        section.card id="certificado" {
            h2 { "Certificado de firma" }
            (certificate(&f))
            (error_at(Form::Certificate))
            form method="post" action={ (base) "/certificado" } enctype="multipart/form-data" {
                (layout::csrf_field(signed))
                label for="archivo" { "Archivo .p12 / .pfx" }
                input id="archivo" type="file" name="archivo" accept=".p12,.pfx,application/x-pkcs12" required;
                label for="clave" { "Contraseña del archivo" }
                input id="clave" type="password" name="clave" autocomplete="off" required;
                div.actions { button type="submit" { "Cargar certificado" } }
            }
        }
        section.card id="software" {
            h2 { "Software ante la autoridad" }
            (software(&f))
            (error_at(Form::Software))
            (software_form(signed, &base))
        }
        section.card id="numeracion" {
            h2 { "Numeración (resoluciones)" }
            (resolutions(&f))
        }
        section.card id="llaves" {
            h2 { "Llaves API" }
            (keys(signed, &base, &f.keys))
            (error_at(Form::Keys))
            (key_form(signed, &base))
        }
        section.card id="webhook" {
            h2 { "Webhook" }
            (webhook(&f.company))
            (deliveries(&f.deliveries))
            (error_at(Form::Webhook))
            form method="post" action={ (base) "/webhook" } {
                (layout::csrf_field(signed))
                label for="url" { "URL (vacía: sin webhook)" }
                input id="url" type="url" name="url" value=(f.company.webhook_url.as_deref().unwrap_or_default());
                div.actions { button type="submit" { "Guardar URL" } }
            }
        }
        section.card id="limites" {
            h2 { "Límites" }
            (error_at(Form::Limits))
            (limits_form(signed, &base, &f.company))
        }
        section.card id="set-pruebas" {
            h2 { "Set de pruebas (habilitación)" }
            (run_summary(f.run.as_ref(), &base))
            (error_at(Form::TestSet))
            (super::test_set::start_form(signed, &base))
        }
    };
    let title = f.company.name.clone();
    Ok(layout::page(signed, PATH, &title, true, content).into_string())
}

pub async fn show(
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
    query: web::Query<Query>,
) -> ConsoleResult<HttpResponse> {
    signed.require_admin()?;
    let body = render(&state, &signed, id.into_inner(), query.ok.as_deref(), None).await?;
    Ok(headers::page(HttpResponse::Ok()).body(body))
}

/// A change the admin code refused: the page again, the API's message at
/// the form, the API's status.
pub async fn refused(
    state: &AppState,
    signed: &Signed,
    id: u64,
    form: Form,
    e: ApiError,
) -> ConsoleResult<HttpResponse> {
    let (status, message): (StatusCode, String) = list::refused(e)?;
    let body = render(state, signed, id, None, Some(&Refusal { form, message })).await?;
    Ok(headers::page(HttpResponse::build(status)).body(body))
}

fn days(n: i64) -> String {
    match n {
        1 => "1 día".into(),
        n => format!("{n} días"),
    }
}

fn certificate(f: &Facts) -> Markup {
    let Some(c) = f.certificate.as_ref() else {
        return html! { p.muted { "Sin certificado: los documentos no se pueden firmar." } };
    };
    let left = f
        .alertas
        .certificado
        .as_ref()
        .map(|a| (a.dias_restantes, a.en_alerta))
        .unwrap_or_else(|| ((c.not_after - chrono::Utc::now()).num_days(), false));
    html! {
        dl.facts {
            dt { "Sujeto" } dd { (c.subject) }
            dt { "Emisor" } dd { (c.issuer) }
            dt { "Serie" } dd { code { (c.serial) } }
            dt { "Vigente desde" } dd { (format::instant(c.not_before)) }
            dt { "Vence" } dd { (format::instant(c.not_after)) }
            dt { "Días restantes" } dd {
                span class=(if left.1 || left.0 < 0 { "badge bad" } else { "badge ok" }) { (days(left.0)) }
            }
            dt { "Cargado" } dd { (format::instant(c.imported_at)) }
        }
    }
}

fn kind_name(kind: SoftwareKind) -> &'static str {
    match kind {
        SoftwareKind::Invoicing => "Facturación",
        SoftwareKind::Payroll => "Nómina",
    }
}

fn software(f: &Facts) -> Markup {
    html! {
        div.table-wrap { table.rows {
            thead { tr { th { "Tipo" } th { "Software id" } th { "Set de pruebas (TestSetId)" } th { "Proveedor" } th { "Registrado" } } }
            tbody {
                @for (kind, reg) in &f.software {
                    tr {
                        td data-label="Tipo" { (kind_name(*kind)) }
                        @match reg {
                            Some(r) => {
                                td data-label="Software id" { code { (r.software_id) } }
                                td data-label="Set de pruebas" { (r.test_set_id.as_deref().unwrap_or("—")) }
                                td data-label="Proveedor" { (r.provider_nit) "-" (r.provider_dv) }
                                td data-label="Registrado" { (format::instant(r.registered_at)) }
                            }
                            None => { td data-label="Software id" colspan="4" { span.muted { "sin registrar" } } }
                        }
                    }
                }
            }
        } }
    }
}

fn software_form(signed: &Signed, base: &str) -> Markup {
    html! {
        form method="post" action={ (base) "/software" } {
            (layout::csrf_field(signed))
            label for="s-tipo" { "Tipo" }
            select id="s-tipo" name="tipo" {
                option value="facturacion" { "Facturación" }
                option value="nomina" { "Nómina" }
            }
            label for="s-id" { "Software id" }
            input id="s-id" type="text" name="software_id" required;
            label for="s-pin" { "PIN" }
            input id="s-pin" type="password" name="pin" autocomplete="off" required;
            label for="s-set" { "TestSetId (opcional)" }
            input id="s-set" type="text" name="test_set_id";
            label for="s-nit" { "NIT del proveedor (opcional: la empresa misma)" }
            input id="s-nit" type="text" name="proveedor_nit";
            div.actions { button type="submit" { "Registrar software" } }
        }
    }
}

fn resolutions(f: &Facts) -> Markup {
    if f.resolutions.is_empty() {
        return html! { p.muted { "Sin resoluciones." } };
    }
    html! {
        div.table-wrap { table.rows {
            thead { tr {
                th { "Tipo" } th { "Resolución" } th { "Rango" } th.num { "Siguiente" }
                th.num { "Quedan" } th { "Vigente hasta" } th { "Estado" }
            } }
            tbody {
                @for (r, next) in &f.resolutions {
                    @let left = f.alertas.numeracion.iter().find(|n| n.id_resolucion == r.id);
                    @let valid = f.alertas.vigencias.iter().find(|v| v.id_resolucion == r.id);
                    @let remaining = left.map_or_else(|| (r.to + 1).saturating_sub(*next), |n| n.restantes);
                    tr {
                        td data-label="Tipo" { (type_name(r.document_type)) }
                        td data-label="Resolución" { (r.resolution_number) " (" (format::date(r.resolution_date)) ")" }
                        td data-label="Rango" { (r.prefix) (r.from) " – " (r.prefix) (r.to) }
                        td.num data-label="Siguiente" { (r.prefix) (next) }
                        td.num data-label="Quedan" {
                            (remaining)
                            @if let Some(d) = left.and_then(|n| n.dias_para_agotarse) {
                                br; span.muted { "se agota en unos " (days(d as i64)) }
                            }
                        }
                        td data-label="Vigente hasta" {
                            (format::date(r.valid_to))
                            @if let Some(v) = valid { br; span.muted { (days(v.dias_restantes)) } }
                        }
                        td data-label="Estado" {
                            @if left.is_some_and(|n| n.en_alerta) || valid.is_some_and(|v| v.en_alerta) {
                                span.badge.bad { "Requiere atención" }
                            } @else {
                                span.badge.ok { "Bien" }
                            }
                        }
                    }
                }
            }
        } }
    }
}

fn environment_name(e: Environment) -> &'static str {
    match e {
        Environment::Test => "Pruebas",
        Environment::Live => "Producción",
    }
}

fn keys(signed: &Signed, base: &str, keys: &[ApiKeyRecord]) -> Markup {
    if keys.is_empty() {
        return html! { p.muted { "Sin llaves." } };
    }
    html! {
        div.table-wrap { table.rows {
            thead { tr {
                th { "Llave" } th { "Ambiente" } th { "Etiqueta" } th { "Creada" } th { "Estado" } th { "" }
            } }
            tbody {
                @for k in keys {
                    tr {
                        td data-label="Llave" { code { (k.display_prefix) "…" } " " span.muted { "#" (k.id) } }
                        td data-label="Ambiente" { (environment_name(k.environment)) }
                        td data-label="Etiqueta" {
                            (k.label.as_deref().unwrap_or("—"))
                            @if let Some(u) = k.user_id { " " span.muted { "(usuario " (u) ")" } }
                        }
                        td data-label="Creada" { (format::instant(k.created_at)) }
                        td data-label="Estado" {
                            @match k.revoked_at {
                                Some(at) => span.badge.bad { "Revocada el " (format::instant(at)) },
                                None => span.badge.ok { "Activa" },
                            }
                        }
                        td {
                            @if k.revoked_at.is_none() {
                                form.inline method="post" action={ (base) "/llaves/" (k.id) "/revocar" }
                                    data-confirm="¿Revocar esta llave? La API la rechazará desde ya y sus sesiones de consola terminarán." {
                                    (layout::csrf_field(signed))
                                    button.danger type="submit" { "Revocar" }
                                }
                            }
                        }
                    }
                }
            }
        } }
    }
}

fn key_form(signed: &Signed, base: &str) -> Markup {
    html! {
        h3 { "Crear una llave" }
        form method="post" action={ (base) "/llaves" } {
            (layout::csrf_field(signed))
            label for="k-ambiente" { "Ambiente" }
            select id="k-ambiente" name="ambiente" {
                option value="test" { "Pruebas (sk_test_)" }
                option value="live" { "Producción (sk_live_)" }
            }
            label for="k-label" { "Etiqueta (opcional)" }
            input id="k-label" type="text" name="label";
            label for="k-user" { "Usuario (opcional: número del integrador)" }
            input id="k-user" type="text" inputmode="numeric" name="user_id";
            div.actions { button type="submit" { "Crear llave" } }
        }
    }
}

fn webhook(c: &Company) -> Markup {
    html! {
        dl.facts {
            dt { "URL" } dd {
                @match c.webhook_url.as_deref() {
                    Some(url) => code { (url) },
                    None => span.muted { "sin webhook" },
                }
            }
            dt { "Eventos" } dd { "Los mismos que el WebSocket de la empresa, firmados con HMAC-SHA256." }
            dt { "Secreto de firma" } dd {
                @if c.webhook_secret.is_some() {
                    "Configurado (se mostró una sola vez, al poner la primera URL)."
                } @else {
                    span.muted { "Se crea al poner la primera URL." }
                }
            }
        }
    }
}

fn deliveries(events: &[emisor_store::EventRecord]) -> Markup {
    let text = |e: &emisor_store::EventRecord, k: &str| -> String {
        match e.data.get(k) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    };
    html! {
        h3 { "Últimas entregas" }
        @if events.is_empty() {
            p.muted { "Ninguna." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr { th { "Cuándo" } th { "Evento" } th { "Intento" } th { "Resultado" } } }
                tbody {
                    @for e in events.iter().rev() {
                        tr {
                            td data-label="Cuándo" { (format::instant_s(e.at)) }
                            td data-label="Evento" { (text(e, "event")) }
                            td data-label="Intento" { (text(e, "attempt")) }
                            td data-label="Resultado" {
                                (text(e, "status")) " " (text(e, "http_status"))
                                " " span.muted { (text(e, "error")) }
                            }
                        }
                    }
                }
            } }
        }
    }
}

fn limits_form(signed: &Signed, base: &str, c: &Company) -> Markup {
    let rate = c
        .rate_limit_per_minute
        .map(|n| n.to_string())
        .unwrap_or_default();
    let monthly = c
        .monthly_document_limit
        .map(|n| n.to_string())
        .unwrap_or_default();
    html! {
        form method="post" action={ (base) "/limites" } {
            (layout::csrf_field(signed))
            label for="l-rate" { "Solicitudes por minuto (vacío: sin cambio)" }
            input id="l-rate" type="text" inputmode="numeric" name="rate_limit_per_minute" value=(rate);
            label for="l-month" { "Documentos por mes (vacío: sin cambio)" }
            input id="l-month" type="text" inputmode="numeric" name="limite_documentos_mes" value=(monthly);
            div.actions { button type="submit" { "Guardar límites" } }
        }
    }
}

fn run_summary(run: Option<&TestSetRun>, base: &str) -> Markup {
    let Some(r) = run else {
        return html! { p.muted { "Sin ejecuciones." } };
    };
    html! {
        p {
            (list::enablement(Some(r))) " "
            (r.enviados) " de " (r.total) " enviados · " (r.aceptados) " aceptados · "
            (r.rechazados) " rechazados · " (r.pendientes) " pendientes"
        }
        p { a href={ (base) "/set-pruebas" } { "Ver el progreso" } }
    }
}
