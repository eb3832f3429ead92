//! What a console page answers when it cannot show what was asked: a page
//! in the console's look with the status code, or the sign-in page for a
//! request without a live session. Internal details go to the log only.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use maud::html;

use crate::http::error::ApiError;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No live session: the browser goes to the sign-in page.
    #[error("sign in first")]
    SignIn,
    #[error("{0}")]
    NotFound(String),
    /// A change without its CSRF token, or from another origin.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    BadRequest(String),
    /// An admin page asked by a company session.
    #[error("only the admin session can see this page")]
    AdminOnly,
    /// What the API would have answered (its status and message).
    #[error("{0}")]
    Api(#[from] ApiError),
}

impl From<emisor_store::StoreError> for ConsoleError {
    fn from(e: emisor_store::StoreError) -> Self {
        ConsoleError::Api(ApiError::from(e))
    }
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignIn => StatusCode::SEE_OTHER,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::Forbidden(_) | ConsoleError::AdminOnly => StatusCode::FORBIDDEN,
            ConsoleError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Api(e) => e.status_code(),
        }
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        if let ConsoleError::SignIn = self {
            return HttpResponse::SeeOther()
                .insert_header(("Location", super::SIGN_IN_PATH))
                .finish();
        }
        let message = match self {
            ConsoleError::Api(e) if status.is_server_error() => {
                tracing::error!(target: "emisor::console", error = %e, "console page failed");
                "Ocurrió un error interno; el detalle quedó en el registro del servidor."
                    .to_string()
            }
            ConsoleError::NotFound(what) => format!("No encontrado: {what}."),
            ConsoleError::AdminOnly => {
                "Esta página es solo para la sesión de administración.".into()
            }
            other => other.to_string(),
        };
        let body = super::layout::bare(
            "Error",
            html! {
                section.card {
                    h1 { (status.as_u16()) " · " (status.canonical_reason().unwrap_or("Error")) }
                    p.error { (message) }
                    p { a href=(super::HOME_PATH) { "Volver al resumen" } }
                }
            },
        );
        super::headers::page(HttpResponse::build(status)).body(body.into_string())
    }
}

pub type ConsoleResult<T> = Result<T, ConsoleError>;
