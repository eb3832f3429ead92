//! The send-day rule of annex 1.9 of the sales invoice (Res. 000165/2023,
//! in force since 2024-05-01 by Res. 000008/2024): a sales invoice (01,
//! export 02), credit note (91) or debit note (92) is dated the day it
//! reaches the authority; the window of several days before it is gone.
//! The rule codes are the FAD09 family's: FAD09e, CAD09e, DAD09e.
//! Contingency invoices (03, 04) keep their own rules; support documents,
//! their adjustment notes and equivalent documents (POS) are not under
//! this annex and keep their date through the queue.

use chrono::NaiveDate;

use super::document::{DocumentFacts, Family};

/// The rule a document of these facts breaks when its `cbc:IssueDate` is
/// not the day it is received, when the rule applies to it.
pub fn rule(facts: &DocumentFacts) -> Option<&'static str> {
    match (facts.family, facts.type_code.as_str()) {
        (Family::Invoice, "01" | "02") => Some("FAD09e"),
        (Family::CreditNote, "91") => Some("CAD09e"),
        (Family::DebitNote, "92") => Some("DAD09e"),
        _ => None,
    }
}

/// The rejection of a document under the rule dated another day than
/// `today` (Colombia time, on the simulator's clock), if it is.
pub fn check(facts: &DocumentFacts, today: NaiveDate) -> Option<String> {
    let rule = rule(facts)?;
    let issued = facts.issue_date.as_deref()?;
    if NaiveDate::parse_from_str(issued, "%Y-%m-%d").is_ok_and(|d| d == today) {
        return None;
    }
    let what = match facts.family {
        Family::CreditNote => "de la nota crédito",
        Family::DebitNote => "de la nota débito",
        _ => "de la factura",
    };
    Some(format!(
        "Regla: {rule}, Rechazo: La fecha de generación {what} ({issued}) es diferente a la fecha de su recepción ({today})."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(family: Family, type_code: &str, date: &str) -> DocumentFacts {
        DocumentFacts {
            family,
            type_code: type_code.into(),
            number: "SETP990000001".into(),
            code: "c".into(),
            issuer_nit: "900000001".into(),
            software_id: None,
            issue_date: Some(date.into()),
            receiver_id: None,
        }
    }

    #[test]
    fn invoices_and_notes_are_dated_the_day_they_are_received() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
        for (family, code, rule) in [
            (Family::Invoice, "01", "FAD09e"),
            (Family::Invoice, "02", "FAD09e"),
            (Family::CreditNote, "91", "CAD09e"),
            (Family::DebitNote, "92", "DAD09e"),
        ] {
            assert_eq!(check(&facts(family, code, "2026-11-29"), today), None);
            let refused = check(&facts(family, code, "2026-11-28"), today).unwrap();
            assert!(
                refused.starts_with(&format!("Regla: {rule}, Rechazo: ")),
                "{refused}"
            );
            assert!(refused.contains("2026-11-28") && refused.contains("2026-11-29"));
            // A day ahead is no better.
            assert!(check(&facts(family, code, "2026-11-30"), today).is_some());
        }
    }

    #[test]
    fn contingency_support_pos_and_payroll_keep_their_own_rules() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 29).unwrap();
        for (family, code) in [
            (Family::Invoice, "03"),
            (Family::Invoice, "04"),
            (Family::Invoice, "05"),
            (Family::CreditNote, "95"),
            (Family::Invoice, "20"),
            (Family::CreditNote, "94"),
            (Family::Event, "96"),
            (Family::Payroll, "102"),
        ] {
            assert_eq!(check(&facts(family, code, "2026-11-01"), today), None);
        }
    }
}
