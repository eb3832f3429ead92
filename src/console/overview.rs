//! `GET /console`: the overview, live. Documents issued today by state,
//! the transmission queue, the breaker and the authority's recent latency,
//! and what needs a person: rejected documents with the authority's rule
//! texts, dead letters, emails that failed for good, and the warnings of
//! numbering, resolutions, certificates and plan.
//!
//! Every figure comes from the store's counters and indexes (a day's count
//! per state is a counter read), never a scan of documents.

use actix_web::{web, HttpResponse};
use emisor_actors::transmitter::GetStats;
use emisor_store::{state, Company, DocumentRecord, Family, ListQuery};
use maud::{html, Markup};
use serde::Deserialize;

use super::error::ConsoleResult;
use super::format;
use super::guard::Signed;
use super::views::{full_number, rule_texts, type_name};
use super::{headers, layout};
use crate::http::state::AppState;

/// Families that issue (received invoices have their own page).
const ISSUED: [Family; 4] = [
    Family::Invoices,
    Family::Support,
    Family::Pos,
    Family::Payroll,
];
/// States counted on the overview, in the order shown.
const STATES: [u8; 6] = [
    state::ACCEPTED,
    state::QUEUED,
    state::WAITING_AUTHORITY,
    state::REJECTED,
    state::DEAD_LETTER,
    state::DRAFT,
];
/// Rows of each "needs a person" list.
const NEEDS: u32 = 10;

#[derive(Deserialize)]
pub struct Which {
    empresa: Option<u64>,
}

/// The companies the overview covers: the signed-in company's, the admin's choice,
/// or every company.
async fn companies(
    state: &AppState,
    signed: &Signed,
    asked: Option<u64>,
) -> ConsoleResult<Vec<Company>> {
    match signed.company(asked)? {
        Some(id) => Ok(state.store.company(id).await?.into_iter().collect()),
        None => Ok(state.store.companies().await?),
    }
}

fn query(
    company: &Company,
    signed: &Signed,
    family: Family,
    states: Vec<u8>,
    limit: u32,
) -> ListQuery {
    ListQuery {
        company_id: company.id,
        environment: signed.environment(),
        family,
        from: None,
        to: None,
        states,
        keys: Vec::new(),
        page: 1,
        limit,
    }
}

pub async fn show(
    state: web::Data<AppState>,
    signed: Signed,
    which: web::Query<Which>,
) -> ConsoleResult<HttpResponse> {
    let companies = companies(&state, &signed, which.empresa).await?;
    let today = crate::clock::colombia_now().date_naive();
    let mut by_state = [0u64; STATES.len()];
    let mut rejected: Vec<(String, DocumentRecord)> = Vec::new();
    let mut dead: Vec<(String, DocumentRecord)> = Vec::new();
    let mut failed_mails = Vec::new();
    let mut warnings = Vec::new();
    for company in &companies {
        for family in ISSUED {
            for (i, s) in STATES.iter().enumerate() {
                let mut q = query(company, &signed, family, vec![*s], 1);
                q.from = Some(today);
                q.to = Some(today);
                if let Some(slot) = by_state.get_mut(i) {
                    *slot += state.store.list_documents(q).await?.total;
                }
            }
            let q = query(company, &signed, family, vec![state::REJECTED], NEEDS);
            rejected.extend(
                state
                    .store
                    .list_documents(q)
                    .await?
                    .items
                    .into_iter()
                    .map(|d| (company.name.clone(), d)),
            );
            let q = query(company, &signed, family, vec![state::DEAD_LETTER], NEEDS);
            dead.extend(
                state
                    .store
                    .list_documents(q)
                    .await?
                    .items
                    .into_iter()
                    .map(|d| (company.name.clone(), d)),
            );
        }
        let mails = state
            .store
            .events(
                company.id,
                crate::issuing::mail::deliver::FAILED_EVENT,
                NEEDS as usize,
            )
            .await?;
        failed_mails.extend(mails.into_iter().map(|e| (company.name.clone(), e)));
        let alertas =
            crate::operator::warnings::current(&state.store, &state.settings.warnings, company)
                .await?;
        warnings.extend(
            warning_lines(&alertas)
                .into_iter()
                .map(|w| (company.name.clone(), w)),
        );
    }
    rejected.sort_by_key(|r| std::cmp::Reverse(r.1.id));
    rejected.truncate(NEEDS as usize);
    dead.sort_by_key(|r| std::cmp::Reverse(r.1.id));
    dead.truncate(NEEDS as usize);
    failed_mails.sort_by_key(|r| std::cmp::Reverse(r.1.id));
    failed_mails.truncate(NEEDS as usize);

    let due = super::families::recibidas::due_soon(&state, &signed, &companies).await?;

    let stats = state.issuing.transmitter.addr().send(GetStats).await.ok();
    let breaker = crate::ops::health::breaker(&state).await;
    let latency = stats.as_ref().and_then(|s| median(&s.recent_latency_ms));

    let content = html! {
        section {
            h2 { "Documentos de hoy (" (format::date(today)) ")" }
            div.tiles {
                @for (i, s) in STATES.iter().enumerate() {
                    (layout::tile(super::views::state_name(*s), by_state.get(i).copied().unwrap_or(0),
                        matches!(*s, state::REJECTED | state::DEAD_LETTER) && by_state.get(i).copied().unwrap_or(0) > 0))
                }
            }
        }
        section {
            h2 { "Envío a la autoridad" }
            div.tiles {
                (layout::tile("En la cola de envío", stats.as_ref().map_or(0, |s| s.queued_total), false))
                (layout::tile("En vuelo", stats.as_ref().map_or(0, |s| s.in_flight), false))
                @let open = breaker.as_ref().is_some_and(|b| b.state != "CLOSED");
                (layout::tile("Interruptor (breaker)", breaker_name(breaker.as_ref().map(|b| b.state.as_str())), open))
                (layout::tile("Latencia reciente", latency.map_or("sin datos".to_string(), |ms| format!("{ms} ms")), false))
            }
        }
        section {
            h2 { "Requiere atención" }
            (rejected_table(&rejected))
            (dead_table(&dead))
            (mails_table(&failed_mails))
            (warnings_list(&warnings))
            (super::families::recibidas::due_table(&signed, &due))
        }
    };
    let body = layout::page(&signed, "/console", "Resumen", true, content);
    Ok(headers::page(HttpResponse::Ok()).body(body.into_string()))
}

