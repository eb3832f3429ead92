//! `POST /admin/backup`: a backup of the running server's data, under
//! `[backup] dir` only; `POST /admin/export`: an export file of it, there
//! too; and a restored data dir's numbering confirmations
//! (`GET /admin/numeraciones-retenidas`, `POST /admin/companies/{id}/resoluciones/{rid}/confirmar`).

use actix_web::{get, post, web, HttpResponse};
use chrono::{DateTime, Utc};
use emisor_store::{ConfirmedNumbering, NumberingHold, StoreError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::backup::manifest::FamilyCounts;
use crate::backup::{destination_under, BackupError, Manifest};
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult, ErrorCode};
use crate::http::json::Json;
use crate::http::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BackupRequest {
    /// A new (or empty) directory under `[backup] dir`: relative to it, or
    /// absolute.
    pub destino: String,
}

/// What a backup's manifest says, without its file list.
#[derive(Debug, Serialize, ToSchema)]
pub struct BackupView {
    pub destino: String,
    pub format: u32,
    pub created_at: DateTime<Utc>,
    pub last_document_id: u64,
    /// How long issuing was held for the point.
    pub pause_ms: f64,
    pub duration_ms: f64,
    pub bytes: u64,
    pub files: usize,
    #[schema(value_type = Object)]
    pub documents: FamilyCounts,
}

impl BackupView {
    pub fn new(destino: String, m: &Manifest) -> Self {
        BackupView {
            destino,
            format: m.format,
            created_at: m.created_at,
            last_document_id: m.last_document_id,
            pause_ms: m.pause_ms,
            duration_ms: m.duration_ms,
            bytes: m.bytes,
            files: m.files.len(),
            documents: m.documents.clone(),
        }
    }
}

#[utoipa::path(post, path = "/admin/backup", operation_id = "takeBackup", tag = "admin", security(("admin_token" = [])),
    request_body = BackupRequest,
    responses((status = 201, description = "the backup is complete (its manifest written)", body = inline(envelope::Envelope<BackupView>)),
              (status = 409, description = "the destination is full", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "the destination is not under [backup] dir, or not empty", body = crate::http::error::ErrorEnvelope)))]
#[post("/backup")]
pub async fn take(
    state: web::Data<AppState>,
    body: Json<BackupRequest>,
) -> ApiResult<HttpResponse> {
    let view = take_backup(&state, &body.0.destino).await?;
    Ok(envelope::created("Copia de seguridad completa", view))
}

/// Takes a backup into `destino` under `[backup] dir` (the admin API's and
/// the console's "run one now"), telling the operator's room how it went.
pub async fn take_backup(state: &AppState, destino: &str) -> ApiResult<BackupView> {
    // Refused before the destination is made: nothing is left behind.
    if state.settings.store.engine == emisor_store::Engine::Postgres {
        return Err(ApiError::conflict(
            ErrorCode::Conflict,
            emisor_store::POSTGRES_BACKUPS,
        ));
    }
    let to = destination_under(&state.settings.backup.dir, destino)
        .map_err(|m| ApiError::validation("destino", m))?;
    let at = to.clone();
    let taken = state
        .store
        .on_own_thread(move |store, backup| crate::backup::take(store, backup, &at))
        .await?;
    match taken {
        Ok(manifest) => {
            tracing::info!(
                to = %to.display(),
                bytes = manifest.bytes,
                pause_ms = manifest.pause_ms,
                duration_ms = manifest.duration_ms,
                "backup complete"
            );
            let event = crate::backup::schedule::outcome(&to, Ok(&manifest));
            state.operator.send(crate::operator::BACKUP, event).await;
            Ok(BackupView::new(to.display().to_string(), &manifest))
        }
        Err(BackupError::Destination(m)) => Err(ApiError::validation("destino", m)),
        Err(full @ BackupError::Full(_)) => {
            Err(ApiError::conflict(ErrorCode::Conflict, full.to_string()))
        }
        // PostgreSQL's store is backed up with PostgreSQL's tools.
        Err(BackupError::Store(StoreError::NotOnThisEngine(m))) => {
            Err(ApiError::conflict(ErrorCode::Conflict, m))
        }
        Err(other) => {
            tracing::error!(to = %to.display(), error = %other, "backup failed");
            let event = crate::backup::schedule::outcome(&to, Err(&other.to_string()));
            state.operator.send(crate::operator::BACKUP, event).await;
            Err(ApiError::Internal(other.to_string()))
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportRequest {
    /// A new file under `[backup] dir`: relative to it, or absolute.
    pub destino: String,
}

#[utoipa::path(post, path = "/admin/export", operation_id = "exportStore", tag = "admin", security(("admin_token" = [])),
    request_body = ExportRequest,
    responses((status = 201, description = "the export is written whole (every record as of one point)", body = inline(envelope::Envelope<crate::backup::export::ExportView>)),
              (status = 409, description = "the destination is full", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "the destination is not under [backup] dir, or exists", body = crate::http::error::ErrorEnvelope),
              (status = 503, description = "the database is unavailable (PostgreSQL)", body = crate::http::error::ErrorEnvelope)))]
#[post("/export")]
pub async fn export(
    state: web::Data<AppState>,
    body: Json<ExportRequest>,
) -> ApiResult<HttpResponse> {
    let to = destination_under(&state.settings.backup.dir, &body.0.destino)
        .map_err(|m| ApiError::validation("destino", m))?;
    let (at, keys) = (to.clone(), state.store.keyring());
    let written = state
        .store
        .at_point(move |point, backup| {
            crate::backup::export::export_point(point, backup, keys, &at)
        })
        .await?;
    match written {
        Ok(view) => {
            tracing::info!(
                to = %to.display(),
                records = view.records,
                bytes = view.bytes,
                duration_ms = view.duration_ms,
                "export complete"
            );
            Ok(envelope::created("Exportación completa", view))
        }
        Err(BackupError::Destination(m)) => Err(ApiError::validation("destino", m)),
        Err(full @ BackupError::Full(_)) => {
            Err(ApiError::conflict(ErrorCode::Conflict, full.to_string()))
        }
        // The database lost: 503 STORE_UNAVAILABLE, as for new work.
        Err(BackupError::Store(unavailable @ StoreError::Unavailable(_))) => {
            Err(unavailable.into())
        }
        Err(other) => {
            tracing::error!(to = %to.display(), error = %other, "export failed");
            Err(ApiError::Internal(other.to_string()))
        }
    }
}

#[utoipa::path(get, path = "/admin/numeraciones-retenidas", operation_id = "numberingHold", tag = "admin", security(("admin_token" = [])),
    responses((status = 200, description = "the hold of a restored data dir (null when none)", body = inline(envelope::Envelope<Object>))))]
