//! `GET /console/registro`: the registry. The invoices the company holds
//! that may be registered as titles (the store's eligible list, as
//! `GET /registry/facturas-elegibles` reads it), and a title's history
//! (`?cufe=`, as `GET /registry/hoja-de-vida/{cufe}` shows it: every
//! event in order, who registered it and for whom, and the legitimate
//! holder now). The invoice is found by the events' own look-up
//! ([`crate::issuing::invoice_events::title::lookup`]): one the company
//! has no part in, or of the other environment, is a 404.

use actix_web::{HttpRequest, HttpResponse};
use emisor_store::{EventState, ReceivedInvoice};
use maud::{html, Markup};

use super::recibidas::{events, invoice_link};
use super::{pager, respond, shown, Params, Shown, PAGE_ROWS};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::format;
use crate::console::guard::Signed;
use crate::http::state::AppState;
use crate::issuing::invoice_events::title::{lookup, normalize_cufe};
use crate::issuing::invoice_events::{kind_of, state_name, EventError};
use crate::issuing::issue::Caller;

pub const PATH: &str = "/console/registro";

fn event_error(e: EventError) -> ConsoleError {
    match e {
        EventError::Invalid { message, .. } => {
            ConsoleError::BadRequest(format!("CUFE no válido: {message}"))
        }
        other => ConsoleError::Api(other.into()),
    }
}

pub async fn show(
    req: HttpRequest,
    state: actix_web::web::Data<AppState>,
    signed: Signed,
) -> ConsoleResult<HttpResponse> {
    let params = Params::parse(req.query_string())?;
    let shown = shown(&state, &signed, &params).await?;
    let history = match params.text("cufe") {
        Some(cufe) => Some(title(&state, &signed, &shown, cufe).await?),
        None => None,
    };
    let page = state
        .store
        .eligible_page(
            shown.company.id,
            signed.environment(),
            params.page()?,
            PAGE_ROWS,
        )
        .await?;
    let content = html! {
        form.filters method="get" action=(PATH) {
            @if let Some(e) = params.text("empresa") { input type="hidden" name="empresa" value=(e); }
            label { "Hoja de vida de un título (CUFE)"
                input type="text" name="cufe" value=(params.text("cufe").unwrap_or_default())
                    minlength="96" maxlength="96" autocomplete="off";
            }
            button type="submit" { "Ver" }
        }
        @if let Some(t) = &history { (history_section(&signed, t)) }
        section {
            h2 { "Facturas elegibles para inscripción como título valor" }
            @if page.total == 0 {
                p.muted { "Ninguna factura de la que esta empresa sea tenedora está lista para inscribirse." }
            } @else {
                div.table-wrap { table.rows {
                    thead { tr {
                        th { "Factura" } th { "Comprador" } th { "Vence" } th.num { "Total" }
                        th { "Eventos" } th { "Hoja de vida" }
                    } }
                    tbody {
                        @for t in &page.items {
                            tr {
                                td data-label="Factura" { (invoice_link(&signed, t)) }
                                td data-label="Comprador" { (t.buyer.name) " (" (t.buyer.id_number) ")" }
                                td data-label="Vence" { (t.due_date.map(format::date).unwrap_or_else(|| "—".into())) }
                                td.num data-label="Total" { (format::pesos_text(&t.total)) }
                                td data-label="Eventos" { (events(t)) }
                                td data-label="Hoja de vida" {
                                    a href={ (PATH) "?" (params.with("cufe", Some(&t.cufe))) } { "Ver" }
                                }
                            }
                        }
                    }
                } }
                (pager(PATH, &params, &page))
            }
        }
    };
    Ok(respond(
        &signed,
        PATH,
        "Registro (títulos valor)",
        &shown,
        content,
    ))
}

/// The title of `cufe` as the company shown finds it.
async fn title(
    state: &AppState,
    signed: &Signed,
    shown: &Shown,
    cufe: &str,
) -> ConsoleResult<ReceivedInvoice> {
    let cufe = normalize_cufe(cufe).map_err(event_error)?;
    let caller = Caller {
        company: shown.company.id,
        environment: signed.environment(),
        user: None,
    };
    lookup(&state.issuing, &caller, &shown.company.nit, &cufe)
        .await
        .map_err(event_error)?
        .ok_or_else(|| ConsoleError::NotFound(format!("factura con CUFE {cufe}")))
}

fn history_section(signed: &Signed, t: &ReceivedInvoice) -> Markup {
    html! {
        section.card id="hoja-de-vida" {
            h2 { "Hoja de vida de la factura " (t.number) }
            dl.facts {
                dt { "Factura" } dd { (invoice_link(signed, t)) }
                dt { "Proveedor" } dd { (t.vendor.name) " (" (t.vendor.id_number) ")" }
                dt { "Comprador" } dd { (t.buyer.name) " (" (t.buyer.id_number) ")" }
                dt { "Total" } dd { (format::pesos_text(&t.total)) }
                dt { "Vence" } dd { (t.due_date.map(format::date).unwrap_or_else(|| "—".into())) }
                dt { "Tenedor legítimo" } dd.holder { strong { (t.holder.name) } " (" (t.holder.id_number) ")" }
            }
            h3 { "Eventos, en orden" }
            @if t.events.is_empty() {
                p.muted { "Ninguno." }
            } @else {
                ol.timeline {
                    @for e in &t.events {
                        li {
                            strong { (e.code) " · " (e.name) }
                            @if kind_of(e).is_some_and(|k| k.is_endorsement()) {
                                " " span.badge.wait { "Endoso" }
                            }
                            div { (format::instant(e.issued_at.with_timezone(&chrono::Utc))) " · "
                                span class=(match e.state {
                                    EventState::Accepted => "badge ok",
                                    EventState::Rejected => "badge bad",
                                    EventState::Pending => "badge wait",
                                }) { (state_name(e.state)) } }
                            div { "De " (e.sender.name) " (" (e.sender.id_number) ") a "
                                (e.receiver.name) " (" (e.receiver.id_number) ")" }
                            div.muted { "CUDE " code { (e.cude) } }
                        }
                    }
                }
            }
        }
    }
}
