//! A note's original. The caller names it by id or by its code (a CUFE),
//! or both; issuing looks it up in the caller's company and environment (a
//! test note never names a production invoice), checks that the note may
//! reference it
//! ([`DocumentKind::may_reference`]) and fills the note's billing
//! reference. Whether the original exists is the one problem of a request
//! that only issuing can tell: when the API's mapping refused the request
//! for other problems, the original's goes among them, at its place
//! ([`Refused`]), so the caller hears of every problem in one answer.

use emisor_store::{CompanyId, DocumentRecord, Environment};

use super::error::{FieldError, IssueError, IssueResult};
use super::request::{cap, Api, DocumentRequest, ReferencedDocument};
use super::stored;
use super::Issuing;
use crate::engine::codes::CodeScheme;
use crate::engine::model::{BillingReference, DocumentKind};

/// A note's original as the caller named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The original's id (`None`: named by its code alone).
    pub id: Option<u64>,
    /// The caller's field that names it (`id_documento_referencia`,
    /// `documento_referencia`, `cufe_factura_referencia`), where its
    /// problem is reported.
    pub field: String,
    /// Its code, when the caller named it by its code (boxed: rare, and a
    /// refusal carries it).
    pub code: Option<Box<ByCode>>,
}

impl Reference {
    /// The original named by its id.
    pub fn by_id(id: u64, field: impl Into<String>) -> Reference {
        Reference {
            id: Some(id),
            field: field.into(),
            code: None,
        }
    }
}

/// An original named by its code (a CUFE, lower case), with both or
/// without its id: both name the same document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByCode {
    pub code: String,
    /// The caller's field that names the code, where its problem goes.
    pub field: String,
}

/// What a code names that no document of the company has.
pub const UNKNOWN_CODE: &str = "no document of the company has that code";

/// The original of a refused note, still to be looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub note: DocumentKind,
    pub reference: Reference,
    /// Where its problem goes among the others.
    pub at: usize,
}

/// A request its API's mapping refused: the caller's problems, named as
/// the caller names its fields, in order, and the note's original the
/// request names, if any, whose problem issuing adds at its place. The
/// mapping's problems (from `counted_from`; a family's own, listed before
/// them, are not counted) are listed up to [`super::request::MAX_DETAILS`],
/// the original's included.
#[derive(Debug, Clone)]
pub struct Refused {
    pub details: Vec<FieldError>,
    pub pending: Option<Pending>,
    pub counted_from: usize,
}

impl Refused {
    /// The refusal naming each field (the original's too) through `name`.
    pub fn renamed(self, name: impl Fn(&str) -> String) -> Refused {
        Refused {
            details: self
                .details
                .into_iter()
                .map(|d| FieldError::new(name(&d.field), d.message))
                .collect(),
            pending: self.pending.map(|p| Pending {
                reference: Reference {
                    field: name(&p.reference.field),
                    code: p.reference.code.map(|c| {
                        Box::new(ByCode {
                            field: name(&c.field),
                            ..*c
                        })
                    }),
                    ..p.reference
                },
                ..p
            }),
            counted_from: self.counted_from,
        }
    }

    /// The family's own problems, listed before the mapping's.
    pub fn after(mut self, mut first: Vec<FieldError>) -> Refused {
        let shift = first.len();
        first.append(&mut self.details);
        Refused {
            details: first,
            pending: self.pending.map(|p| Pending {
                at: p.at + shift,
                ..p
            }),
            counted_from: self.counted_from + shift,
        }
    }

    /// The problems with the original's (`None`: it exists and fits), at
    /// most [`super::request::MAX_DETAILS`] of the mapping's.
    pub fn with(self, original: Option<FieldError>) -> Vec<FieldError> {
        let mut details = self.details;
        if let (Some(problem), Some(p)) = (original, &self.pending) {
            details.insert(p.at.min(details.len()), problem);
        }
        let from = self.counted_from.min(details.len());
        let counted = details.split_off(from);
        details.extend(cap(counted));
        details
    }

    /// The problems as though the original existed and fitted (where no
    /// look-up is possible: a stored request read back, a unit test).
    pub fn assuming_found(self) -> Vec<FieldError> {
        self.with(None)
    }
}

