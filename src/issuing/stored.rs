//! What the store keeps as a document's request: the caller's JSON as it
//! was hashed (what the API shows as sent, and reads back for a note of it)
//! and, behind it, the versioned domain request the document was built
//! from, which every later build of the document reads, so that a change
//! to an API's mapping never changes a document already numbered.
//!
//! Two formats, told apart by their first byte:
//! * today's: [`MAGIC`], `<version> <length of the caller's JSON>\n`, the
//!   caller's JSON, then the domain request as JSON ([`Versioned`]);
//! * the earlier one: the caller's JSON alone (it starts with `{`). Such a
//!   document is built again through its API's translator
//!   ([`super::request::Translator`]), which is kept as the reader of that
//!   format.

use serde::{Deserialize, Serialize};

use super::error::{IssueError, IssueResult};
use crate::engine::model::Document;
use crate::engine::payroll::model::PayrollDocument;

/// The first bytes of a stored request of today's format (an ASCII record
/// separator: no JSON starts with it).
pub const MAGIC: &[u8] = b"\x1eemisor-request\n";

/// The version of the domain request written now.
pub const VERSION: u32 = 1;

/// The domain request a document was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// An invoicing document (types 1-10).
    Invoicing(Box<Document>),
    /// A payroll or its adjustment.
    Payroll(Box<PayrollDocument>),
}

/// [`Domain`] borrowed, for writing.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainRef<'a> {
    Invoicing(&'a Document),
    Payroll(&'a PayrollDocument),
}

/// The domain request with its version.
#[derive(Debug, Serialize, Deserialize)]
pub struct Versioned<D> {
    pub version: u32,
    pub domain: D,
}

/// A stored request, read.
#[derive(Debug)]
pub enum Stored<'a> {
    /// The earlier format: the caller's JSON only.
    AsSent(&'a [u8]),
    /// Today's: the caller's JSON and the domain request.
    Domain { caller: &'a [u8], domain: Domain },
}

/// The bytes stored for a document made from `caller` (its canonical JSON)
/// as `domain` (the caller's alone under the test failpoint
/// `FAILPOINT_REQUEST_FORMAT=as_sent`, [`super::failpoint`]).
pub fn write(caller: &[u8], domain: DomainRef<'_>) -> IssueResult<Vec<u8>> {
    if super::failpoint::request_as_sent() {
        return Ok(caller.to_vec());
    }
    let head = format!("{VERSION} {}\n", caller.len());
    let mut out = Vec::with_capacity(MAGIC.len() + head.len() + caller.len() + 4096);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(caller);
    serde_json::to_writer(
        &mut out,
        &Versioned {
            version: VERSION,
            domain,
        },
    )
    .map_err(|e| IssueError::Internal(format!("writing the domain request: {e}")))?;
    Ok(out)
}

/// The caller's part and the domain part of a stored request of today's
/// format (`None`: the earlier format, or bytes that are not one).
fn split(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let end = rest.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(rest.get(..end)?).ok()?;
    let (_, len) = head.split_once(' ')?;
    let len: usize = len.parse().ok()?;
    let rest = rest.get(end + 1..)?;
    Some((rest.get(..len)?, rest.get(len..)?))
}

/// The caller's JSON of a stored request, whatever its format.
pub fn caller(bytes: &[u8]) -> &[u8] {
    split(bytes).map_or(bytes, |(caller, _)| caller)
}

/// A stored request, read: its domain request when it has one.
pub fn read(bytes: &[u8]) -> IssueResult<Stored<'_>> {
    if !bytes.starts_with(MAGIC) {
        return Ok(Stored::AsSent(bytes));
    }
    let (caller, domain) = split(bytes)
        .ok_or_else(|| IssueError::Internal("a stored request's frame is cut short".into()))?;
    let versioned: Versioned<Domain> = serde_json::from_slice(domain)
        .map_err(|e| IssueError::Internal(format!("reading a stored domain request: {e}")))?;
    if versioned.version != VERSION {
        return Err(IssueError::Internal(format!(
            "a stored domain request of version {} (this build reads {VERSION})",
            versioned.version
        )));
    }
    Ok(Stored::Domain {
        caller,
        domain: versioned.domain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::DocumentKind;
    use crate::engine::payroll::model::PayrollKind;

    #[test]
    fn a_payroll_comes_back_as_it_was_written() {
        for kind in [
            PayrollKind::Individual,
            PayrollKind::Replace,
            PayrollKind::Delete,
        ] {
            let document = crate::engine::payroll::tests::sample(kind);
            let bytes = write(b"{}", DomainRef::Payroll(&document)).unwrap();
            match read(&bytes).unwrap() {
                Stored::Domain { domain, .. } => {
                    assert_eq!(domain, Domain::Payroll(Box::new(document)))
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_document_comes_back_as_it_was_written() {
        for kind in DocumentKind::ALL {
            let document = crate::engine::ubl::tests::sample(kind);
            let caller = br#"{"a":1}"#;
            let bytes = write(caller, DomainRef::Invoicing(&document)).unwrap();
            assert_eq!(super::caller(&bytes), caller);
            match read(&bytes).unwrap() {
                Stored::Domain { caller: c, domain } => {
                    assert_eq!(c, caller);
                    assert_eq!(domain, Domain::Invoicing(Box::new(document)));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_request_of_the_earlier_format_is_the_callers_json() {
        let raw = br#"{"type_document_id":1}"#;
        assert!(matches!(read(raw).unwrap(), Stored::AsSent(r) if r == raw));
        assert_eq!(caller(raw), raw);
    }
}
