//! The eight routes of spec 4.2 and the document type a body is read as.

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use crate::engine::model::DocumentKind;

/// The eight routes of spec 4.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Generic,
    Factura,
    NotaCredito,
    NotaDebito,
    DocumentoSoporte,
    NotaAjusteDs,
    Pos,
    Exportacion,
}

impl Route {
    pub const ALL: [Route; 8] = [
        Route::Generic,
        Route::Factura,
        Route::NotaCredito,
        Route::NotaDebito,
        Route::DocumentoSoporte,
        Route::NotaAjusteDs,
        Route::Pos,
        Route::Exportacion,
    ];

    /// As stored with the request.
    pub fn tag(self) -> &'static str {
        match self {
            Route::Generic => "",
            Route::Factura => "factura",
            Route::NotaCredito => "nota-credito",
            Route::NotaDebito => "nota-debito",
            Route::DocumentoSoporte => "documento-soporte",
            Route::NotaAjusteDs => "nota-ajuste-ds",
            Route::Pos => "pos",
            Route::Exportacion => "exportacion",
        }
    }

    pub fn from_tag(tag: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.tag() == tag)
    }

    pub(super) fn kind(self) -> Option<DocumentKind> {
        match self {
            Route::Generic => None,
            Route::Factura => Some(DocumentKind::Invoice),
            Route::NotaCredito => Some(DocumentKind::CreditNote),
            Route::NotaDebito => Some(DocumentKind::DebitNote),
            Route::DocumentoSoporte => Some(DocumentKind::SupportDocument),
            Route::NotaAjusteDs => Some(DocumentKind::SupportAdjustment),
            Route::Pos => Some(DocumentKind::Pos),
            Route::Exportacion => Some(DocumentKind::ExportInvoice),
        }
    }
}

/// `tipo` values (spec 4.2).
pub(super) fn kind_of_tipo(tipo: &str) -> Option<DocumentKind> {
    Some(match tipo.trim().to_ascii_lowercase().as_str() {
        "factura" | "fe" => DocumentKind::Invoice,
        "nota_credito" | "nc" => DocumentKind::CreditNote,
        "nota_debito" | "nd" => DocumentKind::DebitNote,
        "documento_soporte" | "ds" => DocumentKind::SupportDocument,
        "nota_ajuste_ds" | "na" => DocumentKind::SupportAdjustment,
        "exportacion" | "fx" => DocumentKind::ExportInvoice,
        "pos" => DocumentKind::Pos,
        _ => return None,
    })
}

pub(super) const TIPOS: &str = "factura|fe, nota_credito|nc, nota_debito|nd, documento_soporte|ds, nota_ajuste_ds|na, exportacion|fx, pos";

/// A support document or its adjustment note: the counterpart is a vendor.
pub(super) fn is_support(kind: DocumentKind) -> bool {
    matches!(
        kind,
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment
    )
}

/// The document type: the route's, or `tipo` on the generic route; a
/// top-level `tipo_documento` `02` makes an invoice an export.
pub(super) fn read_kind(
    top: &Obj<'_>,
    route: Route,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<DocumentKind> {
    let tipo = top.code(&["tipo"], p)?;
    let from_tipo = match &tipo {
        Some((_, t)) => match kind_of_tipo(t) {
            Some(k) => Some(k),
            None => {
                p.push("tipo", format!("debe ser uno de: {TIPOS}"));
                None
            }
        },
        None => None,
    };
    let mut kind = match (route.kind(), from_tipo) {
        (None, Some(k)) => k,
        (None, None) => {
            if tipo.is_none() {
                p.push(
                    "tipo",
                    format!("es obligatorio en /facturacion-es/: {TIPOS}"),
                );
            }
            DocumentKind::Invoice
        }
        (Some(r), Some(k))
            if r != k && !(r == DocumentKind::Invoice && k == DocumentKind::ExportInvoice) =>
        {
            p.push(
                "tipo",
                format!("no corresponde a la ruta /facturacion-es/{}", route.tag()),
            );
            r
        }
        (Some(_), Some(k)) => k,
        (Some(r), None) => r,
    };
    names.set("id_tipo_documento", "tipo");
    if let Some((name, t)) = top.code(&["tipo_documento"], p)? {
        match t.as_str() {
            "02" | "2" if matches!(kind, DocumentKind::Invoice | DocumentKind::ExportInvoice) => {
                kind = DocumentKind::ExportInvoice
            }
            "01" | "1" if kind == DocumentKind::Invoice => {}
            _ => p.push(
                name,
                "en el cuerpo solo marca una factura: `01` nacional o `02` exportación",
            ),
        }
    }
    Ok(kind)
}
