//! `GET /console/recibidas`: the invoices the company received as buyer
//! (the store's list by buyer, as `GET /eventos/documentos` reads it),
//! newest first, each with its events and where it stands in the legal
//! order (030 → 032 → 031, 033 or 034) and how long is left of the window
//! that applies, as [`crate::issuing::invoice_events::standing`] reads
//! them with the rules an event registered now meets.
//!
//! [`due_soon`] feeds the overview's "Eventos con plazo".

use actix_web::{HttpRequest, HttpResponse};
use chrono::NaiveDate;
use emisor_store::{Company, EventState, ReceivedInvoice};
use maud::{html, Markup};

use super::{pager, respond, short_code, shown, Params, PAGE_ROWS};
use crate::console::error::ConsoleResult;
use crate::console::format;
use crate::console::guard::Signed;
use crate::engine::events::EventKind;
use crate::http::state::AppState;
use crate::issuing::invoice_events::standing::{standing, Deadline, Stage, Standing};
use crate::issuing::invoice_events::state_name;

pub const PATH: &str = "/console/recibidas";

/// The overview lists windows that close within this many days.
pub const DUE_WITHIN_DAYS: i64 = 3;
/// Received invoices of each company the overview looks at (the newest).
pub const DUE_SCAN: u32 = 100;

fn today() -> NaiveDate {
    crate::clock::colombia_now().date_naive()
}

pub async fn show(
    req: HttpRequest,
    state: actix_web::web::Data<AppState>,
    signed: Signed,
) -> ConsoleResult<HttpResponse> {
    let params = Params::parse(req.query_string())?;
    let shown = shown(&state, &signed, &params).await?;
    let page = state
        .store
        .received_page(
            shown.company.id,
            signed.environment(),
            params.page()?,
            PAGE_ROWS,
        )
        .await?;
    let today = today();
    let content = html! {
        p.muted {
            "Orden legal: acuse de recibo (030) → recibo del bien o servicio (032) → "
            "reclamo (031) o aceptación expresa (033) dentro de 3 días hábiles, o aceptación tácita (034) después."
        }
        @if page.total == 0 {
            p.muted { "Esta empresa no tiene facturas recibidas en este ambiente." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr {
                    th { "Factura" } th { "Proveedor" } th { "Fecha" } th.num { "Total" }
                    th { "Eventos" } th { "Dónde está" } th { "Plazo" }
                } }
                tbody {
                    @for t in &page.items { (row(&signed, t, &standing(t, today))) }
                }
            } }
            (pager(PATH, &params, &page))
        }
    };
    Ok(respond(
        &signed,
        PATH,
        "Facturas recibidas",
        &shown,
        content,
    ))
}

/// The invoice's number, linked to the vendor's document when the session
/// may see it (a company's own invoice to another of its companies).
pub fn invoice_link(signed: &Signed, t: &ReceivedInvoice) -> Markup {
    let visible = t.document_id.filter(|_| {
        t.vendor
            .company_id
            .is_some_and(|c| signed.may_see(c, t.environment))
    });
    html! {
        @match visible {
            Some(id) => { a href={ "/console/documentos/" (id) } { (t.number) } }
            None => { (t.number) }
        }
        div { (short_code(Some(&t.cufe))) }
    }
}

fn row(signed: &Signed, t: &ReceivedInvoice, s: &Standing) -> Markup {
    html! {
        tr {
            td data-label="Factura" { (invoice_link(signed, t)) }
            td data-label="Proveedor" { (t.vendor.name) " (" (t.vendor.id_number) ")" }
            td data-label="Fecha" { (format::date(t.issue_date)) }
            td.num data-label="Total" { (format::pesos_text(&t.total)) }
            td data-label="Eventos" { (events(t)) }
            td data-label="Dónde está" { (stage_text(s)) }
            td data-label="Plazo" { (deadline_text(s.deadline.as_ref())) }
        }
    }
}

/// Every event of the invoice with the authority's verdict.
pub fn events(t: &ReceivedInvoice) -> Markup {
    html! {
        @if t.events.is_empty() {
            span.muted { "Ninguno" }
        }
        @for e in &t.events {
            div {
                span class=(match e.state {
                    EventState::Accepted => "badge ok",
                    EventState::Rejected => "badge bad",
                    EventState::Pending => "badge wait",
                }) title=(e.name) { (e.code) }
                " " (short_name(&e.code)) " · " (state_name(e.state))
            }
        }
    }
}

