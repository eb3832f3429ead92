//! Success envelope (spec 2.1): `{"success": true, "message": …, "data": …}`.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct Envelope<T> {
    pub success: bool,
    pub message: String,
    pub data: T,
}

pub fn ok<T: Serialize>(message: impl Into<String>, data: T) -> HttpResponse {
    with_status(StatusCode::OK, message, data)
}

pub fn created<T: Serialize>(message: impl Into<String>, data: T) -> HttpResponse {
    with_status(StatusCode::CREATED, message, data)
}

pub fn with_status<T: Serialize>(
    status: StatusCode,
    message: impl Into<String>,
    data: T,
) -> HttpResponse {
    HttpResponse::build(status).json(Envelope {
        success: true,
        message: message.into(),
        data,
    })
}
