//! The authority's test sets: the numbering every document of the testing
//! environment takes, whatever company issues it (decisions.md §5
//! "Numbering in the testing environment"; protocol.md 7.5c). The authority
//! checks a test document's `sts:InvoiceControl` against these ranges, not
//! against the company's own resolutions (validator rules FAB05b–FAB12b,
//! DSAB05a–DSAB12b), and codes types 01, 02 and 04 with the fixed test
//! technical key (rule FAD06).
//!
//! They are built-in resolutions: never stored, the same for every company,
//! each company with its own counter inside the range (key
//! `company ‖ resolution id` in the counters tree, see
//! `indexes::counts::counter_key`).

use chrono::{DateTime, NaiveDate, Utc};

use crate::model::{CompanyId, NumberingResolution};

/// The habilitación technical key published with every test set
/// (protocol.md §1.1).
pub const TEST_TECHNICAL_KEY: &str = "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c";

/// The test sets' resolution number (protocol.md §1.1, 7.5c).
pub const TEST_RESOLUTION_NUMBER: &str = "18760000001";

/// Ids of the built-in resolutions start here: far above any id the
/// resolutions sequence gives, and below 2^53 so JSON readers keep them
/// exact.
pub const TEST_SET_ID_BASE: u64 = 1 << 50;

const fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    match NaiveDate::from_ymd_opt(y, m, d) {
        Some(d) => d,
        None => panic!("invalid test set date"),
    }
}

/// 2019-01-19 to 2030-01-19, the validity the test sets are published with.
const VALID_FROM: NaiveDate = date(2019, 1, 19);
const VALID_TO: NaiveDate = date(2030, 1, 19);

/// One test-set range and the unified document types (1-10) it numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestSet {
    pub id: u64,
    pub prefix: &'static str,
    pub from: u64,
    pub to: u64,
    /// Empty for the PIN-coded types (support documents, POS).
    pub technical_key: &'static str,
    pub document_types: &'static [u8],
}

/// Invoices (1), exports (6, and 2 with operation 10, which the API maps to
/// 6) and T04 (8) share SETP: the authority numbers types 01, 02 and 04
/// from one invoice range (its validator maps 02 and 04 to 01). Support
/// documents (4) use SEDS and POS receipts (9) EPOS (values from a public
/// request collection of the test sets, medium confidence, protocol.md
/// 7.5c; all three take SETP's resolution number and validity, which is
/// all decisions.md names). Notes, adjustments, T03 and payroll have no
/// test set: they keep the company's own resolutions.
pub const TEST_SETS: [TestSet; 3] = [
    TestSet {
        id: TEST_SET_ID_BASE + 1,
        prefix: "SETP",
        from: 990_000_000,
        to: 995_000_000,
        technical_key: TEST_TECHNICAL_KEY,
        document_types: &[1, 6, 8],
    },
    TestSet {
        id: TEST_SET_ID_BASE + 2,
        prefix: "SEDS",
        from: 984_000_000,
        to: 985_000_000,
        technical_key: "",
        document_types: &[4],
    },
    TestSet {
        id: TEST_SET_ID_BASE + 3,
        prefix: "EPOS",
        from: 1,
        to: 1_000_000,
        technical_key: "",
        document_types: &[9],
    },
];

/// The test set numbering `document_type` in the testing environment.
pub fn for_document_type(document_type: u8) -> Option<&'static TestSet> {
    TEST_SETS
        .iter()
        .find(|t| t.document_types.contains(&document_type))
}

/// The test set with this resolution id.
pub fn by_id(id: u64) -> Option<&'static TestSet> {
    TEST_SETS.iter().find(|t| t.id == id)
}

impl TestSet {
    /// The range as a resolution of `company` (with its own counter).
    pub fn resolution(&self, company: CompanyId) -> NumberingResolution {
        let (main, others) = self.document_types.split_first().unwrap_or((&0, &[]));
        NumberingResolution {
            id: self.id,
            company_id: company,
            document_type: *main,
            also_serves: others.to_vec(),
            resolution_number: TEST_RESOLUTION_NUMBER.into(),
            resolution_date: VALID_FROM,
            prefix: self.prefix.into(),
            from: self.from,
            to: self.to,
            valid_from: VALID_FROM,
            valid_to: VALID_TO,
            technical_key: self.technical_key.into(),
            created_at: DateTime::<Utc>::from_naive_utc_and_offset(
                VALID_FROM.and_time(chrono::NaiveTime::MIN),
                Utc,
            ),
        }
    }

    /// Whether a number with this prefix falls in the range (a document
    /// numbered from it, or from a company resolution copying it, as the
    /// demo company's invoice resolution did before the test sets were
    /// built in).
    pub fn holds(&self, prefix: &str, number: u64) -> bool {
        prefix == self.prefix && (self.from..=self.to).contains(&number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_numbered_type_has_one_test_set_and_notes_have_none() {
        for (t, prefix) in [
            (1, "SETP"),
            (6, "SETP"),
            (8, "SETP"),
            (4, "SEDS"),
            (9, "EPOS"),
        ] {
            assert_eq!(for_document_type(t).unwrap().prefix, prefix, "type {t}");
        }
        for t in [2, 3, 5, 7, 10, 11] {
            assert!(for_document_type(t).is_none(), "type {t}");
        }
    }

    #[test]
    fn a_test_set_resolution_serves_all_its_types_for_one_company() {
        let r = for_document_type(6).unwrap().resolution(7);
        assert_eq!((r.company_id, r.document_type), (7, 1));
        assert!(r.serves(1) && r.serves(6) && r.serves(8) && !r.serves(2));
        assert_eq!(r.resolution_number, "18760000001");
        assert_eq!(r.valid_from.to_string(), "2019-01-19");
        assert_eq!(r.valid_to.to_string(), "2030-01-19");
        assert_eq!(r.technical_key.expose(), TEST_TECHNICAL_KEY);
        assert!(r.is_test_set());
    }
}
