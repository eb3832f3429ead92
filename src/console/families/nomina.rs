//! `GET /console/nomina`: the company's payrolls and their adjustments,
//! newest first, from the document index (the list `GET /nomina/listar`
//! reads): number, employee, pay period, net total, state and CUNE; an
//! adjustment is marked and names the payroll it adjusts. The employee and
//! the period come from the payroll as it was issued (its stored domain
//! request), one read per row shown.

use actix_web::{HttpRequest, HttpResponse};
use emisor_store::{DocumentRecord, Family, PAYROLL_DOCUMENT_TYPE};
use maud::{html, Markup};

use super::{doc_link, pager, respond, short_code, shown, Params};
use crate::console::error::ConsoleResult;
use crate::console::guard::Signed;
use crate::console::{format, layout};
use crate::engine::payroll::model::{PayrollDocument, PayrollKind};
use crate::http::state::AppState;
use crate::issuing::stored::{self, Domain, Stored};

pub const PATH: &str = "/console/nomina";

/// What a row shows of the payroll as issued.
struct Issued {
    employee: String,
    period: String,
    kind: PayrollKind,
    adjusts: Option<String>,
}

fn issued_of(doc: &PayrollDocument) -> Issued {
    let e = &doc.employee;
    let name = [
        Some(e.first_name.as_str()),
        e.other_names.as_deref(),
        Some(e.first_surname.as_str()),
        e.second_surname.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter(|p| !p.is_empty())
    .collect::<Vec<_>>()
    .join(" ");
    Issued {
        employee: format!("{name} ({})", e.id_number),
        period: format!(
            "{} – {}",
            format::date(doc.period.settlement_start),
            format::date(doc.period.settlement_end)
        ),
        kind: doc.kind,
        adjusts: doc.predecessor.as_ref().map(|p| p.number.clone()),
    }
}

/// The payroll as issued: the domain request stored with it, or (a
/// request stored in the earlier format) the payroll API's reading of it.
async fn issued(state: &AppState, doc: &DocumentRecord) -> Option<Issued> {
    let raw = state.store.document_request(doc.id).await.ok().flatten()?;
    match stored::read(&raw).ok()? {
        Stored::Domain {
            domain: Domain::Payroll(p),
            ..
        } => Some(issued_of(&p)),
        Stored::Domain { .. } => None,
        Stored::AsSent(caller) => crate::api::nomina::translator::translate(caller)
            .ok()
            .map(|r| issued_of(&r.document)),
    }
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
        .list_documents(shown.query(&signed, Family::Payroll, params.page()?))
        .await?;
    let mut rows = Vec::with_capacity(page.items.len());
    for doc in &page.items {
        rows.push((doc, issued(&state, doc).await));
    }
    let content = html! {
        @if page.total == 0 {
            p.muted { "Esta empresa no tiene nóminas en este ambiente." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr {
                    th { "Número" } th { "Tipo" } th { "Empleado" } th { "Periodo" }
                    th.num { "Total" } th { "Estado" } th { "CUNE" }
                } }
                tbody {
                    @for (doc, issued) in &rows { (row(doc, issued.as_ref())) }
                }
            } }
            (pager(PATH, &params, &page))
        }
    };
    Ok(respond(&signed, PATH, "Nómina", &shown, content))
}

fn row(doc: &DocumentRecord, issued: Option<&Issued>) -> Markup {
    let adjustment = doc.document_type != PAYROLL_DOCUMENT_TYPE;
    html! {
        tr class=[adjustment.then_some("adjustment")] {
            td data-label="Número" { (doc_link(doc)) }
            td data-label="Tipo" {
                @if adjustment {
                    span.badge.wait { "Ajuste" }
                    @match issued.map(|i| i.kind) {
                        Some(PayrollKind::Delete) => { " (elimina)" }
                        Some(PayrollKind::Replace) => { " (reemplaza)" }
                        _ => {}
                    }
                    @if let Some(n) = issued.and_then(|i| i.adjusts.as_deref()) {
                        div.muted { "de " (n) }
                    }
                } @else {
                    "Individual"
                }
            }
            td data-label="Empleado" {
                @match issued {
                    Some(i) => { (i.employee) }
                    None => { (doc.list_keys.get("empleado").map(String::as_str).unwrap_or("—")) }
                }
            }
            td data-label="Periodo" { (issued.map_or("—", |i| i.period.as_str())) }
            td.num data-label="Total" { (format::pesos_text(&doc.total)) }
            td data-label="Estado" { (layout::state_badge(doc.state)) }
            td data-label="CUNE" { (short_code(doc.code.as_deref())) }
        }
    }
}
