//! Invoices: 01 national sales invoice, 02 export invoice, 03 contingency
//! (issuer's, CUDE) and 04 contingency (authority's, CUFE). Root `Invoice`,
//! with `sts:InvoiceControl`; export invoices carry operation type 04, the
//! exchange rate (`cac:PaymentExchangeRate`) and the Incoterm
//! (`cac:DeliveryTerms`).

use super::common::{expect_kind, write_document};
use super::{BuildInput, UblError};
use crate::engine::model::DocumentKind;

pub fn build(input: &BuildInput<'_>) -> Result<String, UblError> {
    expect_kind(
        input.doc.kind,
        &[
            DocumentKind::Invoice,
            DocumentKind::ExportInvoice,
            DocumentKind::ContingencyT03,
            DocumentKind::ContingencyT04,
        ],
    )?;
    write_document(input)
}
