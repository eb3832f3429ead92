//! The family pages: payroll (`/console/nomina`), POS receipts and the
//! cash count (`/console/pos`), support documents (`/console/soporte`),
//! received invoices with their events (`/console/recibidas`) and the
//! registry (`/console/registro`). Each reads through the store's list
//! queries and the events' own code, as the API does, and shows one
//! company in the sign-in's environment: a company session its own, the
//! admin the one it picks (`?empresa=`, the first company by default).
//!
//! What they share: the query string ([`Params`]), the company shown
//! ([`Shown`]), the pager and the company selector.

pub mod nomina;
pub mod pos;
pub mod recibidas;
pub mod registro;
pub mod soporte;

use std::collections::BTreeMap;

use emisor_store::{Company, DocumentRecord, Family, ListQuery, Page};
use maud::{html, Markup};

use super::error::{ConsoleError, ConsoleResult};
use super::guard::Signed;
use crate::http::state::AppState;

/// Rows of a page.
pub const PAGE_ROWS: u32 = 25;

/// A page's query string: every value as text, read by the page.
#[derive(Debug, Default)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    /// Reads `query`; a parameter given twice is refused.
    pub fn parse(query: &str) -> ConsoleResult<Params> {
        let mut out = BTreeMap::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            if out.insert(k.to_string(), v.trim().to_string()).is_some() {
                return Err(ConsoleError::BadRequest(format!(
                    "El parámetro «{k}» viene repetido."
                )));
            }
        }
        Ok(Params(out))
    }

    /// A non-empty value.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    fn number(&self, name: &str) -> ConsoleResult<Option<u64>> {
        self.text(name)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ConsoleError::BadRequest(format!("«{name}» debe ser un número: {v}"))
                })
            })
            .transpose()
    }

    /// `empresa`, the company asked for.
    pub fn company(&self) -> ConsoleResult<Option<u64>> {
        self.number("empresa")
    }

    /// `pagina`, from 1.
    pub fn page(&self) -> ConsoleResult<u32> {
        match self.number("pagina")? {
            None => Ok(1),
            Some(p) if p >= 1 && p <= u64::from(u32::MAX) => Ok(p as u32),
            Some(_) => Err(ConsoleError::BadRequest(
                "«pagina» debe ser 1 o más.".into(),
            )),
        }
    }

    /// A date `YYYY-MM-DD`.
    pub fn date(&self, name: &str) -> ConsoleResult<Option<chrono::NaiveDate>> {
        self.text(name)
            .map(|v| {
                chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").map_err(|_| {
                    ConsoleError::BadRequest(format!("«{name}» debe ser una fecha AAAA-MM-DD: {v}"))
                })
            })
            .transpose()
    }

    /// This query with `name` set to `value` (`None`: left out), as a
    /// link's query string.
    pub fn with(&self, name: &str, value: Option<&str>) -> String {
        let mut pairs = self.0.clone();
        match value {
            Some(v) => pairs.insert(name.to_string(), v.to_string()),
            None => pairs.remove(name),
        };
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
            out.append_pair(k, v);
        }
        out.finish()
    }
}

/// The company a page shows, and (admin) every company for the selector.
pub struct Shown {
    pub company: Company,
    pub choices: Vec<Company>,
}

/// The company of the page: a signed-in company's own (another one asked is
/// a 404), or the admin's choice, by default the first company.
pub async fn shown(state: &AppState, signed: &Signed, params: &Params) -> ConsoleResult<Shown> {
    let asked = params.company()?;
    if let Some(id) = signed.company(asked)? {
        let company = state
            .store
            .company(id)
            .await?
            .ok_or_else(|| ConsoleError::NotFound(format!("empresa {id}")))?;
        let choices = if signed.is_admin() {
            state.store.companies().await?
        } else {
            Vec::new()
        };
        return Ok(Shown { company, choices });
    }
    let choices = state.store.companies().await?;
    let company = choices
        .first()
        .cloned()
        .ok_or_else(|| ConsoleError::NotFound("ninguna empresa creada".into()))?;
    Ok(Shown { company, choices })
}

