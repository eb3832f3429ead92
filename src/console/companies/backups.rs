//! Backups on the Companies page: the last ones under `[backup] dir` with
//! what their manifests say (when, size, documents; a directory without a
//! manifest is an incomplete one), and "run one now", which posts to the
//! admin API's own backup (`POST /admin/backup`'s `take_backup`).
//!
//! A backup made here is named like a scheduled one (`emisor-<time>`): the
//! schedule's `keep` prunes it with them, and the next scheduled backup
//! follows it.

use std::path::Path;

use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use maud::{html, Markup};
use serde::Deserialize;

use super::{done, PATH};
use crate::backup::manifest::{self, Manifest};
use crate::backup::schedule::PREFIX;
use crate::console::error::ConsoleResult;
use crate::console::guard::{Posted, Signed};
use crate::console::{format, headers, layout};
use crate::http::state::AppState;

/// Backups listed.
const SHOWN: usize = 10;

/// One directory under `[backup] dir`.
pub struct Listed {
    pub name: String,
    pub manifest: Result<Manifest, String>,
    pub modified: Option<DateTime<Utc>>,
}

/// The newest [`SHOWN`] directories under `dir`, newest first.
pub fn recent(dir: &Path) -> std::io::Result<Vec<Listed>> {
    let mut found: Vec<(Option<DateTime<Utc>>, std::path::PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| {
            let modified = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .map(DateTime::<Utc>::from);
            (modified, e.path())
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    Ok(found
        .into_iter()
        .take(SHOWN)
        .map(|(modified, path)| Listed {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            manifest: manifest::read(&path),
            modified,
        })
        .collect())
}

/// `1,5 MB`: a size as a reader says it.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS.get(unit).copied().unwrap_or("TB")).replace('.', ",")
}

/// The section of the Companies page.
pub async fn section(state: &AppState, signed: &Signed) -> Markup {
    if state.settings.store.engine == emisor_store::Engine::Postgres {
        return html! {
            section.card id="copias" {
                h2 { "Copias de seguridad" }
                p.muted { "Los datos están en PostgreSQL: sus copias son las de PostgreSQL (" code { "pg_basebackup" } " con archivo de WAL, una réplica, " code { "pg_dump" } "). Las copias programadas (" code { "[backup] interval_s" } ") y las de esta página no corren con este motor." }
            }
        };
    }
    let dir = state.settings.backup.dir.clone();
    let configured = !dir.as_os_str().is_empty();
    let listed = if configured {
        let at = dir.clone();
        actix_web::rt::task::spawn_blocking(move || recent(&at))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
    } else {
        Ok(Vec::new())
    };
    html! {
        section.card id="copias" {
            h2 { "Copias de seguridad" }
            @if !configured {
                p.muted { "Sin " code { "[backup] dir" } " configurado: las copias desde la consola y la API de administración van allí." }
            } @else {
                p.muted { "En " code { (dir.display()) } "." }
                @match &listed {
                    Err(e) => p.error { "No se pudo leer el directorio: " (e) },
                    Ok(list) if list.is_empty() => p.muted { "Ninguna todavía." },
                    Ok(list) => {
                        div.table-wrap { table.rows {
                            thead { tr { th { "Copia" } th { "Hora" } th.num { "Tamaño" } th.num { "Documentos" } th { "Resultado" } } }
                            tbody {
                                @for b in list {
                                    tr {
                                        td data-label="Copia" { code { (b.name) } }
                                        @match &b.manifest {
                                            Ok(m) => {
                                                td data-label="Hora" { (format::instant_s(m.created_at)) }
                                                td.num data-label="Tamaño" { (size(m.bytes)) }
                                                td.num data-label="Documentos" { (m.documents.total()) }
                                                td data-label="Resultado" { span.badge.ok { "Completa" } " " span.muted { (format!("{:.1}", m.duration_ms / 1000.0).replace('.', ",")) " s" } }
                                            }
                                            Err(_) => {
                                                td data-label="Hora" { (b.modified.map(format::instant_s).unwrap_or_default()) }
                                                td.num data-label="Tamaño" { "—" }
                                                td.num data-label="Documentos" { "—" }
                                                td data-label="Resultado" { span.badge.bad { "Incompleta (sin manifiesto)" } }
                                            }
                                        }
                                    }
                                }
                            }
                        } }
                    }
                }
                form method="post" action={ (PATH) "/copias" } {
                    (layout::csrf_field(signed))
                    div.actions { button type="submit" { "Hacer una copia ahora" } }
                }
            }
        }
    }
}

#[derive(Deserialize)]
pub struct Nothing {}

/// `POST /console/empresas/copias`: a backup now, through the admin API's
/// code; a refusal (no `[backup] dir`, destination full) is its page.
pub async fn run(
    state: web::Data<AppState>,
    posted: Posted<Nothing>,
) -> ConsoleResult<HttpResponse> {
    posted.signed.require_admin()?;
    let name = format!("{PREFIX}{}", Utc::now().format("%Y%m%dT%H%M%S%.3fZ"));
    match crate::admin::backup::take_backup(&state, &name).await {
        Ok(_) => Ok(done(PATH, "copia")),
        Err(e) => {
            let (status, message) = super::list::refused(e)?;
            let content = html! {
                section.card {
                    p.error role="alert" { (message) }
                    p { a href={ (PATH) "#copias" } { "Volver a Empresas" } }
                }
            };
            let body = layout::page(&posted.signed, PATH, "Copia de seguridad", false, content);
            Ok(headers::page(HttpResponse::build(status)).body(body.into_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_the_colombian_way() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1_500), "1,5 KB");
        assert_eq!(size(2_345_678), "2,3 MB");
    }
}
