//! A note's original (`documento_referencia` or `cufe_factura_referencia`)
//! and its concept (`concepto_nota`); other documents take none.

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use crate::engine::model::DocumentKind;

/// The original a note refers to, and its concept.
pub(super) struct NoteReference {
    /// `documento_referencia`: the original's id.
    pub(super) id: Option<u64>,
    /// The original's code (`cufe_factura_referencia`).
    pub(super) original_code: Option<String>,
    pub(super) concept: Option<String>,
}

pub(super) fn read_note(
    top: &Obj<'_>,
    kind: DocumentKind,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<NoteReference> {
    let is_note = matches!(
        kind,
        DocumentKind::CreditNote | DocumentKind::DebitNote | DocumentKind::SupportAdjustment
    );
    let original_id = top.integer(&["documento_referencia"], p)?;
    let original_code = top.text(&["cufe_factura_referencia"], p)?;
    let concept = top.code(&["concepto_nota"], p)?;
    let mut id_documento_referencia = None;
    let mut original = None;
    if is_note {
        names.set("id_concepto_nota", "concepto_nota");
        match (original_id, original_code) {
            (None, None) => p.push(
                "documento_referencia",
                "es obligatorio en una nota: el id del documento original (o cufe_factura_referencia)",
            ),
            (Some((_, id)), code) => {
                names.set("id_documento_referencia", "documento_referencia");
                id_documento_referencia = Some(id);
                original = code.map(|(_, c)| c.trim().to_string());
            }
            (None, Some((_, c))) => {
                names.set("id_documento_referencia", "cufe_factura_referencia");
                let c = c.trim();
                if c.len() != 96 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
                    p.push(
                        "cufe_factura_referencia",
                        "debe ser el CUFE de la factura: 96 caracteres hexadecimales",
                    );
                } else {
                    original = Some(c.to_ascii_lowercase());
                }
            }
        }
    } else {
        for (given, name) in [
            (original_id.is_some(), "documento_referencia"),
            (original_code.is_some(), "cufe_factura_referencia"),
            (concept.is_some(), "concepto_nota"),
        ] {
            if given {
                p.push(name, "solo para notas crédito, débito y de ajuste");
            }
        }
    }
    let concept = is_note.then(|| {
        concept.map(|(_, c)| c).unwrap_or_else(|| {
            if kind == DocumentKind::DebitNote {
                "4"
            } else {
                "1"
            }
            .to_string()
        })
    });
    Ok(NoteReference {
        id: id_documento_referencia,
        original_code: original,
        concept,
    })
}
