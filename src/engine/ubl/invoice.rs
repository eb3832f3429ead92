//! Invoices: 01 national sales invoice, 02 export invoice, 03 contingency
//! (issuer's, CUDE) and 04 contingency (authority's, CUFE). Root `Invoice`,
//! with `sts:InvoiceControl`. Export invoices carry operation type 10 with
//! `InvoiceTypeCode` 02 (rule FAD02), the exchange rate
//! (`cac:PaymentExchangeRate`), the Incoterm (`cac:DeliveryTerms`) and a
//! foreign buyer's address without Colombian location codes (protocol.md
//! §7.5c). A T03 names the paper invoice it transcribes in
//! `cac:AdditionalDocumentReference`.

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
