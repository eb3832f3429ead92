//! The whole issuance of one document:
//! validate → totals → code → XML → sign → zip.
//!
//! Pure and synchronous: no store, no network. The caller allocates the
//! number (in [`IssuerContext`]), loads the signing key once per certificate
//! (parsing a PKCS#12 costs tens of ms) and persists the result.

use thiserror::Error;

use super::codes::{self, CodeScheme, InvoiceCodeInput, SupportCodeInput};
use super::model::{CodeKey, Document, IssuerContext};
use chrono::{DateTime, FixedOffset};

use super::package::{self, PackageError};
use super::signing_key::SigningKey;
use super::totals::{Totals, TAX_ICA, TAX_INC, TAX_IVA};
use super::ubl::{self, common::shape, BuildInput, UblError};
use super::validate::{self, CertificateValidity, ValidationError};
use super::xades::{self, XadesError};

/// An issued document: signed XML, code, and the ZIP ready to send.
#[derive(Debug, Clone)]
pub struct IssuedDocument {
    /// Signed XML (declaration + root).
    pub xml: String,
    /// CUFE / CUDE / CUDS, 96 lowercase hex.
    pub code: String,
    pub scheme: CodeScheme,
    /// Verification URL (also in `sts:QRCode`).
    pub qr_url: String,
    /// `cbc:ID` (prefix + number).
    pub number: String,
    /// When it was signed: the stamp of its ZIP ([`IssuedDocument::zip`]).
    pub signed_at: DateTime<FixedOffset>,
    pub zip_name: String,
    pub xml_name: String,
    /// Name for the AttachedDocument built once the authority answers.
    pub attached_name: String,
    pub totals: Totals,
}

impl IssuedDocument {
    /// The ZIP that carries the signed XML to the authority. Built when
    /// needed, not with the document: the same XML, name and stamp give
    /// the same bytes, so only the XML is ever stored.
    pub fn zip(&self) -> Result<Vec<u8>, package::PackageError> {
        package::zip_single(&self.xml_name, self.xml.as_bytes(), self.signed_at)
    }
}

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("validation failed: {}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "))]
    Validation(Vec<ValidationError>),
    #[error("building the XML: {0}")]
    Build(#[from] UblError),
    #[error("signing: {0}")]
    Sign(#[from] XadesError),
    #[error("packaging: {0}")]
    Package(#[from] PackageError),
}

/// The document's code, from exactly the values written in the XML.
pub fn document_code(doc: &Document, ctx: &IssuerContext, totals: &Totals) -> String {
    let kind = doc.kind;
    let number = ctx.document_number();
    let date = ctx.issue_date();
    let time = ctx.issue_time();
    let roles = shape(&BuildInput {
        doc,
        ctx,
        totals,
        code: "",
        qr_url: "",
        software_security_code: "",
    });
    match kind.code_scheme() {
        CodeScheme::Cuds => codes::support_code(&SupportCodeInput {
            number: &number,
            issue_date: &date,
            issue_time: &time,
            line_extension: totals.line_extension,
            tax_iva: totals.tax_amount(TAX_IVA),
            payable: totals.payable,
            seller_id: &roles.supplier.id_number,
            buyer_nit: &roles.customer.id_number,
            pin: &ctx.software.pin,
            environment: ctx.environment,
        }),
        _ => {
            let key = match kind.code_key() {
                CodeKey::TechnicalKey => ctx.resolution.technical_key.as_str(),
                CodeKey::SoftwarePin => ctx.software.pin.as_str(),
            };
            codes::invoice_code(&InvoiceCodeInput {
                number: &number,
                issue_date: &date,
                issue_time: &time,
                line_extension: totals.line_extension,
                tax_iva: totals.tax_amount(TAX_IVA),
                tax_inc: totals.tax_amount(TAX_INC),
                tax_ica: totals.tax_amount(TAX_ICA),
                payable: totals.payable,
                supplier_nit: &roles.supplier.id_number,
                customer_id: &roles.customer.id_number,
                key,
                environment: ctx.environment,
            })
        }
    }
}

/// Validates, totals, computes the code, builds, signs and zips a document.
/// The signing time is the issue instant (production rule 3: the XML's date
/// and time and the signature's agree, in -05:00).
pub fn issue(
    doc: &Document,
    ctx: &IssuerContext,
    key: &SigningKey,
) -> Result<IssuedDocument, EngineError> {
    let totals = validate::validate_and_total(doc, ctx, Some(certificate(key)))
        .map_err(EngineError::Validation)?;
    issue_totalled(doc, ctx, key, totals)
}

/// [`issue`] for a document whose `totals` its caller already computed
/// and checked with [`validate::validate_and_total`] (before taking its
/// number): only what depends on the issuer's context (the number, the
/// instant, the certificate) is validated again.
pub fn issue_checked(
    doc: &Document,
    ctx: &IssuerContext,
    key: &SigningKey,
    totals: Totals,
) -> Result<IssuedDocument, EngineError> {
    let errors = validate::validate(doc, ctx, Some(certificate(key)));
    if !errors.is_empty() {
        return Err(EngineError::Validation(errors));
    }
    issue_totalled(doc, ctx, key, totals)
}

fn certificate(key: &SigningKey) -> CertificateValidity {
    CertificateValidity {
        not_before: key.not_before(),
        not_after: key.not_after(),
    }
}

fn issue_totalled(
    doc: &Document,
    ctx: &IssuerContext,
    key: &SigningKey,
    totals: Totals,
) -> Result<IssuedDocument, EngineError> {
    let number = ctx.document_number();
    let code = document_code(doc, ctx, &totals);
    let qr_url = codes::qr_url(ctx.environment, &code);
    let ssc = codes::software_security_code(&ctx.software.id, &ctx.software.pin, &number);
    let unsigned = ubl::build(&BuildInput {
        doc,
        ctx,
        totals: &totals,
        code: &code,
        qr_url: &qr_url,
        software_security_code: &ssc,
    })?;
    let instant = ctx.colombia_instant();
    let xml = xades::sign(&unsigned, key, instant)?;
    let consecutive = ctx
        .file_consecutive
        .unwrap_or(u32::try_from(ctx.number % (u64::from(u32::MAX) + 1)).unwrap_or(0));
    let names = package::file_names(
        doc.kind,
        &ctx.company.id_number,
        chrono::Datelike::year(&instant),
        consecutive,
    );
    Ok(IssuedDocument {
        xml,
        code,
        scheme: doc.kind.code_scheme(),
        qr_url,
        number,
        signed_at: instant,
        zip_name: names.zip,
        xml_name: names.xml,
        attached_name: names.attached,
        totals,
    })
}

#[cfg(test)]
mod tests;
