//! A stored document's printed form, for every route that serves one
//! (`/facturacion/:id/pdf`, the POS strip, mail attachments): the record,
//! company, resolution and signed XML are read from the store, turned into
//! the renderer's own views, and the PDF is drawn on a blocking thread,
//! never on the async workers nor on the issuing path.

use emisor_store::{
    state, Company, CompanyId, DocumentFiles, DocumentRecord, Environment, NumberingResolution,
    ResolutionChoice, SoftwareKind, ZipFile,
};

use super::error::{IssueError, IssueResult};
use super::Issuing;
use crate::engine::package;
use crate::render::{self, CompanyView, RecordView, RenderError, RenderInput, ResolutionView};

/// The pages a PDF is drawn on, chosen by the routes that serve one.
pub use crate::render::{Layout, THERMAL_WIDTHS};

/// A stored document's ZIP: as it was kept, or built again from its XML,
/// name and signing time, which gives the bytes the authority was sent.
pub fn into_zip(files: DocumentFiles) -> IssueResult<Vec<u8>> {
    match files.zip {
        ZipFile::Stored(bytes) => Ok(bytes),
        ZipFile::Derived { at } => package::zip_single(&files.xml_name, files.xml.as_bytes(), at)
            .map_err(|e| IssueError::Internal(format!("building {}: {e}", files.zip_name))),
    }
}

/// A rendered PDF and the name it is served under (`SETP990000001.pdf`).
#[derive(Debug, Clone)]
pub struct RenderedPdf {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The PDF of document `id` of `company_id` in `environment`, in `layout`;
/// another company's or environment's document is as unknown as a missing
/// one.
pub async fn document_pdf(
    issuing: &Issuing,
    (company_id, environment): (CompanyId, Environment),
    id: u64,
    layout: Layout,
) -> IssueResult<Vec<u8>> {
    Ok(
        rendered_pdf(issuing, (company_id, environment), id, Some(layout))
            .await?
            .bytes,
    )
}

/// [`document_pdf`] with the file's name; no `layout` is the document
/// type's usual one ([`Layout::default_for`]).
pub async fn rendered_pdf(
    issuing: &Issuing,
    (company_id, environment): (CompanyId, Environment),
    id: u64,
    layout: Option<Layout>,
) -> IssueResult<RenderedPdf> {
    let store = &issuing.store;
    let record = store
        .document(id)
        .await?
        .filter(|d| d.belongs_to(company_id, environment))
        .ok_or_else(|| IssueError::NotFound(format!("document {id}")))?;
    // Company and resolution in one trip (a test-set resolution is built in).
    let records = store
        .issuer_records(
            company_id,
            SoftwareKind::Invoicing,
            ResolutionChoice::Id(record.resolution_id),
        )
        .await?;
    let company = records
        .company
        .ok_or_else(|| IssueError::NotFound("company".into()))?;
    let files = store
        .document_files(id)
        .await?
        .ok_or_else(|| IssueError::NotFound(format!("files of document {id}")))?;
    let name = format!("{}.pdf", record.full_number());
    let resolution = records.resolution.as_ref().map(resolution_view);
    let layout = layout.unwrap_or(Layout::default_for(record.document_type));
    let (record, company) = (record_view(&record), company_view(&company));
    let bytes = tokio::task::spawn_blocking(move || {
        let input = RenderInput {
            record: &record,
            company: &company,
            resolution: resolution.as_ref(),
            signed_xml: &files.xml,
        };
        render::document_pdf(&input, layout)
    })
    .await
    .map_err(|e| IssueError::Internal(format!("rendering the PDF: {e}")))?
    .map_err(|e| match e {
        RenderError::Width(_) => IssueError::invalid("width", e.to_string()),
        other => IssueError::Internal(format!("rendering the PDF of document {id}: {other}")),
    })?;
    Ok(RenderedPdf { name, bytes })
}

/// What a stored record adds to the printed XML.
pub fn record_view(r: &DocumentRecord) -> RecordView {
    RecordView {
        code: r.code.clone(),
        code_scheme: r.code_scheme.clone(),
        qr_url: r.qr_url.clone(),
        accepted: r.state == state::ACCEPTED,
        state_name: state::name(r.state),
    }
}

/// The issuing company's letterhead.
pub fn company_view(c: &Company) -> CompanyView {
    CompanyView {
        name: c.name.clone(),
        trade_name: c.trade_name.clone(),
        nit: c.nit.clone(),
        dv: c.dv,
        address: c.address.clone(),
        municipality_name: c.municipality_name.clone(),
        department_name: c.department_name.clone(),
        email: c.email.clone(),
        phone: c.phone.clone(),
        tax_regime: c.tax_regime.clone(),
        tax_responsibilities: c.tax_responsibilities.clone(),
    }
}

/// A numbering resolution as its paragraph prints it.
pub fn resolution_view(r: &NumberingResolution) -> ResolutionView {
    ResolutionView {
        number: r.resolution_number.clone(),
        prefix: r.prefix.clone(),
        from: r.from.to_string(),
        to: r.to.to_string(),
        valid_from: r.valid_from.to_string(),
        valid_to: r.valid_to.to_string(),
    }
}