fn breaker_name(state: Option<&str>) -> &'static str {
    match state {
        Some("CLOSED") => "Cerrado (normal)",
        Some("HALF_OPEN") => "Semiabierto (probando)",
        Some("OPEN") => "Abierto (autoridad caída)",
        _ => "Desconocido",
    }
}

fn median(values: &[u64]) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

fn doc_link(doc: &DocumentRecord) -> Markup {
    html! { a href={ "/console/documentos/" (doc.id) } { (full_number(doc)) } }
}

fn rejected_table(rows: &[(String, DocumentRecord)]) -> Markup {
    html! {
        h3 { "Rechazados por la autoridad" }
        @if rows.is_empty() {
            p.muted { "Ninguno." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr { th { "Documento" } th { "Empresa" } th { "Tipo" } th { "Reglas" } } }
                tbody {
                    @for (company, doc) in rows {
                        tr {
                            td data-label="Documento" { (doc_link(doc)) }
                            td data-label="Empresa" { (company) }
                            td data-label="Tipo" { (type_name(doc.document_type)) }
                            td data-label="Reglas" class="rules" {
                                @for rule in rule_texts(doc) { div { (rule) } }
                            }
                        }
                    }
                }
            } }
        }
    }
}

fn dead_table(rows: &[(String, DocumentRecord)]) -> Markup {
    html! {
        h3 { "Sin enviar tras agotar los reintentos (dead letter)" }
        @if rows.is_empty() {
            p.muted { "Ninguno." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr { th { "Documento" } th { "Empresa" } th { "Intentos" } th { "Fecha" } } }
                tbody {
                    @for (company, doc) in rows {
                        tr {
                            td data-label="Documento" { (doc_link(doc)) }
                            td data-label="Empresa" { (company) }
                            td data-label="Intentos" { (doc.attempts) }
                            td data-label="Fecha" { (format::date(doc.issue_date)) }
                        }
                    }
                }
            } }
        }
    }
}

fn mails_table(rows: &[(String, emisor_store::EventRecord)]) -> Markup {
    html! {
        h3 { "Correos que no se pudieron enviar" }
        @if rows.is_empty() {
            p.muted { "Ninguno." }
        } @else {
            div.table-wrap { table.rows {
                thead { tr { th { "Documento" } th { "Empresa" } th { "Destino" } th { "Error" } th { "Cuándo" } } }
                tbody {
                    @for (company, e) in rows {
                        tr {
                            td data-label="Documento" {
                                @if let Some(id) = e.document_id { a href={ "/console/documentos/" (id) } { "#" (id) } }
                            }
                            td data-label="Empresa" { (company) }
                            td data-label="Destino" {
                                @for to in e.data.get("to").and_then(|t| t.as_array()).into_iter().flatten() {
                                    div { (to.as_str().unwrap_or_default()) }
                                }
                            }
                            td data-label="Error" { (e.data.get("error").and_then(|t| t.as_str()).unwrap_or_default()) }
                            td data-label="Cuándo" { (format::instant(e.at)) }
                        }
                    }
                }
            } }
        }
    }
}

/// The warnings in force, one line each.
fn warning_lines(a: &crate::operator::warnings::evaluate::Alertas) -> Vec<String> {
    let mut lines = Vec::new();
    for n in a.numeracion.iter().filter(|n| n.en_alerta) {
        let days = n
            .dias_para_agotarse
            .map(|d| format!(", se agota en unos {d} días"))
            .unwrap_or_default();
        lines.push(format!(
            "Numeración {}{}–{} (tipo {}): quedan {}{days}",
            n.prefijo, n.desde, n.hasta, n.id_tipo_documento, n.restantes
        ));
    }
    for v in a.vigencias.iter().filter(|v| v.en_alerta) {
        lines.push(format!(
            "Resolución {} ({}): vigente hasta {} ({} días)",
            v.id_resolucion, v.prefijo, v.vigencia_hasta, v.dias_restantes
        ));
    }
    if let Some(c) = a.certificado.as_ref().filter(|c| c.en_alerta) {
        lines.push(format!(
            "Certificado {} vence el {} ({} días)",
            c.serial, c.vence, c.dias_restantes
        ));
    }
    if a.plan.en_alerta {
        lines.push(format!(
            "Plan del mes {}: usados {} de {}, quedan {}",
            a.plan.periodo, a.plan.usados, a.plan.limite, a.plan.disponibles
        ));
    }
    lines
}

fn warnings_list(rows: &[(String, String)]) -> Markup {
    html! {
        h3 { "Avisos (numeración, resoluciones, certificado, plan)" }
        @if rows.is_empty() {
            p.muted { "Ninguno." }
        } @else {
            ul.warnings {
                @for (company, line) in rows { li { strong { (company) } ": " (line) } }
            }
        }
    }
}
