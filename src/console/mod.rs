//! The operator console at `/console` (decisions.md "Console"): pages
//! rendered on the server in Spanish, a stylesheet and a small script
//! compiled into the binary, and a live stream on the session cookie.
//!
//! * [`session`]: who signed in, in which environment, until when.
//! * [`sign_in`]: the admin token or a company key; sign-out; the admin's
//!   environment switch.
//! * [`guard`]: [`guard::Signed`] (every page's extractor) and
//!   [`guard::Posted`] (every change: the CSRF token of the sign-in, same origin).
//! * [`headers`]: the Content-Security-Policy and no-store of every page.
//! * [`layout`], [`format`], [`views`]: the shell, Colombian amounts and
//!   dates, pieces several pages show.
//! * [`stream`]: `GET /console/stream`, server-sent events.
//! * One module per page: [`overview`]; [`companies`], the admin's
//!   Companies section; [`documents`], the Documents section; the family
//!   pages under [`families`].
//!
//! Adding a page: a module with a handler taking [`guard::Signed`] (a GET)
//! or [`guard::Posted`] (a POST), rendering with [`layout::page`] and
//! answering through [`headers::page`]; a route in [`configure`]; a link in
//! `layout::NAV` when it is a section. A page reads and changes through the
//! same issuing, admin and store code the API uses, never a second path, and
//! shows a company session only its company in its environment
//! ([`guard::Signed::may_see`]; anything else is a 404).

pub mod assets;
pub mod companies;
pub mod documents;
pub mod error;
pub mod families;
pub mod format;
pub mod guard;
pub mod headers;
pub mod layout;
pub mod overview;
pub mod session;
pub mod sign_in;
pub mod stream;
pub mod views;

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;

use crate::config::ConsoleSettings;

pub const HOME_PATH: &str = "/console";
pub const SIGN_IN_PATH: &str = "/console/entrar";
pub const ASSETS_PATH: &str = "/console/assets";

/// The console's own state, shared by every worker.
#[derive(Debug)]
pub struct Console {
    pub sessions: session::Sessions,
    pub secure_cookie: bool,
}

impl Console {
    /// `None` when `[console] enabled = false`. Sessions are kept in
    /// `store` when several nodes may share it.
    pub fn new(
        settings: &ConsoleSettings,
        store: &emisor_store::AsyncStore,
    ) -> Option<Arc<Console>> {
        settings.enabled.then(|| {
            Arc::new(Console {
                sessions: session::Sessions::new(
                    Duration::from_secs(settings.session_ttl_s),
                    store,
                ),
                secure_cookie: settings.secure_cookie,
            })
        })
    }
}

/// The console's routes (none when it is off: `/console` is then the
/// API's 404).
pub fn configure(cfg: &mut web::ServiceConfig, console: Option<Arc<Console>>) {
    let Some(console) = console else {
        return;
    };
    cfg.service(
        web::scope(HOME_PATH)
            .app_data(web::Data::from(console))
            .app_data(web::PayloadConfig::new(guard::FORM_LIMIT))
            .app_data(
                web::FormConfig::default()
                    .limit(guard::FORM_LIMIT)
                    .error_handler(|e, _| {
                        error::ConsoleError::BadRequest(format!("Formulario inválido: {e}")).into()
                    }),
            )
            .app_data(web::QueryConfig::default().error_handler(|e, _| {
                error::ConsoleError::BadRequest(format!("Parámetros inválidos: {e}")).into()
            }))
            .app_data(web::PathConfig::default().error_handler(|e, _| {
                error::ConsoleError::NotFound(format!("recurso ({e})")).into()
            }))
            .route("", web::get().to(overview::show))
            .route("/", web::get().to(overview::show))
            .route("/entrar", web::get().to(sign_in::show))
            .route("/entrar", web::post().to(sign_in::enter))
            .route("/salir", web::post().to(sign_in::leave))
            .route("/ambiente", web::post().to(sign_in::switch))
            .route("/nomina", web::get().to(families::nomina::show))
            .route("/pos", web::get().to(families::pos::show))
            .route("/soporte", web::get().to(families::soporte::show))
            .route("/recibidas", web::get().to(families::recibidas::show))
            .route("/registro", web::get().to(families::registro::show))
            .route("/stream", web::get().to(stream::open))
            .route("/assets/{name}", web::get().to(assets::asset))
            .configure(companies::configure)
            .configure(documents::configure)
            .default_service(web::to(|| async {
                Err::<actix_web::HttpResponse, _>(error::ConsoleError::NotFound("página".into()))
            })),
    );
}
