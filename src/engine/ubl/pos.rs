//! Electronic POS receipt 20 (root `Invoice`, CUDE with the PIN, with
//! `sts:InvoiceControl`) and its credit adjustment note 94 (root
//! `CreditNote`). Without a named customer the API passes
//! [`crate::engine::model::Party::final_consumer`]; a tip is a
//! document-level charge.

use super::common::{expect_kind, write_document};
use super::{BuildInput, UblError};
use crate::engine::model::DocumentKind;

pub fn build(input: &BuildInput<'_>) -> Result<String, UblError> {
    expect_kind(
        input.doc.kind,
        &[DocumentKind::Pos, DocumentKind::PosAdjustment],
    )?;
    write_document(input)
}
