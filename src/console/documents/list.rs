//! `GET /console/documentos`: a company's documents of every family in the
//! sign-in's environment, newest first, 25 a page, with the filters
//! (family, state, issue dates, customer, number) and the search box
//! (number, code, customer's number or name) of one GET form, read through
//! the store's indexes (`operator::documents::search`). Live: a document
//! issued meanwhile appears without a reload.
//!
//! The admin picks the company (`?empresa=`); a company session sees its
//! own (another's id is a 404).

use actix_web::{web, HttpResponse};
use chrono::NaiveDate;
use emisor_store::{state, Family};
use maud::{html, Markup};
use serde::{Deserialize, Serialize};

use super::{document_path, PATH};
use crate::console::error::{ConsoleError, ConsoleResult};
use crate::console::guard::Signed;
use crate::console::views::{state_name, type_name};
use crate::console::{format, headers, layout};
use crate::http::state::AppState;
use crate::operator::documents::{search, ConsoleQuery, DocumentRow, RowsPage};

/// Rows a page shows.
const LIMIT: u32 = 25;

/// The form's fields, as typed (an empty field is an absent one).
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub struct Form {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    empresa: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    familia: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    estado: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    desde: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hasta: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cliente: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    numero: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    q: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pagina: Option<String>,
}

/// The families in the form: (value, label).
const FAMILIES: [(&str, &str, Family); 4] = [
    ("facturas", "Facturas y notas", Family::Invoices),
    ("soporte", "Documentos soporte", Family::Support),
    ("pos", "POS", Family::Pos),
    ("nomina", "Nómina", Family::Payroll),
];

const STATES: [u8; 6] = [
    state::DRAFT,
    state::ACCEPTED,
    state::QUEUED,
    state::REJECTED,
    state::WAITING_AUTHORITY,
    state::DEAD_LETTER,
];