#[get("/numeraciones-retenidas")]
pub async fn hold(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let hold: Option<NumberingHold> = state
        .store
        .on_own_thread(|_, backup| backup.numbering_hold())
        .await??;
    Ok(envelope::ok("Numeraciones retenidas", hold))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmRequest {
    /// The next number this numbering gives: at least the store's own
    /// next number; the original's next one when it issued after the
    /// backup.
    #[serde(default)]
    pub siguiente: Option<u64>,
    /// True: nothing was issued from this numbering after the backup (the
    /// store's own next number goes on).
    #[serde(default)]
    pub nada_emitido: bool,
}

#[utoipa::path(post, path = "/admin/companies/{id}/resoluciones/{rid}/confirmar", operation_id = "confirmNumbering", tag = "admin", security(("admin_token" = [])),
    params(("id" = u64, Path, description = "id_empresa"), ("rid" = u64, Path, description = "the resolution (or test set) id")),
    request_body = ConfirmRequest,
    responses((status = 200, description = "the numbering issues again from `next`", body = inline(envelope::Envelope<Object>)),
              (status = 404, description = "no such resolution", body = crate::http::error::ErrorEnvelope),
              (status = 409, description = "no hold, or a number below the store's next", body = crate::http::error::ErrorEnvelope),
              (status = 422, description = "neither `siguiente` nor `nada_emitido`", body = crate::http::error::ErrorEnvelope)))]
#[post("/companies/{id}/resoluciones/{rid}/confirmar")]
pub async fn confirm(
    state: web::Data<AppState>,
    path: web::Path<(u64, u64)>,
    body: Json<ConfirmRequest>,
) -> ApiResult<HttpResponse> {
    let (company, resolution) = path.into_inner();
    let next = confirmed_next(body.0.siguiente, body.0.nada_emitido)
        .map_err(|m| ApiError::validation("siguiente", m))?;
    let confirmed: Result<ConfirmedNumbering, StoreError> = state
        .store
        .on_own_thread(move |_, backup| backup.confirm_numbering(company, resolution, next))
        .await?;
    Ok(envelope::ok("Numeración confirmada", confirmed?))
}

/// `siguiente` or `nada_emitido`, exactly one.
pub fn confirmed_next(
    next: Option<u64>,
    nothing_issued: bool,
) -> Result<Option<u64>, &'static str> {
    match (next, nothing_issued) {
        (Some(n), false) => Ok(Some(n)),
        (None, true) => Ok(None),
        _ => Err("give either `siguiente` (the next number) or `nada_emitido: true`"),
    }
}
