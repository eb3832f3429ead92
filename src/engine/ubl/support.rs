//! Support document 05 (root `Invoice`, CUDS) and its adjustment note 95
//! (root `CreditNote`, CUDS). The vendor not obliged to invoice is the
//! `AccountingSupplierParty` and the issuing company the
//! `AccountingCustomerParty` (the CUDS takes NumSNO from the supplier and
//! NITABS from the customer); each line is dated with `cac:InvoicePeriod`
//! ("Por operación"). The adjustment note's schema has no
//! `WithholdingTaxTotal`, so its withholdings are not written. A resident
//! vendor (operation 10) is written in `cac:PartyTaxScheme` as a NIT, scheme
//! 31 with its check digit, even with a cédula (rules DSAJ25a/DSAJ24b).

use super::common::{expect_kind, write_document};
use super::{BuildInput, UblError};
use crate::engine::model::DocumentKind;

pub fn build(input: &BuildInput<'_>) -> Result<String, UblError> {
    expect_kind(
        input.doc.kind,
        &[
            DocumentKind::SupportDocument,
            DocumentKind::SupportAdjustment,
        ],
    )?;
    write_document(input)
}