/// The stored document `id`, if it is this company's in this environment
/// and built (it has its code).
pub async fn original(
    issuing: &Issuing,
    (company, environment): (CompanyId, Environment),
    id: u64,
) -> IssueResult<Option<ReferencedDocument>> {
    let Some(doc) = issuing.store.document(id).await? else {
        return Ok(None);
    };
    if !doc.belongs_to(company, environment) {
        return Ok(None);
    }
    let (Some(code), Some(scheme), Some(kind)) = (
        doc.code.clone(),
        doc.code_scheme
            .as_deref()
            .and_then(CodeScheme::from_scheme_name),
        DocumentKind::from_code(doc.document_type),
    ) else {
        return Ok(None);
    };
    Ok(Some(ReferencedDocument {
        id: doc.id,
        number: doc.full_number(),
        code,
        scheme,
        issue_date: doc.issue_date,
        kind,
    }))
}

/// The id of the document of `company` in `environment` whose current code
/// is `code`, through the store's code index (which holds every stored
/// record's code: an older data dir's is built from its records on first
/// open), never a scan.
async fn by_code(
    issuing: &Issuing,
    (company, environment): (CompanyId, Environment),
    code: &str,
) -> IssueResult<Option<u64>> {
    let Some(id) = issuing.store.document_by_code(code.to_string()).await? else {
        return Ok(None);
    };
    Ok(issuing
        .store
        .document(id)
        .await?
        .filter(|d| d.belongs_to(company, environment) && d.code.as_deref() == Some(code))
        .map(|d| d.id))
}

/// `reference` with the id its code names, when named by its code (a code
/// that names no document of the company, or another one than the id the
/// caller named too, is the problem). Nothing else about the request is
/// told before it: it is refused alone.
async fn by_id(
    issuing: &Issuing,
    owner: (CompanyId, Environment),
    reference: &Reference,
) -> IssueResult<Result<Reference, FieldError>> {
    let Some(named) = &reference.code else {
        return Ok(Ok(reference.clone()));
    };
    let found = by_code(issuing, owner, &named.code).await?;
    Ok(match (found, reference.id) {
        (None, _) => Err(FieldError::new(&named.field, UNKNOWN_CODE)),
        (Some(f), Some(id)) if f != id => Err(FieldError::new(
            &named.field,
            format!(
                "is the code of document {f}, but {} is {id}",
                reference.field
            ),
        )),
        (Some(f), _) => Ok(Reference {
            id: Some(f),
            field: reference.field.clone(),
            code: None,
        }),
    })
}

/// What the caller sent for `original` (its JSON, as hashed), when it came
/// through `api`: an adjustment copies what it adjusts (the vendor or buyer,
/// the lines) from it. `None` when it came through another API.
pub async fn as_sent(
    issuing: &Issuing,
    original: &DocumentRecord,
    api: Api,
) -> IssueResult<Option<Vec<u8>>> {
    if Api::from_tag(original.api.as_deref()) != Some(api) {
        return Ok(None);
    }
    let request = issuing.store.document_request(original.id).await?;
    Ok(request.map(|raw| stored::caller(&raw).to_vec()))
}

/// The billing reference of a `note` to `found`, the document `reference`
/// names (`None`: not found), or the problem with it, named on the
/// caller's field.
pub fn check(
    note: DocumentKind,
    reference: &Reference,
    found: Option<&ReferencedDocument>,
) -> IssueResult<Result<BillingReference, FieldError>> {
    let field = reference.field.as_str();
    Ok(match found {
        None => Err(FieldError::new(field, "document not found")),
        Some(r) if reference.id != Some(r.id) => {
            return Err(IssueError::Internal(format!(
                "referenced document {} found for {field} {:?}",
                r.id, reference.id
            )))
        }
        Some(r) if !note.may_reference(r.kind) => Err(FieldError::new(
            field,
            format!(
                "is {} ({}), which {} cannot reference",
                r.kind.name(),
                r.number,
                note.name()
            ),
        )),
        Some(r) => Ok(BillingReference {
            number: r.number.clone(),
            code: r.code.clone(),
            issue_date: r.issue_date,
            scheme: r.scheme,
        }),
    })
}

