//! Credit note (91, root `CreditNote`) and debit note (92, root `DebitNote`,
//! totals in `cac:RequestedMonetaryTotal`): `cac:DiscrepancyResponse` with
//! the concept code and `cac:BillingReference` to the original number and
//! code. No `sts:InvoiceControl` (notes have no numbering resolution).

use super::common::{expect_kind, write_document};
use super::{BuildInput, UblError};
use crate::engine::model::DocumentKind;

pub fn build(input: &BuildInput<'_>) -> Result<String, UblError> {
    expect_kind(
        input.doc.kind,
        &[DocumentKind::CreditNote, DocumentKind::DebitNote],
    )?;
    write_document(input)
}
