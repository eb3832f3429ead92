//! UBL 2.1 builders, one module per document family, sharing
//! [`common::write_document`].
//!
//! Every builder returns the unsigned document as the signer expects it:
//! `<?xml version="1.0" encoding="UTF-8" standalone="no"?>` immediately
//! followed by the root element in inclusive C14N canonical form, with every
//! namespace (`cac cbc ds ext sts xades xades141 xsi` and the default) on
//! the root, and the signature slot as the last
//! `<ext:ExtensionContent></ext:ExtensionContent>`.

pub mod attached;
pub mod common;
pub mod invoice;
pub mod notes;
pub mod pos;
pub mod sector;
pub mod support;

use thiserror::Error;

use super::model::{Document, DocumentKind, IssuerContext};
use super::totals::{self, Totals, TotalsError};
use super::xml_writer::XmlWriteError;

#[derive(Debug, Error)]
pub enum UblError {
    #[error(transparent)]
    Write(#[from] XmlWriteError),
    #[error(transparent)]
    Totals(#[from] TotalsError),
    #[error("this builder does not build documents of kind {0:?}")]
    WrongKind(DocumentKind),
    /// A signed document the container builder cannot read.
    #[error("unreadable signed document: {0}")]
    Unreadable(String),
}

/// What a builder needs: the document, its issuer, its computed totals, its
/// code (CUFE/CUDE/CUDS), the verification URL and the software security
/// code.
#[derive(Debug, Clone, Copy)]
pub struct BuildInput<'a> {
    pub doc: &'a Document,
    pub ctx: &'a IssuerContext,
    pub totals: &'a Totals,
    pub code: &'a str,
    pub qr_url: &'a str,
    pub software_security_code: &'a str,
}

/// Builds the unsigned XML of any kind, dispatching to its family.
pub fn build(input: &BuildInput<'_>) -> Result<String, UblError> {
    match input.doc.kind {
        DocumentKind::Invoice
        | DocumentKind::ExportInvoice
        | DocumentKind::ContingencyT03
        | DocumentKind::ContingencyT04 => invoice::build(input),
        DocumentKind::CreditNote | DocumentKind::DebitNote => notes::build(input),
        DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => support::build(input),
        DocumentKind::Pos | DocumentKind::PosAdjustment => pos::build(input),
    }
}

/// Computes the totals and builds the unsigned XML.
pub fn build_document(
    doc: &Document,
    ctx: &IssuerContext,
    code: &str,
    qr_url: &str,
    software_security_code: &str,
) -> Result<String, UblError> {
    let totals = totals::compute(doc)?;
    build(&BuildInput {
        doc,
        ctx,
        totals: &totals,
        code,
        qr_url,
        software_security_code,
    })
}

#[cfg(test)]
pub(crate) mod tests;
