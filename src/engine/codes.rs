//! Unique document codes (CUFE, CUDE, CUDS, CUNE, event CUDE), software
//! security code, NIT check digit and verification URLs.
//! INTERFACE SKELETON: bodies are filled in by the engine-crypto work.

use rust_decimal::Decimal;

/// Which code a document carries (`cbc:UUID/@schemeName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeScheme {
    Cufe,
    Cude,
    Cuds,
    Cune,
}

impl CodeScheme {
    /// `CUFE-SHA384`, `CUDE-SHA384`, `CUDS-SHA384`, `CUNE-SHA384`.
    pub fn scheme_name(self) -> &'static str {
        match self {
            CodeScheme::Cufe => "CUFE-SHA384",
            CodeScheme::Cude => "CUDE-SHA384",
            CodeScheme::Cuds => "CUDS-SHA384",
            CodeScheme::Cune => "CUNE-SHA384",
        }
    }
}

/// Inputs of the CUFE/CUDE formula (protocol.md §1.2, §1.3, §1.5): the same 15
/// fields; `key` is the technical key (CUFE) or the software PIN (CUDE).
#[derive(Debug, Clone)]
pub struct InvoiceCodeInput<'a> {
    pub number: &'a str,
    pub issue_date: &'a str,
    pub issue_time: &'a str,
    pub line_extension: Decimal,
    pub tax_iva: Decimal,
    pub tax_inc: Decimal,
    pub tax_ica: Decimal,
    pub payable: Decimal,
    pub supplier_nit: &'a str,
    pub customer_id: &'a str,
    pub key: &'a str,
    pub environment: u8,
}

/// CUFE or CUDE (same concatenation, different key).
pub fn invoice_code(input: &InvoiceCodeInput<'_>) -> String {
    let _ = input;
    unimplemented!("engine-crypto")
}
