//! The body's flags and header fields (`transmitir`, `asincrono`,
//! `ambiente`, `referencia`, `observaciones`) and a POS receipt's register
//! and cashier.

use emisor_store::Environment;

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use crate::engine::model::DocumentKind;

/// What the flags and header fields ask for.
pub(super) struct Flags {
    pub(super) transmit: Option<bool>,
    pub(super) asynchronous: Option<bool>,
    pub(super) reference: Option<String>,
    pub(super) notes: Option<String>,
}

/// The flags; `ambiente`, when given, must be the key's `environment`.
pub(super) fn read_flags(
    top: &Obj<'_>,
    kind: DocumentKind,
    environment: Option<Environment>,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<Flags> {
    let transmit = top.boolean(&["transmitir", "enviar_tax"], p)?;
    if let Some((name, _)) = transmit {
        names.set("transmit", name);
    }
    let asynchronous = top.boolean(&["asincrono"], p)?.map(|(_, b)| b);
    if kind == DocumentKind::Pos && asynchronous == Some(true) {
        p.push(
            "asincrono",
            "un documento POS se emite siempre de forma síncrona; envíe asincrono false o no lo envíe",
        );
    }
    if let Some((name, a)) = top.code(&["ambiente"], p)? {
        let wanted = match a.as_str() {
            "1" => Some(Environment::Live),
            "2" => Some(Environment::Test),
            _ => {
                p.push(name, "debe ser `1` (producción) o `2` (pruebas)");
                None
            }
        };
        if let (Some(w), Some(env)) = (wanted, environment) {
            if w != env {
                p.push(
                    name,
                    format!(
                        "es {a} pero la clave de API es de {}: el ambiente lo decide la clave",
                        if env == Environment::Live {
                            "producción (1)"
                        } else {
                            "pruebas (2)"
                        }
                    ),
                );
            }
        }
    }
    let reference = top.code(&["referencia", "referencia_externa", "id_unico"], p)?;
    if let Some((name, _)) = &reference {
        names.set("referencia_externa", *name);
    }
    let notes = top.text(&["observaciones", "notas"], p)?;
    if let Some((name, _)) = notes {
        names.set("notes", name);
    }
    Ok(Flags {
        transmit: transmit.map(|(_, b)| b),
        asynchronous,
        reference: reference.map(|(_, r)| r),
        notes: notes.map(|(_, n)| n.to_string()),
    })
}

/// `id_caja` and `id_cajero`, a POS receipt's only.
pub(super) fn read_register(
    top: &Obj<'_>,
    kind: DocumentKind,
    p: &mut Problems,
) -> TypeResult<(Option<String>, Option<String>)> {
    let id_caja = top.code(&["id_caja"], p)?;
    let id_cajero = top.code(&["id_cajero"], p)?;
    if kind != DocumentKind::Pos {
        for (given, name) in [
            (id_caja.is_some(), "id_caja"),
            (id_cajero.is_some(), "id_cajero"),
        ] {
            if given {
                p.push(name, "solo para un documento POS");
            }
        }
    }
    Ok((id_caja.map(|(_, c)| c), id_cajero.map(|(_, c)| c)))
}