impl Shown {
    /// The store's query of this company's documents of `family` in the
    /// sign-in's environment.
    pub fn query(&self, signed: &Signed, family: Family, page: u32) -> ListQuery {
        ListQuery {
            company_id: self.company.id,
            environment: signed.environment(),
            family,
            from: None,
            to: None,
            states: Vec::new(),
            keys: Vec::new(),
            page,
            limit: PAGE_ROWS,
        }
    }

    /// The admin's company selector (a form that GETs the page again);
    /// nothing for a company session.
    pub fn selector(&self, path: &str, signed: &Signed) -> Markup {
        if !signed.is_admin() {
            return html! {};
        }
        html! {
            form.filters method="get" action=(path) {
                label {
                    "Empresa"
                    select name="empresa" data-autosubmit="1" {
                        @for c in &self.choices {
                            option value=(c.id) selected[c.id == self.company.id] {
                                (c.name) " (#" (c.id) ", NIT " (c.nit) ")"
                            }
                        }
                    }
                }
                noscript { button type="submit" { "Ver" } }
            }
        }
    }
}

/// "Página 2 de 7 (150)" with links to the pages before and after.
pub fn pager<T>(path: &str, params: &Params, page: &Page<T>) -> Markup {
    let pages = page.total.div_ceil(u64::from(page.limit.max(1))).max(1);
    let current = u64::from(page.page);
    let link = |n: u64| format!("{path}?{}", params.with("pagina", Some(&n.to_string())));
    html! {
        nav.pager aria-label="Páginas" {
            @if current > 1 {
                a rel="prev" href=(link((current - 1).min(pages))) { "← Anterior" }
            }
            span { "Página " (current) " de " (pages) " (" (page.total) ")" }
            @if current < pages {
                a rel="next" href=(link(current + 1)) { "Siguiente →" }
            }
        }
    }
}

/// A document's number, linked to its page.
pub fn doc_link(doc: &DocumentRecord) -> Markup {
    html! { a href={ "/console/documentos/" (doc.id) } { (super::views::full_number(doc)) } }
}

/// A code (CUFE, CUNE, CUDS) shortened for a table, whole in its title.
pub fn short_code(code: Option<&str>) -> Markup {
    match code {
        Some(c) if c.len() > 16 => {
            html! { code title=(c) { (c.get(..12).unwrap_or(c)) "…" } }
        }
        Some(c) => html! { code { (c) } },
        None => html! { span.muted { "—" } },
    }
}

/// A family page: the company selector and the page's content, in the
/// console's shell.
pub fn respond(
    signed: &Signed,
    path: &str,
    title: &str,
    shown: &Shown,
    content: Markup,
) -> actix_web::HttpResponse {
    let body = super::layout::page(
        signed,
        path,
        title,
        false,
        html! {
            (shown.selector(path, signed))
            p.muted { (shown.company.name) " · NIT " (shown.company.nit) }
            (content)
        },
    );
    super::headers::page(actix_web::HttpResponse::Ok()).body(body.into_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_read_once_per_name_and_written_back_for_links() {
        let p = Params::parse("empresa=2&pagina=3&fecha=2026-11-28&q=%20a%26b%20").unwrap();
        assert_eq!(p.company().unwrap(), Some(2));
        assert_eq!(p.page().unwrap(), 3);
        assert_eq!(
            p.date("fecha").unwrap(),
            chrono::NaiveDate::from_ymd_opt(2026, 11, 28)
        );
        assert_eq!(p.text("q"), Some("a&b"));
        assert_eq!(
            p.with("pagina", Some("4")),
            "empresa=2&fecha=2026-11-28&pagina=4&q=a%26b"
        );
        assert_eq!(p.with("pagina", None), "empresa=2&fecha=2026-11-28&q=a%26b");

        assert!(Params::parse("empresa=1&empresa=2").is_err());
        let bad = Params::parse("empresa=x&pagina=0&fecha=ayer").unwrap();
        assert!(bad.company().is_err());
        assert!(bad.page().is_err());
        assert!(bad.date("fecha").is_err());
        assert_eq!(Params::parse("").unwrap().page().unwrap(), 1);
    }
}
