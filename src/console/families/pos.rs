//! `GET /console/pos`: the company's POS receipts and adjustment notes,
//! newest first (the document index, as `GET /pos` reads it), and the cash
//! count of a day (`?fecha=`, today in Colombia by default) by register
//! (`id_caja`) and cashier's shift (`id_cajero`), summed by the very code
//! of `GET /pos/arqueo` ([`crate::api::pos::arqueo::Sums`]) over that
//! day's POS documents read through the index. A day of more than
//! [`DAY_BOUND`] documents is counted on its first ones (the newest), and
//! the page says so: `GET /pos/arqueo` with `id_caja` counts one register
//! whole.

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse};
use emisor_store::{DocumentRecord, Family};
use maud::{html, Markup};

use super::{doc_link, pager, respond, short_code, shown, Params};
use crate::api::pos::arqueo::{day_documents, Arqueo, Sums};
use crate::console::error::ConsoleResult;
use crate::console::guard::Signed;
use crate::console::views::type_name;
use crate::console::{format, layout};
use crate::http::state::AppState;

pub const PATH: &str = "/console/pos";

/// Documents of one day the page's cash count reads at most.
pub const DAY_BOUND: u64 = 2_000;

/// Document type of a POS adjustment note.
const ADJUSTMENT: u8 = 10;

/// The list key of a register and of a cashier (decisions.md "POS
/// extension values": `1` when the sale named none).
const REGISTER: &str = "id_caja";
const CASHIER: &str = "id_cajero";

fn key_of<'a>(doc: &'a DocumentRecord, key: &str) -> &'a str {
    doc.list_keys.get(key).map_or("1", String::as_str)
}

pub async fn show(
    req: HttpRequest,
    state: actix_web::web::Data<AppState>,
    signed: Signed,
) -> ConsoleResult<HttpResponse> {
    let params = Params::parse(req.query_string())?;
    let shown = shown(&state, &signed, &params).await?;
    let day = params
        .date("fecha")?
        .unwrap_or_else(|| crate::clock::colombia_now().date_naive());
    let page = state
        .store
        .list_documents(shown.query(&signed, Family::Pos, params.page()?))
        .await?;

    let mut shifts: BTreeMap<(String, String), Sums> = BTreeMap::new();
    let mut whole = Sums::default();
    let owner = (shown.company.id, signed.environment());
    let day_total = day_documents(&state.store, owner, day, Vec::new(), Some(DAY_BOUND), |d| {
        whole.add(d);
        shifts
            .entry((
                key_of(d, REGISTER).to_string(),
                key_of(d, CASHIER).to_string(),
            ))
            .or_default()
            .add(d);
    })
    .await?;
    let counts: Vec<Arqueo> = shifts
        .into_iter()
        .map(|((caja, cajero), s)| s.arqueo(day, Some(caja), Some(cajero)))
        .collect();
    let whole = whole.arqueo(day, None, None);

    let content = html! {
        section {
            h2 { "Arqueo de caja del " (format::date(day)) }
            form.filters method="get" action=(PATH) {
                @if let Some(e) = params.text("empresa") { input type="hidden" name="empresa" value=(e); }
                label { "Fecha" input type="date" name="fecha" value=(day.to_string()); }
                button type="submit" { "Ver arqueo" }
            }
            @if day_total > DAY_BOUND {
                p.error { "Ese día tiene " (day_total) " documentos POS: el arqueo suma los "
                    (DAY_BOUND) " más recientes. El arqueo completo de una caja está en "
                    code { "GET /v1/api/pos/arqueo?fecha=" (day) "&id_caja=…" } "." }
            }
            (cash_counts(&counts, &whole))
        }
        section {
            h2 { "Tirillas y notas de ajuste" }
            @if page.total == 0 {
                p.muted { "Esta empresa no tiene documentos POS en este ambiente." }
            } @else {
                div.table-wrap { table.rows {
                    thead { tr {
                        th { "Número" } th { "Tipo" } th { "Fecha" } th { "Caja" } th { "Cajero" }
                        th.num { "Total" } th { "Estado" } th { "CUDE" }
                    } }
                    tbody { @for doc in &page.items { (row(doc)) } }
                } }
                (pager(PATH, &params, &page))
            }
        }
    };
    Ok(respond(&signed, PATH, "POS", &shown, content))
}

fn cash_counts(counts: &[Arqueo], whole: &Arqueo) -> Markup {
    html! {
        @if counts.is_empty() {
            p.muted { "Sin ventas POS ese día." }
        } @else {
            div.table-wrap { table.rows.cash-count {
                thead { tr {
                    th { "Caja" } th { "Cajero (turno)" } th.num { "Tirillas" } th { "Números" }
                    th.num { "Ventas" } th { "Por medio de pago" } th.num { "Notas de ajuste" }
                    th.num { "Neto" } th.num { "Rechazadas" }
                } }
                tbody {
                    @for c in counts { (count_row(c, false)) }
                    (count_row(whole, true))
                }
            } }
        }
    }
}

fn count_row(c: &Arqueo, whole: bool) -> Markup {
    html! {
        tr class=[whole.then_some("total")] {
            td data-label="Caja" {
                @if whole { strong { "Todas" } } @else { (c.id_caja.as_deref().unwrap_or("—")) }
            }
            td data-label="Cajero (turno)" {
                @if whole { strong { "Todos" } } @else { (c.id_cajero.as_deref().unwrap_or("—")) }
            }
            td.num data-label="Tirillas" { (c.cantidad) }
            td data-label="Números" {
                (c.primer_numero.as_deref().unwrap_or("—")) " – " (c.ultimo_numero.as_deref().unwrap_or("—"))
            }
            td.num data-label="Ventas" { (format::pesos_text(&c.total_ventas)) }
            td data-label="Por medio de pago" {
                @for m in &c.por_metodo_pago {
                    div { (m.nombre) ": " (format::pesos_text(&m.total)) }
                }
            }
            td.num data-label="Notas de ajuste" {
                (c.notas_ajuste.cantidad) " · " (format::pesos_text(&c.notas_ajuste.total))
            }
            td.num data-label="Neto" { strong { (format::pesos_text(&c.total_neto)) } }
            td.num data-label="Rechazadas" { (c.rechazados) }
        }
    }
}

fn row(doc: &DocumentRecord) -> Markup {
    let note = doc.document_type == ADJUSTMENT;
    html! {
        tr {
            td data-label="Número" { (doc_link(doc)) }
            td data-label="Tipo" {
                @if note { span.badge.wait { (type_name(doc.document_type)) } }
                @else { "Tirilla POS" }
            }
            td data-label="Fecha" { (format::date(doc.issue_date)) }
            td data-label="Caja" { (key_of(doc, REGISTER)) }
            td data-label="Cajero" { (key_of(doc, CASHIER)) }
            td.num data-label="Total" { (format::pesos_text(&doc.total)) }
            td data-label="Estado" { (layout::state_badge(doc.state)) }
            td data-label="CUDE" { (short_code(doc.code.as_deref())) }
        }
    }
}