/// The receipt and registry events' short names.
fn short_name(code: &str) -> &'static str {
    match code {
        "030" => "Acuse de recibo",
        "031" => "Reclamo",
        "032" => "Recibo del bien o servicio",
        "033" => "Aceptación expresa",
        "034" => "Aceptación tácita",
        "035" => "Inscripción como título valor",
        "036" => "Endoso en propiedad",
        "037" => "Endoso en garantía",
        "038" => "Endoso en procuración",
        _ => "Evento",
    }
}

fn kind_text(k: EventKind) -> String {
    format!("{} ({})", short_name(k.api_code()), k.api_code())
}

/// Where the invoice stands, and what may be registered today.
pub fn stage_text(s: &Standing) -> Markup {
    let stage = match s.stage {
        Stage::AwaitingAcknowledgement => "Falta el acuse de recibo (030)".to_string(),
        Stage::AwaitingGoodsReceipt => "Falta el recibo del bien o servicio (032)".to_string(),
        Stage::AwaitingOutcome => "Esperando reclamo o aceptación".to_string(),
        Stage::Settled(k) => format!("Cerrada: {}", kind_text(k)),
    };
    html! {
        div { (stage) }
        @if !s.possible.is_empty() {
            div.muted {
                "Posible hoy: "
                (s.possible.iter().map(|k| k.api_code()).collect::<Vec<_>>().join(", "))
            }
        }
    }
}

/// How long is left: the claim or express acceptance's last day, then
/// the tacit acceptance's first.
pub fn deadline_text(d: Option<&Deadline>) -> Markup {
    let Some(d) = d else {
        return html! { span.muted { "Sin plazo corriendo" } };
    };
    html! {
        @if d.days_left > 0 {
            span class={ "badge" @if d.days_left <= DUE_WITHIN_DAYS { " wait" } } {
                "Quedan " (d.days_left) @if d.days_left == 1 { " día" } @else { " días" }
            }
        } @else if d.days_left == 0 {
            span.badge.bad { "Vence hoy" }
        } @else {
            span.badge { "Vencido" }
        }
        div { "Reclamo o aceptación expresa hasta el " (format::date(d.last_day)) }
        div.muted { "Aceptación tácita desde el " (format::date(d.tacit_from))
            " (recibo del bien del " (format::date(d.receipt)) ")" }
    }
}

/// The received invoices of `companies` (newest [`DUE_SCAN`] each) whose
/// window closes within [`DUE_WITHIN_DAYS`] days.
pub async fn due_soon(
    state: &AppState,
    signed: &Signed,
    companies: &[Company],
) -> ConsoleResult<Vec<(String, ReceivedInvoice, Standing)>> {
    let today = today();
    let mut out = Vec::new();
    for c in companies {
        let page = state
            .store
            .received_page(c.id, signed.environment(), 1, DUE_SCAN)
            .await?;
        for t in page.items {
            let s = standing(&t, today);
            if s.due_within(DUE_WITHIN_DAYS) {
                out.push((c.name.clone(), t, s));
            }
        }
    }
    out.sort_by_key(|(_, _, s)| s.deadline.map(|d| d.days_left));
    Ok(out)
}

/// The overview's "Eventos con plazo".
pub fn due_table(signed: &Signed, rows: &[(String, ReceivedInvoice, Standing)]) -> Markup {
    html! {
        h3 { "Eventos con plazo" }
        @if rows.is_empty() {
            p.muted { "Ninguna factura recibida con un plazo que venza en los próximos "
                (DUE_WITHIN_DAYS) " días." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr { th { "Factura" } th { "Empresa" } th { "Proveedor" } th { "Plazo" } } }
                tbody {
                    @for (company, t, s) in rows {
                        tr {
                            td data-label="Factura" { (invoice_link(signed, t)) }
                            td data-label="Empresa" { (company) }
                            td data-label="Proveedor" { (t.vendor.name) }
                            td data-label="Plazo" { (deadline_text(s.deadline.as_ref())) }
                        }
                    }
                }
            } }
        }
    }
}
