//! `GET /console/soporte`: the company's support documents and their
//! adjustment notes, newest first, from the document index (the list
//! `GET /documentos-soporte` reads): number, type, supplier, date, total,
//! state and CUDS. The supplier is the party the document was issued to
//! (its stored customer; the indexed `proveedor` number otherwise).

use actix_web::{HttpRequest, HttpResponse};
use emisor_store::{DocumentRecord, Family};
use maud::{html, Markup};

use super::{doc_link, pager, respond, short_code, shown, Params};
use crate::console::error::ConsoleResult;
use crate::console::guard::Signed;
use crate::console::views::type_name;
use crate::console::{format, layout};
use crate::http::state::AppState;

pub const PATH: &str = "/console/soporte";

/// Document type of a support document's adjustment note.
const ADJUSTMENT: u8 = 5;

pub async fn show(
    req: HttpRequest,
    state: actix_web::web::Data<AppState>,
    signed: Signed,
) -> ConsoleResult<HttpResponse> {
    let params = Params::parse(req.query_string())?;
    let shown = shown(&state, &signed, &params).await?;
    let page = state
        .store
        .list_documents(shown.query(&signed, Family::Support, params.page()?))
        .await?;
    let mut rows = Vec::with_capacity(page.items.len());
    for doc in &page.items {
        let supplier = match doc.customer_id {
            Some(id) => state
                .store
                .customer(shown.company.id, id)
                .await?
                .map(|c| format!("{} ({})", c.name, c.identification_number)),
            None => None,
        };
        rows.push((doc, supplier));
    }
    let content = html! {
        @if page.total == 0 {
            p.muted { "Esta empresa no tiene documentos soporte en este ambiente." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr {
                    th { "Número" } th { "Tipo" } th { "Proveedor" } th { "Fecha" }
                    th.num { "Total" } th { "Estado" } th { "CUDS" }
                } }
                tbody {
                    @for (doc, supplier) in &rows { (row(doc, supplier.as_deref())) }
                }
            } }
            (pager(PATH, &params, &page))
        }
    };
    Ok(respond(
        &signed,
        PATH,
        "Documentos soporte",
        &shown,
        content,
    ))
}

fn row(doc: &DocumentRecord, supplier: Option<&str>) -> Markup {
    let note = doc.document_type == ADJUSTMENT;
    html! {
        tr {
            td data-label="Número" { (doc_link(doc)) }
            td data-label="Tipo" {
                @if note { span.badge.wait { (type_name(doc.document_type)) } }
                @else { (type_name(doc.document_type)) }
            }
            td data-label="Proveedor" {
                (supplier
                    .or(doc.list_keys.get("proveedor").map(String::as_str))
                    .unwrap_or("—"))
            }
            td data-label="Fecha" { (format::date(doc.issue_date)) }
            td.num data-label="Total" { (format::pesos_text(&doc.total)) }
            td data-label="Estado" { (layout::state_badge(doc.state)) }
            td data-label="CUDS" { (short_code(doc.code.as_deref())) }
        }
    }
}
