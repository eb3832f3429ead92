//! `GET /registry/hoja-de-vida/{cufe}`: every event of the invoice in
//! order (date, codes, name, CUDE, who) and its current legitimate holder.

use actix_web::{get, web, HttpResponse};
use serde_json::json;

use crate::http::auth::AuthContext;
use crate::http::envelope;
use crate::http::error::{ApiError, ApiResult};
use crate::http::invoice_events::copy_view;
use crate::http::state::AppState;
use crate::issuing::invoice_events::state_name;
use crate::issuing::invoice_events::title::{find, normalize_cufe};

#[utoipa::path(get, path = "/v1/api/registry/hoja-de-vida/{cufe}", operation_id = "getTitleHistory", tag = "registry",
    security(("api_key" = [])), params(("cufe" = String, Path, description = "CUFE of the invoice")),
    responses((status = 200, description = "the history and the legitimate holder"),
              (status = 404, description = "unknown CUFE", body = crate::http::error::ErrorEnvelope)))]
#[get("/registry/hoja-de-vida/{cufe}")]
pub async fn history(
    state: web::Data<AppState>,
    ctx: AuthContext,
    cufe: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let cufe = normalize_cufe(&cufe)?;
    let t = find(&state.issuing, &ctx.caller(), &ctx.nit, &cufe)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("invoice with CUFE {cufe}")))?;
    let events: Vec<_> = t
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            json!({
                "orden": i + 1,
                "fecha": e.issued_at.to_rfc3339(),
                "codigo_evento": e.code,
                "codigo_evento_tax": e.authority_code,
                "nombre_evento": e.name,
                "cude_evento": e.cude,
                "quien": {"nit": e.sender.id_number, "nombre": e.sender.name, "id_empresa": e.sender.company_id},
                "receptor": {"nit": e.receiver.id_number, "nombre": e.receiver.name},
                "estado_tax": state_name(e.state),
                "detalles": e.details,
            })
        })
        .collect();
    Ok(envelope::ok(
        "Hoja de vida del título",
        json!({
            "cufe": t.cufe,
            "numero": t.number,
            "total": t.total.parse::<rust_decimal::Decimal>().ok(),
            "fecha_vencimiento": t.due_date,
            "proveedor": {"nit": t.vendor.id_number, "nombre": t.vendor.name},
            "comprador": {"nit": t.buyer.id_number, "nombre": t.buyer.name},
            "tenedor_legitimo": {"nit": t.holder.id_number, "nombre": t.holder.name, "id_empresa": t.holder.company_id},
            "copia_tax": copy_view(&t.authority_copy),
            "eventos": events,
        }),
    ))
}
