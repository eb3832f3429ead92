//! `GET /console/documentos/{id}`: a document. Its number, type, customer,
//! dates, total, state and code; the authority's answer (its rule texts
//! when it was rejected); its history as a timeline; its XML, PDF and ZIP;
//! and the actions the API allows in its state (resend, email, check with
//! the authority), each a form with the sign-in's CSRF token and a
//! confirmation. Live: the page refreshes when the sign-in's stream tells
//! of a change.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use emisor_store::{state, DocumentRecord, HistoryEntry};
use maud::{html, Markup};
use serde::Deserialize;

use super::{document_path, notice, visible, PATH};
use crate::api::facturacion::resend::resendable;
use crate::console::error::ConsoleResult;
use crate::console::guard::Signed;
use crate::console::views::{full_number, rule_texts, state_name, type_name};
use crate::console::{format, headers, layout};
use crate::engine::model::DocumentKind;
use crate::http::state::AppState;

#[derive(Deserialize)]
pub struct Query {
    ok: Option<String>,
}

pub async fn show(
    state: web::Data<AppState>,
    signed: Signed,
    id: web::Path<u64>,
    query: web::Query<Query>,
) -> ConsoleResult<HttpResponse> {
    let doc = visible(&state, &signed, id.into_inner()).await?;
    let body = render(&state, &signed, &doc, notice(query.ok.as_deref()), None).await?;
    Ok(headers::page(HttpResponse::Ok()).body(body))
}

/// An action the issuing code refused: the page again with its message and
/// the API's status.
pub async fn refused(
    state: &AppState,
    signed: &Signed,
    doc: &DocumentRecord,
    status: StatusCode,
    message: String,
) -> ConsoleResult<HttpResponse> {
    let body = render(state, signed, doc, None, Some(&message)).await?;
    Ok(headers::page(HttpResponse::build(status)).body(body))
}

/// The document may be resent (the API's rule: a draft or rejected FE, NC,
/// ND or DS).
pub fn may_resend(doc: &DocumentRecord) -> bool {
    DocumentKind::from_code(doc.document_type).is_some_and(resendable)
        && matches!(doc.state, state::DRAFT | state::REJECTED)
}

/// The document may be emailed (accepted).
pub fn may_email(doc: &DocumentRecord) -> bool {
    doc.state == state::ACCEPTED
}

/// The authority may be asked about it (sent, its answer not yet known).
pub fn may_check(doc: &DocumentRecord) -> bool {
    doc.code.is_some() && matches!(doc.state, state::QUEUED | state::WAITING_AUTHORITY)
}

async fn render(
    state: &AppState,
    signed: &Signed,
    doc: &DocumentRecord,
    notice: Option<&str>,
    error: Option<&str>,
) -> ConsoleResult<String> {
    let history = state.store.history(doc.id).await?;
    let customer = match doc.customer_id {
        Some(c) => state.store.customer(doc.company_id, c).await?,
        None => None,
    };
    let path = document_path(doc.id);
    let list = if signed.is_admin() {
        format!("{PATH}?empresa={}", doc.company_id)
    } else {
        PATH.to_string()
    };
    let rules = rule_texts(doc);
    let content = html! {
        p { a href=(list) { "« Documentos" } }
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        @if let Some(e) = error { p.error role="alert" { (e) } }
        section.card {
            h2 { (type_name(doc.document_type)) " " (full_number(doc)) " " (layout::state_badge(doc.state)) }
            dl.facts {
                dt { "Fecha de emisión" } dd { (format::date(doc.issue_date)) }
                dt { "Firmado" } dd { (format::instant_s(doc.instant())) }
                @if let Some(c) = &customer {
                    dt { "Cliente" } dd { (c.name) " · " (c.identification_number) }
                } @else if let Some(e) = doc.list_keys.get("empleado") {
                    dt { "Empleado" } dd { (e) }
                }
                dt { "Total" } dd { (format::pesos_text(&doc.total)) }
                dt { "Estado" } dd { (state_name(doc.state)) }
                @if let Some(code) = &doc.code {
                    dt { (doc.code_scheme.as_deref().and_then(|s| s.split('-').next()).unwrap_or("Código")) }
                    dd.code { code { (code) } }
                }
                dt { "Intentos de envío" } dd { (doc.attempts) }
            }
        }
        section.card id="autoridad" {
            h2 { "Respuesta de la autoridad" }
            @match &doc.transmission {
                None => p.muted { "Sin respuesta todavía." },
                Some(t) => {
                    @if let Some(d) = t.get("status_description").and_then(|d| d.as_str()) {
                        p { (d) }
                    }
                    @if doc.state == state::REJECTED && !rules.is_empty() {
                        ul.rules { @for r in &rules { li { (r) } } }
                    }
                }
            }
        }
        section.card id="archivos" {
            h2 { "Archivos" }
            p.links {
                a href={ (path) "/xml" } { "XML firmado" } " · "
                a href={ (path) "/pdf" } { "PDF" } " · "
                a href={ (path) "/zip" } download { "ZIP" }
            }
        }
        section.card id="acciones" {
            h2 { "Acciones" }
            @if !(may_resend(doc) || may_email(doc) || may_check(doc)) {
                p.muted { "Ninguna en este estado." }
            }
            @if may_resend(doc) {
                (layout::action_button(signed, &format!("{path}/reenviar"), "Reenviar",
                    "¿Regenerar, firmar y enviar de nuevo este documento a la autoridad?"))
            }
            @if may_email(doc) {
                form.inline method="post" action={ (path) "/correo" }
                    data-confirm="¿Enviar el documento por correo?" {
                    (layout::csrf_field(signed))
                    label { "Para (vacío: el correo del cliente)"
                        input type="email" name="para" multiple;
                    }
                    button type="submit" { "Enviar por correo" }
                }
            }
            @if may_check(doc) {
                (layout::action_button(signed, &format!("{path}/consultar"), "Consultar a la autoridad",
                    "¿Preguntar a la autoridad por el estado de este documento?"))
            }
        }
        section.card id="historial" {
            h2 { "Historial" }
            (timeline(&history))
        }
    };
    let title = format!("Documento {}", full_number(doc));
    Ok(layout::page(signed, PATH, &title, true, content).into_string())
}

fn timeline(history: &[HistoryEntry]) -> Markup {
    html! {
        @if history.is_empty() {
            p.muted { "Sin eventos." }
        } @else {
            ol.timeline {
                @for h in history {
                    li {
                        time { (format::instant_s(h.at)) }
                        " · " strong { (h.event) }
                        @if let Some(to) = h.to_state {
                            " → " (state_name(to))
                        }
                        " · " span.muted { (h.actor) }
                    }
                }
            }
        }
    }
}
