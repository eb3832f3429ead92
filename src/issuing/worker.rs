//! The engine as the actors run it: [`EnginePipeline`] implements the actor
//! crate's [`Pipeline`] over [`pipeline::issue`], so a
//! `DocumentBuilder<EnginePipeline>` issues documents on the signer pool;
//! [`SigningKeyCache`] parses each company's PKCS#12 once.

use std::sync::{Arc, Mutex, PoisonError};

use dashmap::DashMap;
use emisor_actors::document_builder::Pipeline;
use emisor_actors::signer_pool::PoolError;
use emisor_store::{CertificateRecord, CompanyId};

use crate::engine::model::{Document, IssuerContext};
use crate::engine::payroll::{self, model::PayrollDocument};
use crate::engine::pipeline::{self, EngineError, IssuedDocument};
use crate::engine::signing_key::{SigningKey, SigningKeyError};
use crate::engine::totals::Totals;

/// One document to issue, with the key it is signed with.
#[derive(Debug, Clone)]
pub struct IssueRequest {
    pub document: Document,
    pub context: IssuerContext,
    pub key: Arc<SigningKey>,
    /// The document's totals, when the caller computed and checked them
    /// before taking the number (the build then does not again).
    pub totals: Option<Totals>,
}

/// One payroll document to issue (`engine::payroll`), with its key.
#[derive(Debug, Clone)]
pub struct PayrollIssueRequest {
    pub document: PayrollDocument,
    pub context: IssuerContext,
    pub key: Arc<SigningKey>,
}

/// What the signer pool builds: a UBL document or a payroll one. Both
/// variants are well over a kilobyte and each is moved once per document:
/// boxing the larger would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum BuildRequest {
    Ubl(IssueRequest),
    Payroll(PayrollIssueRequest),
}

impl From<IssueRequest> for BuildRequest {
    fn from(r: IssueRequest) -> Self {
        BuildRequest::Ubl(r)
    }
}

impl From<PayrollIssueRequest> for BuildRequest {
    fn from(r: PayrollIssueRequest) -> Self {
        BuildRequest::Payroll(r)
    }
}

/// Why issuing through the pool failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Pool(#[from] PoolError),
}

/// [`pipeline::issue`] as a [`Pipeline`].
#[derive(Debug, Clone, Copy, Default)]
pub struct EnginePipeline;

impl Pipeline for EnginePipeline {
    type Input = BuildRequest;
    type Output = IssuedDocument;
    type Error = BuildError;

    fn build(&self, r: BuildRequest) -> Result<IssuedDocument, BuildError> {
        Ok(match r {
            BuildRequest::Ubl(r) => match r.totals {
                Some(totals) => pipeline::issue_checked(&r.document, &r.context, &r.key, totals)?,
                None => pipeline::issue(&r.document, &r.context, &r.key)?,
            },
            BuildRequest::Payroll(r) => payroll::issue(&r.document, &r.context, &r.key)?,
        })
    }
}

/// Why a signing key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyCacheError {
    #[error(transparent)]
    Key(#[from] SigningKeyError),
    #[error("the certificate's serial is {found}, the record says {expected}")]
    SerialMismatch { expected: String, found: String },
}

type Slot = Arc<Mutex<Option<Arc<SigningKey>>>>;

/// Parsed signing keys by (company, certificate serial). A company that
/// imports a new certificate has a new serial, so the next lookup parses the
/// new one and forgets the company's older keys. Parsing takes tens of
/// milliseconds: call [`SigningKeyCache::get_or_load`] off the async threads
/// (e.g. on the signer pool); concurrent misses on the same key wait for one
/// parse instead of each doing it.
#[derive(Debug, Default)]
pub struct SigningKeyCache {
    keys: DashMap<(CompanyId, String), Slot>,
}

