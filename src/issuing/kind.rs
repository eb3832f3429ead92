//! What a stored document is, as issuing decides by it: one of the
//! engine's invoicing kinds (types 1-10) or a payroll (11, 12). The store
//! keeps the number; every decision issuing takes by a document's type
//! (which SOAP operation sends it, which builder builds it again, whether
//! it goes ahead at the till or is dated the day it is sent) is a method
//! here or on [`DocumentKind`], one `match` each.

use emisor_store::{DocumentRecord, PAYROLL_ADJUSTMENT_DOCUMENT_TYPE, PAYROLL_DOCUMENT_TYPE};

use crate::authority::port::AuthorityRequest;
use crate::engine::model::DocumentKind;
use crate::engine::payroll::model::PayrollKind;

/// A stored document's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredKind {
    /// An invoice, note, support document, contingency invoice or POS
    /// receipt: built from a `DocumentRequest`.
    Invoicing(DocumentKind),
    /// A payroll (type 11) or its adjustment (12): built from a
    /// `PayrollRequest`.
    Payroll(PayrollType),
}

/// The store's two payroll types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayrollType {
    /// `NominaIndividual` (type 11).
    Individual,
    /// `NominaIndividualDeAjuste`, replacing or deleting (type 12).
    Adjustment,
}

impl PayrollType {
    /// The store's document type.
    pub fn code(self) -> u8 {
        match self {
            PayrollType::Individual => PAYROLL_DOCUMENT_TYPE,
            PayrollType::Adjustment => PAYROLL_ADJUSTMENT_DOCUMENT_TYPE,
        }
    }

    /// The type a payroll of `kind` is stored as.
    pub fn of(kind: PayrollKind) -> PayrollType {
        match kind {
            PayrollKind::Individual => PayrollType::Individual,
            PayrollKind::Replace | PayrollKind::Delete => PayrollType::Adjustment,
        }
    }
}

impl StoredKind {
    /// The kind of a stored document type (`None`: not one issuing builds).
    pub fn from_code(code: u8) -> Option<StoredKind> {
        match code {
            PAYROLL_DOCUMENT_TYPE => Some(StoredKind::Payroll(PayrollType::Individual)),
            PAYROLL_ADJUSTMENT_DOCUMENT_TYPE => Some(StoredKind::Payroll(PayrollType::Adjustment)),
            code => DocumentKind::from_code(code).map(StoredKind::Invoicing),
        }
    }

    /// The kind of a stored document.
    pub fn of(doc: &DocumentRecord) -> Option<StoredKind> {
        StoredKind::from_code(doc.document_type)
    }

    /// The invoicing kind, if it is one.
    pub fn invoicing(self) -> Option<DocumentKind> {
        match self {
            StoredKind::Invoicing(kind) => Some(kind),
            StoredKind::Payroll(_) => None,
        }
    }

    pub fn is_payroll(self) -> bool {
        matches!(self, StoredKind::Payroll(_))
    }

    /// The SOAP operation that sends the document's ZIP.
    pub fn send(self, zip_name: String, zip: Vec<u8>) -> AuthorityRequest {
        match self {
            StoredKind::Invoicing(_) => AuthorityRequest::SendBillSync { zip_name, zip },
            StoredKind::Payroll(_) => AuthorityRequest::SendNominaSync { zip },
        }
    }

    /// Sent ahead of the background sends when its caller waits (a POS
    /// sale at the till).
    pub fn goes_first(self) -> bool {
        self.invoicing().is_some_and(DocumentKind::is_pos)
    }

    /// Dated the day it reaches the authority ([`super::same_day`]).
    pub fn dated_the_day_it_is_sent(self) -> bool {
        self.invoicing()
            .is_some_and(DocumentKind::dated_the_day_it_is_sent)
    }
}

/// A stored document's invoicing kind (`None`: a payroll, or a type
/// issuing does not build).
pub fn invoicing_kind(doc: &DocumentRecord) -> Option<DocumentKind> {
    StoredKind::of(doc).and_then(StoredKind::invoicing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stored_type_has_its_kind() {
        for kind in DocumentKind::ALL {
            assert_eq!(
                StoredKind::from_code(kind.code()),
                Some(StoredKind::Invoicing(kind))
            );
        }
        for t in [PayrollType::Individual, PayrollType::Adjustment] {
            assert_eq!(
                StoredKind::from_code(t.code()),
                Some(StoredKind::Payroll(t))
            );
        }
        assert_eq!(StoredKind::from_code(0), None);
        assert_eq!(StoredKind::from_code(13), None);
    }
}