fn given(field: &Option<String>) -> Option<&str> {
    field.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

/// Longest text a field takes.
const MAX_TEXT: usize = 200;

impl Form {
    /// The query the form asks, or what is wrong with it.
    fn query(&self) -> Result<ConsoleQuery, ConsoleError> {
        let bad = |m: String| ConsoleError::BadRequest(m);
        let family = match given(&self.familia) {
            None => None,
            Some(f) => Some(
                FAMILIES
                    .iter()
                    .find(|(v, _, _)| *v == f)
                    .map(|(_, _, family)| *family)
                    .ok_or_else(|| bad(format!("Familia desconocida: {f}")))?,
            ),
        };
        let states = match given(&self.estado) {
            None => Vec::new(),
            Some(s) => match s.parse::<u8>() {
                Ok(n) if STATES.contains(&n) => vec![n],
                _ => return Err(bad(format!("Estado desconocido: {s} (1 a 6)"))),
            },
        };
        let date =
            |field: &Option<String>, name: &str| -> Result<Option<NaiveDate>, ConsoleError> {
                given(field)
                    .map(|d| {
                        NaiveDate::parse_from_str(d, "%Y-%m-%d")
                            .map_err(|_| bad(format!("Fecha {name} inválida: {d} (AAAA-MM-DD)")))
                    })
                    .transpose()
            };
        let text = |field: &Option<String>, name: &str| -> Result<Option<String>, ConsoleError> {
            match given(field) {
                Some(t) if t.chars().count() > MAX_TEXT => {
                    Err(bad(format!("{name}: a lo sumo {MAX_TEXT} caracteres")))
                }
                other => Ok(other.map(str::to_string)),
            }
        };
        let page = match given(&self.pagina) {
            None => 1,
            Some(p) => p
                .parse::<u32>()
                .ok()
                .filter(|p| (1..=100_000).contains(p))
                .ok_or_else(|| bad(format!("Página inválida: {p}")))?,
        };
        Ok(ConsoleQuery {
            family,
            states,
            from: date(&self.desde, "desde")?,
            to: date(&self.hasta, "hasta")?,
            customer: text(&self.cliente, "cliente")?,
            number: text(&self.numero, "número")?,
            text: text(&self.q, "búsqueda")?,
            page,
            limit: LIMIT,
        })
    }

    /// This form's query string on page `page`.
    fn page_link(&self, page: u32) -> String {
        let mut f = self.clone();
        f.pagina = Some(page.to_string());
        format!(
            "{PATH}?{}",
            serde_urlencoded::to_string(&f).unwrap_or_default()
        )
    }
}

pub async fn show(
    state: web::Data<AppState>,
    signed: Signed,
    form: web::Query<Form>,
) -> ConsoleResult<HttpResponse> {
    let form = form.into_inner();
    let asked = match given(&form.empresa) {
        None => None,
        Some(e) => Some(
            e.parse::<u64>()
                .map_err(|_| ConsoleError::NotFound(format!("empresa {e}")))?,
        ),
    };
    let query = form.query()?;
    let Some(company) = signed.company(asked)? else {
        let body = layout::page(
            &signed,
            PATH,
            "Documentos",
            false,
            pick_company(&state).await?,
        );
        return Ok(headers::page(HttpResponse::Ok()).body(body.into_string()));
    };
    if state.store.company(company).await?.is_none() {
        return Err(ConsoleError::NotFound(format!("empresa {company}")));
    }
    let found = search(&state.store, company, signed.environment(), &query).await?;
    let content = html! {
        (filters(&signed, &form, company))
        (rows(&form, &found))
    };
    let body = layout::page(&signed, PATH, "Documentos", true, content);
    Ok(headers::page(HttpResponse::Ok()).body(body.into_string()))
}

/// The admin's choice of company.
async fn pick_company(state: &AppState) -> ConsoleResult<Markup> {
    let companies = state.store.companies().await?;
    Ok(html! {
        section.card {
            h2 { "Elija una empresa" }
            @if companies.is_empty() { p.muted { "No hay empresas." } }
            ul {
                @for c in &companies {
                    li { a href={ (PATH) "?empresa=" (c.id) } { (c.name) " (NIT " (c.nit) ")" } }
                }
            }
        }
    })
}

fn filters(signed: &Signed, form: &Form, company: u64) -> Markup {
    let value = |f: &Option<String>| f.clone().unwrap_or_default();
    html! {
        form.filters method="get" action=(PATH) role="search" {
            @if signed.is_admin() { input type="hidden" name="empresa" value=(company); }
            label { "Buscar"
                input type="search" name="q" id="buscar" value=(value(&form.q))
                    placeholder="Número, CUFE/CUDE, NIT o nombre del cliente";
            }
            label { "Familia"
                select name="familia" {
                    option value="" { "Todas" }
                    @for (v, label, _) in FAMILIES {
                        option value=(v) selected[given(&form.familia) == Some(v)] { (label) }
                    }
                }
            }
            label { "Estado"
                select name="estado" {
                    option value="" { "Todos" }
                    @for s in STATES {
                        @let v = s.to_string();
                        option value=(v) selected[given(&form.estado) == Some(v.as_str())] { (state_name(s)) }
                    }
                }
            }
            label { "Desde" input type="date" name="desde" value=(value(&form.desde)); }
            label { "Hasta" input type="date" name="hasta" value=(value(&form.hasta)); }
            label { "Cliente (identificación)" input type="text" name="cliente" value=(value(&form.cliente)); }
            label { "Número" input type="text" name="numero" value=(value(&form.numero)); }
            button type="submit" { "Filtrar" }
        }
    }
}

fn customer(row: &DocumentRow) -> Markup {
    html! {
        @if let Some(name) = &row.customer_name { div { (name) } }
        @if let Some(id) = &row.customer_id { div.muted { (id) } }
    }
}

fn rows(form: &Form, found: &RowsPage) -> Markup {
    let pages = found.total.div_ceil(u64::from(found.limit.max(1)));
    html! {
        p.count {
            @if found.total_exact {
                (found.total) @if found.total == 1 { " documento" } @else { " documentos" }
            }
            @else {
                "Al menos " (found.total) " documentos: el texto coincide con más clientes de los que una búsqueda lee; escriba más del nombre."
            }
        }
        @if found.items.is_empty() {
            p.muted { "Ningún documento." }
        } @else {
            div.table-wrap { table.rows id="documentos" {
                thead { tr {
                    th { "Número" } th { "Tipo" } th { "Fecha" } th { "Cliente" }
                    th { "Total" } th { "Estado" } th { "Código" }
                } }
                tbody {
                    @for row in &found.items {
                        tr data-id=(row.id) {
                            td data-label="Número" { a href=(document_path(row.id)) { (row.number) } }
                            td data-label="Tipo" { (type_name(row.document_type)) }
                            td data-label="Fecha" { (row.issued_at.format("%d/%m/%Y %H:%M")) }
                            td data-label="Cliente" { (customer(row)) }
                            td data-label="Total" { (format::pesos_text(&row.total)) }
                            td data-label="Estado" { (layout::state_badge(row.state)) }
                            td data-label="Código" class="code" {
                                @if let Some(code) = &row.code {
                                    span title=(code) { (code.chars().take(12).collect::<String>()) "…" }
                                }
                            }
                        }
                    }
                }
            } }
        }
        @if pages > 1 {
            nav.pages {
                @if found.page > 1 { a href=(form.page_link(found.page - 1)) rel="prev" { "« Anterior" } }
                span { "Página " (found.page) " de " (pages) }
                @if u64::from(found.page) < pages { a href=(form.page_link(found.page + 1)) rel="next" { "Siguiente »" } }
            }
        }
    }
}