impl SigningKeyCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached key, if this certificate was loaded already.
    pub fn get(&self, company: CompanyId, serial: &str) -> Option<Arc<SigningKey>> {
        let slot = self.keys.get(&(company, serial.to_string()))?.clone();
        let guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
        guard.clone()
    }

    /// The key of `company`'s certificate `serial` (decimal, as
    /// [`SigningKey::serial_decimal`]), parsing it with `load` on a miss.
    pub fn get_or_load(
        &self,
        company: CompanyId,
        serial: &str,
        load: impl FnOnce() -> Result<SigningKey, SigningKeyError>,
    ) -> Result<Arc<SigningKey>, KeyCacheError> {
        let map_key = (company, serial.to_string());
        let slot: Slot = self.keys.entry(map_key.clone()).or_default().clone();
        // Lock only this certificate's slot (not a DashMap shard) while parsing.
        let mut guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = guard.as_ref() {
            return Ok(Arc::clone(key));
        }
        let loaded = load().map_err(KeyCacheError::from).and_then(|key| {
            if key.serial_decimal() == serial {
                Ok(key)
            } else {
                Err(KeyCacheError::SerialMismatch {
                    expected: serial.to_string(),
                    found: key.serial_decimal().to_string(),
                })
            }
        });
        let key = match loaded {
            Ok(key) => Arc::new(key),
            Err(e) => {
                drop(guard);
                // Leave no empty slot behind; the next call tries again.
                self.keys.remove_if(&map_key, |_, s| Arc::ptr_eq(s, &slot));
                return Err(e);
            }
        };
        *guard = Some(Arc::clone(&key));
        drop(guard);
        // A re-imported certificate replaces the company's older ones.
        self.keys.retain(|(c, s), _| *c != company || s == serial);
        Ok(key)
    }

    /// [`get_or_load`](Self::get_or_load) for a stored certificate.
    pub fn for_record(&self, record: &CertificateRecord) -> Result<Arc<SigningKey>, KeyCacheError> {
        self.get_or_load(record.company_id, &record.serial, || {
            SigningKey::from_pkcs12(record.pkcs12_der.expose(), record.password.expose())
        })
    }

    /// Forget a company's keys (certificate deleted).
    pub fn forget(&self, company: CompanyId) {
        self.keys.retain(|(c, _), _| *c != company);
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use actix::Actor;
    use chrono::Utc;
    use emisor_actors::document_builder::{Build, BuildQueue, DocumentBuilder};
    use emisor_actors::signer_pool::SignerPool;

    use crate::engine::codes::extract_code_input;
    use crate::engine::model::{colombia_offset, DocumentKind};
    use crate::engine::signing_key::generate_self_signed;
    use crate::engine::ubl::tests::{context, sample};
    use crate::engine::xades;

    fn record(company: CompanyId) -> CertificateRecord {
        let (der, password) = generate_self_signed("Emisor Demo S.A.S.", "900000001", 30).unwrap();
        let key = SigningKey::from_pkcs12(&der, &password).unwrap();
        CertificateRecord {
            company_id: company,
            pkcs12_der: der.into(),
            password: password.into(),
            subject: key.subject_cn().to_string(),
            issuer: key.issuer_name().to_string(),
            serial: key.serial_decimal().to_string(),
            not_before: key.not_before(),
            not_after: key.not_after(),
            imported_at: Utc::now(),
        }
    }

    #[actix::test]
    async fn an_invoice_issued_through_the_builder_verifies_and_recomputes() {
        let cache = SigningKeyCache::new();
        let key = cache.for_record(&record(1)).unwrap();

        let kind = DocumentKind::Invoice;
        let mut ctx = context(kind);
        ctx.issue_instant = Utc::now().with_timezone(&colombia_offset());
        let mut document = sample(kind);
        for p in &mut document.payments {
            p.due_date = Some(ctx.issue_naive_date() + chrono::Duration::days(30));
        }
        let pool = SignerPool::new(2, 8).unwrap();
        let builder = DocumentBuilder::new(BuildQueue::new(Arc::new(EnginePipeline), pool)).start();
        let issued = builder
            .send(Build::<EnginePipeline>::new(
                IssueRequest {
                    document,
                    context: ctx.clone(),
                    key,
                    totals: None,
                }
                .into(),
            ))
            .await
            .unwrap()
            .await
            .unwrap();

        let verified = xades::verify(&issued.xml).unwrap();
        assert!(verified.policy_ok && verified.signing_certificate_ok);
        let x = extract_code_input(&issued.xml).unwrap();
        assert_eq!(x.uuid, issued.code);
        assert_eq!(x.recompute(&ctx.resolution.technical_key), issued.code);
        assert_eq!(issued.number, "SETP990000001");
    }

    #[actix::test]
    async fn engine_errors_come_back_through_the_builder() {
        let key = SigningKeyCache::new().for_record(&record(1)).unwrap();
        let mut document = sample(DocumentKind::Invoice);
        document.lines.clear();
        let pool = SignerPool::new(1, 8).unwrap();
        let builder = DocumentBuilder::new(BuildQueue::new(Arc::new(EnginePipeline), pool)).start();
        let got = builder
            .send(Build::<EnginePipeline>::new(
                IssueRequest {
                    document,
                    context: context(DocumentKind::Invoice),
                    key,
                    totals: None,
                }
                .into(),
            ))
            .await
            .unwrap()
            .await;
        assert!(
            matches!(got, Err(BuildError::Engine(EngineError::Validation(_)))),
            "{got:?}"
        );
    }

    #[test]
    fn keys_are_parsed_once_per_certificate_and_a_new_one_replaces_the_old() {
        let cache = SigningKeyCache::new();
        let first = record(7);
        let parses = AtomicUsize::new(0);
        let load = |r: &CertificateRecord| {
            let r = r.clone();
            let parses = &parses;
            move || {
                parses.fetch_add(1, Ordering::SeqCst);
                SigningKey::from_pkcs12(r.pkcs12_der.expose(), r.password.expose())
            }
        };
        let a = cache.get_or_load(7, &first.serial, load(&first)).unwrap();
        let b = cache.get_or_load(7, &first.serial, load(&first)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(parses.load(Ordering::SeqCst), 1);
        assert!(cache.get(7, &first.serial).is_some());

        // Another company's key lives beside it.
        let other = record(8);
        cache.for_record(&other).unwrap();
        assert_eq!(cache.len(), 2);

        // Re-import: a new serial is parsed and the old one forgotten.
        let second = record(7);
        let c = cache.get_or_load(7, &second.serial, load(&second)).unwrap();
        assert_eq!(parses.load(Ordering::SeqCst), 2);
        assert_eq!(c.serial_decimal(), second.serial);
        assert!(cache.get(7, &first.serial).is_none());
        assert!(cache.get(8, &other.serial).is_some());

        // A record whose serial does not match its bytes is refused, not cached.
        let mut wrong = record(9);
        wrong.serial = "1".into();
        assert!(matches!(
            cache.for_record(&wrong),
            Err(KeyCacheError::SerialMismatch { .. })
        ));
        assert!(cache.get(9, "1").is_none());
        assert_eq!(cache.len(), 2, "no empty slot left behind");
        cache.forget(7);
        assert!(cache.get(7, &second.serial).is_none());
    }
}