/// The original `reference` names, found by its id or its code, or the
/// problem with its code.
async fn find(
    issuing: &Issuing,
    owner: (CompanyId, Environment),
    reference: &Reference,
) -> IssueResult<Result<(Reference, Option<ReferencedDocument>), FieldError>> {
    let reference = match by_id(issuing, owner, reference).await? {
        Ok(r) => r,
        Err(problem) => return Ok(Err(problem)),
    };
    let found = match reference.id {
        Some(id) => original(issuing, owner, id).await?,
        None => None,
    };
    Ok(Ok((reference, found)))
}

/// Looks up the original `request` names (by id or by code), if any, and
/// fills its billing reference; a note whose original does not exist or
/// does not fit is refused. Done once: the request names no original
/// afterwards. Returns the original's id.
pub async fn resolve(
    issuing: &Issuing,
    owner: (CompanyId, Environment),
    request: &mut DocumentRequest,
) -> IssueResult<Option<u64>> {
    let Some(reference) = request.reference.take() else {
        return Ok(None);
    };
    let (reference, found) = match find(issuing, owner, &reference).await? {
        Ok(found) => found,
        Err(problem) => return Err(IssueError::invalid_list(vec![problem])),
    };
    match check(request.kind, &reference, found.as_ref())? {
        Ok(billing) => {
            request.document.billing_reference = Some(billing);
            Ok(reference.id)
        }
        Err(problem) => Err(IssueError::invalid_list(vec![problem])),
    }
}

/// Refuses `request` when its note names its original by a code that names
/// no document of the caller's, or another one than the id it names too,
/// as [`resolve`] would, and looks no further: what an API checks before it
/// asks the authority anything on the request's behalf (the Spanish API's
/// completion of the buyer).
pub async fn refuse_unknown_code(
    issuing: &Issuing,
    owner: (CompanyId, Environment),
    request: &DocumentRequest,
) -> IssueResult<()> {
    let Some(reference) = &request.reference else {
        return Ok(());
    };
    match by_id(issuing, owner, reference).await? {
        Ok(_) => Ok(()),
        Err(problem) => Err(IssueError::invalid_list(vec![problem])),
    }
}

/// The refusal of a request its API's mapping refused, the original's
/// problem (if any) at its place among the others.
pub async fn refuse(
    issuing: &Issuing,
    owner: (CompanyId, Environment),
    refused: Refused,
) -> IssueError {
    let problem = match &refused.pending {
        None => None,
        Some(p) => {
            let (reference, found) = match find(issuing, owner, &p.reference).await {
                Ok(Ok(found)) => found,
                // A code that names no document is told alone.
                Ok(Err(problem)) => return IssueError::invalid_list(vec![problem]),
                Err(e) => return e,
            };
            match check(p.note, &reference, found.as_ref()) {
                Ok(result) => result.err(),
                Err(e) => return e,
            }
        }
    };
    IssueError::invalid_list(refused.with(problem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issuing::request::MAX_DETAILS;

    fn refused(n: usize, at: usize, first: usize) -> Refused {
        Refused {
            details: (0..n)
                .map(|i| FieldError::new(format!("f{i}"), "x"))
                .collect(),
            pending: Some(Pending {
                note: DocumentKind::CreditNote,
                reference: Reference::by_id(7, "ref"),
                at,
            }),
            counted_from: 0,
        }
        .after(
            (0..first)
                .map(|i| FieldError::new(format!("own{i}"), "y"))
                .collect(),
        )
    }

    #[test]
    fn the_originals_problem_goes_at_its_place_and_counts_toward_the_cap() {
        let problem = FieldError::new("ref", "document not found");
        let fields = |d: Vec<FieldError>| d.into_iter().map(|d| d.field).collect::<Vec<_>>();
        assert_eq!(
            fields(refused(2, 1, 1).with(Some(problem.clone()))),
            ["own0", "f0", "ref", "f1"]
        );
        assert_eq!(
            fields(refused(2, 1, 1).assuming_found()),
            ["own0", "f0", "f1"]
        );
        // The family's own problems are not counted; the mapping's are,
        // the original's with them.
        let d = refused(MAX_DETAILS, 0, 3).with(Some(problem));
        assert_eq!(d.len(), 3 + MAX_DETAILS + 1);
        assert_eq!(d[3].field, "ref");
        assert_eq!(d[d.len() - 1].message, "1 more errors not listed");
    }
}
