//! The counts kept beside the records: documents per (type, state), and a
//! company's documents per month, each value stamped with what the repair
//! after an unclean stop needs to tell whether a change reached it.

use crate::encoding::codec::{id_key, read_u64, scoped_key};
use crate::model::test_set::by_id;
use crate::model::CompanyId;

pub(crate) fn count_key(document_type: u8, state: u8) -> [u8; 2] {
    [document_type, state]
}

pub(crate) fn usage_key(company: CompanyId, period: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..8].copy_from_slice(&company.to_be_bytes());
    k[8..].copy_from_slice(&period.to_be_bytes());
    k
}

/// The two fields of a replaced record its count needs (decoding the
/// whole record just to read them showed in the profile).
#[derive(serde::Deserialize)]
pub(crate) struct Counted {
    pub document_type: u8,
    pub state: u8,
    #[serde(default)]
    pub pending_build: bool,
}

/// The state index's key byte of documents whose build has not finished
/// (above every state): found at start-up without reading every record.
pub(crate) const PENDING_BUILD: u8 = 0xFF;

/// A document's id set in `documents_by_state` (`id_sets`): its state,
/// or [`PENDING_BUILD`] while it is half built.
pub(crate) fn state_set(state: u8, pending_build: bool) -> u8 {
    if pending_build {
        PENDING_BUILD
    } else {
        state
    }
}

/// The per-(type, state) count a record is in: built documents only.
pub(crate) fn counted(document_type: u8, state: u8, pending_build: bool) -> Option<[u8; 2]> {
    (!pending_build).then_some(count_key(document_type, state))
}

/// A `document_counts` value: the count, then the marker token of the
/// last change that moved it (how a repair tells whether the change of
/// the last marker reached it; older values have none).
pub(crate) fn count_value(count: u64, token: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&count.to_be_bytes());
    v[8..].copy_from_slice(&token.to_be_bytes());
    v
}

pub(crate) fn value_tail(v: &[u8]) -> u64 {
    v.get(8..).and_then(read_u64).unwrap_or(0)
}

/// A `monthly_usage` value: the count, then the id of the last document
/// counted (the repair's witness, as for counts).
pub(crate) fn usage_value(count: u64, last_id: u64) -> [u8; 16] {
    count_value(count, last_id)
}

/// A stored [`usage_value`] as (count, last id counted); none is (0, 0).
pub(crate) fn read_usage(value: Option<&[u8]>) -> (u64, u64) {
    value
        .map(|v| (read_u64(v).unwrap_or(0), value_tail(v)))
        .unwrap_or((0, 0))
}

/// The key of a resolution's counter: its id for a company's own
/// resolution, `company ‖ id` for a test set (one counter per company).
pub(crate) fn counter_key(company: CompanyId, resolution_id: u64) -> Vec<u8> {
    if by_id(resolution_id).is_some() {
        scoped_key(company, resolution_id).to_vec()
    } else {
        id_key(resolution_id).to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_set::TEST_SETS;

    #[test]
    fn test_set_counters_are_per_company_and_never_collide_with_own_ones() {
        let setp = TEST_SETS[0].id;
        assert_ne!(counter_key(1, setp), counter_key(2, setp));
        assert_eq!(counter_key(1, 5), counter_key(2, 5), "own ids are global");
        assert_ne!(counter_key(1, setp), id_key(setp).to_vec());
        assert!(setp < (1 << 53));
    }
}
