//! The console's page shell: the header with the navigation, the company
//! and environment being shown, sign-out, and the page's content. Written
//! with `maud`, which escapes every value it is given: nothing a document
//! or a company holds ends up as markup.

use emisor_store::Environment;
use maud::{html, Markup, DOCTYPE};

use super::guard::Signed;
use super::{ASSETS_PATH, HOME_PATH};

/// The sections of the navigation: (path, label, admin only).
const NAV: &[(&str, &str, bool)] = &[
    ("/console", "Resumen", false),
    ("/console/documentos", "Documentos", false),
    ("/console/nomina", "Nómina", false),
    ("/console/pos", "POS", false),
    ("/console/soporte", "Soporte", false),
    ("/console/recibidas", "Recibidas", false),
    ("/console/registro", "Registro", false),
    ("/console/empresas", "Empresas", true),
];

pub fn environment_name(e: Environment) -> &'static str {
    match e {
        Environment::Test => "Habilitación (pruebas)",
        Environment::Live => "Producción",
    }
}

fn head(title: &str, refresh: Option<(u32, &str)>) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            @if let Some((seconds, to)) = refresh {
                meta http-equiv="refresh" content={ (seconds) "; url=" (to) };
            }
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · emisor" }
            link rel="stylesheet" href={ (ASSETS_PATH) "/console.css" };
            script src={ (ASSETS_PATH) "/console.js" } defer {}
        }
    }
}

/// A page of a signed-in session. `live` asks the script to refresh the
/// page's `main` when the signed-in console's stream tells of a change.
pub fn page(signed: &Signed, active: &str, title: &str, live: bool, content: Markup) -> Markup {
    page_refreshing(signed, active, title, live, None, content)
}

/// A page the browser loads again from `refresh.1` after `refresh.0`
/// seconds, for progress no stream event tells of (a `<meta
/// http-equiv="refresh">`: no script, which the CSP leaves alone).
pub fn page_refreshing(
    signed: &Signed,
    active: &str,
    title: &str,
    live: bool,
    refresh: Option<(u32, &str)>,
    content: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="es-CO" {
            (head(title, refresh))
            body data-live=[live.then_some("1")] {
                header.top {
                    a.brand href=(HOME_PATH) { "emisor" }
                    nav {
                        @for (path, label, admin_only) in NAV {
                            @if !*admin_only || signed.is_admin() {
                                a href=(path) class=[(*path == active).then_some("active")] { (label) }
                            }
                        }
                    }
                    div.who {
                        span.scope { (signed.scope_label()) }
                        @if signed.is_admin() {
                            form.inline method="post" action="/console/ambiente" {
                                (csrf_field(signed))
                                select name="ambiente" aria-label="Ambiente" data-autosubmit="1" {
                                    @for env in [Environment::Test, Environment::Live] {
                                        option value=(env.authority_code()) selected[env == signed.environment()] {
                                            (environment_name(env))
                                        }
                                    }
                                }
                                noscript { button type="submit" { "Cambiar" } }
                            }
                        } @else {
                            span.env { (environment_name(signed.environment())) }
                        }
                        form.inline method="post" action="/console/salir" {
                            (csrf_field(signed))
                            button.link type="submit" { "Salir" }
                        }
                    }
                }
                main id="main" {
                    h1 { (title) }
                    (content)
                }
                span id="live-status" hidden {}
            }
        }
    }
}

/// A page outside a session (sign-in, errors).
pub fn bare(title: &str, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="es-CO" {
            (head(title, None))
            body.bare {
                main id="main" { (content) }
            }
        }
    }
}

/// The hidden field every form carries.
pub fn csrf_field(signed: &Signed) -> Markup {
    html! { input type="hidden" name="csrf" value=(signed.csrf()); }
}

/// A button that posts to `action` after the browser asks `confirm`.
pub fn action_button(signed: &Signed, action: &str, label: &str, confirm: &str) -> Markup {
    html! {
        form.inline method="post" action=(action) data-confirm=(confirm) {
            (csrf_field(signed))
            button type="submit" { (label) }
        }
    }
}

/// A state's badge (spec 3.1 names).
pub fn state_badge(state: u8) -> Markup {
    let class = match state {
        emisor_store::state::ACCEPTED => "badge ok",
        emisor_store::state::REJECTED | emisor_store::state::DEAD_LETTER => "badge bad",
        emisor_store::state::QUEUED | emisor_store::state::WAITING_AUTHORITY => "badge wait",
        _ => "badge",
    };
    html! { span class=(class) { (super::views::state_name(state)) } }
}

/// A count with its label, for the overview's tiles.
pub fn tile(label: &str, value: impl std::fmt::Display, alert: bool) -> Markup {
    html! {
        div class={ "tile" @if alert { " alert" } } {
            span.value { (value) }
            span.label { (label) }
        }
    }
}
