//! The Companies section (`/console/empresas`), for the admin sign-in only:
//! a company session gets the 403 page on every page of it, its own
//! company's included (a company's keys, certificate and software are the
//! admin's to manage, as the admin API is the admin token's; the company
//! sees its own warnings on the overview).
//!
//! * [`list`]: the companies and the form that creates one.
//! * [`page`]: a company: certificate, software, numbering, API keys,
//!   webhook, limits, test set.
//! * [`certificate`], [`settings`], [`keys`], [`test_set`], [`backups`]:
//!   the changes, each a POST with the sign-in's CSRF token.
//!
//! Every change calls the admin API's own function (`crate::admin::…`):
//! the same checks and the same messages. A success answers 303 back to
//! the page with `?ok=<code>`, a fixed message ([`notice`]), never the
//! input; a refusal shows the page again with the API's message at the
//! form and the API's status.

pub mod backups;
pub mod certificate;
pub mod keys;
pub mod list;
pub mod page;
pub mod settings;
pub mod test_set;

use actix_web::{web, HttpResponse};

pub const PATH: &str = "/console/empresas";

/// The section's routes, inside the console's scope (the console's
/// hostile test reads them from here).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/empresas", web::get().to(list::show))
        .route("/empresas", web::post().to(list::create))
        .route("/empresas/copias", web::post().to(backups::run))
        .route("/empresas/{id}", web::get().to(page::show))
        .route(
            "/empresas/{id}/certificado",
            web::post().to(certificate::upload),
        )
        .route(
            "/empresas/{id}/software",
            web::post().to(settings::software),
        )
        .route("/empresas/{id}/webhook", web::post().to(settings::webhook))
        .route("/empresas/{id}/limites", web::post().to(settings::limits))
        .route("/empresas/{id}/llaves", web::post().to(keys::create))
        .route(
            "/empresas/{id}/llaves/{key}/revocar",
            web::post().to(keys::revoke),
        )
        .route("/empresas/{id}/set-pruebas", web::get().to(test_set::show))
        .route(
            "/empresas/{id}/set-pruebas",
            web::post().to(test_set::start),
        );
}

/// The fixed message of a `?ok=` code; anything else shows nothing.
pub fn notice(code: Option<&str>) -> Option<&'static str> {
    Some(match code? {
        "creada" => "Empresa creada.",
        "certificado" => "Certificado cargado.",
        "software" => "Software registrado.",
        "webhook" => "Webhook actualizado.",
        "limites" => "Límites actualizados.",
        "llave-revocada" => {
            "Llave revocada: la API la rechaza y sus sesiones de consola terminaron."
        }
        "set-iniciado" => "Set de pruebas iniciado.",
        "copia" => "Copia de seguridad completa.",
        _ => return None,
    })
}

/// `303` to `to` with the notice `code`.
pub fn done(to: &str, code: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header(("Location", format!("{to}?ok={code}")))
        .finish()
}

/// A company's page.
pub fn company_path(id: u64) -> String {
    format!("{PATH}/{id}")
}

/// An empty field is an absent one.
pub fn given(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// A whole number typed in a form: absent when empty; refused as the API
/// refuses a field of the wrong type.
pub fn number<T: std::str::FromStr>(
    field: &str,
    text: &str,
) -> Result<Option<T>, crate::http::error::ApiError> {
    match given(text) {
        None => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|_| crate::http::error::ApiError::validation(field, "must be a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_fixed_texts_never_the_input() {
        assert_eq!(notice(Some("creada")), Some("Empresa creada."));
        assert_eq!(notice(Some("<script>")), None);
        assert_eq!(notice(None), None);
    }

    #[test]
    fn form_numbers_are_optional_and_checked() {
        assert!(matches!(number::<u32>("x", " "), Ok(None)));
        assert!(matches!(number::<u32>("x", "12"), Ok(Some(12))));
        assert!(number::<u32>("x", "12a").is_err());
    }
}
