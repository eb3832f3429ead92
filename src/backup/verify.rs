//! `emisor admin verify --from DIR [--key FILE]`: reads a backup whole.
//! Every file against its checksum, no file missing or unlisted; then the
//! copy, opened in a scratch directory (a backup is never written to):
//! every built document's signed XML there, parsed, its XAdES signature
//! verified (`engine::xades::verify`); with the master key, the secrets
//! open and every code recomputes (CUFE with the technical key, CUDE and
//! CUDS with the software PIN; payroll's CUNE is not recomputed).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use emisor_store::{Keyring, MasterKey, SoftwareKind, Store, StoreOptions};
use serde::Serialize;

use super::manifest::{self, files_under, relative, sum_prefix, Manifest};
use super::{BackupError, BackupResult};
use crate::engine::{codes, xades};

/// What `verify` found.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub files: usize,
    pub bytes: u64,
    pub documents: u64,
    pub signatures_verified: u64,
    pub codes_recomputed: u64,
    /// Documents whose code was not recomputed (no key, payroll, a
    /// registration missing).
    pub codes_not_recomputed: u64,
    pub problems: Vec<String>,
}

/// Checks every file of the backup in `dir` against the manifest; answers
/// the manifest and the problems found.
pub fn check_files(dir: &Path) -> BackupResult<(Manifest, Vec<String>, u64)> {
    let manifest = manifest::read(dir).map_err(BackupError::Invalid)?;
    let mut problems = Vec::new();
    let mut bytes = 0;
    let listed: BTreeSet<&str> = manifest.files.iter().map(|f| f.path.as_str()).collect();
    for f in &manifest.files {
        let path = dir.join(&f.path);
        let inside = f.path.strip_prefix(&format!("{}/", manifest.data));
        if f.path
            .split('/')
            .any(|p| p == ".." || p == "." || p.is_empty())
            || inside.is_none()
        {
            problems.push(format!("{}: not a path inside the backup's data", f.path));
            continue;
        }
        match fs::File::open(&path).and_then(|mut file| sum_prefix(&mut file, f.bytes)) {
            Ok((n, sum)) => {
                bytes += n;
                if n != f.bytes || sum != f.sha256 {
                    problems.push(format!(
                        "{}: checksum mismatch ({n} bytes, SHA-256 {sum}; the manifest says {} bytes, {})",
                        f.path, f.bytes, f.sha256
                    ));
                }
            }
            Err(e) => problems.push(format!("{}: {e}", f.path)),
        }
    }
    if manifest.data.contains(['/', '\\']) || manifest.data.starts_with('.') {
        problems.push(format!("{}: not a directory of the backup", manifest.data));
        return Ok((manifest, problems, bytes));
    }
    let on_disk =
        files_under(&dir.join(&manifest.data)).map_err(BackupError::io("reading", dir))?;
    for path in on_disk {
        let name = relative(dir, &path);
        if !listed.contains(name.as_str()) {
            problems.push(format!("{name}: not in the manifest"));
        }
    }
    Ok((manifest, problems, bytes))
}

/// Reads the whole backup in `dir`; `key` is the master key to check the
/// secrets and codes with.
pub fn verify(dir: &Path, key: Option<MasterKey>) -> BackupResult<Report> {
    let (manifest, problems, bytes) = check_files(dir)?;
    let mut report = Report {
        files: manifest.files.len(),
        bytes,
        problems,
        ..Report::default()
    };
    if !report.problems.is_empty() {
        // The copy is not what was backed up: reading it says nothing more.
        return Ok(report);
    }
    let scratch = Scratch::copy_of(dir, &manifest)?;
    let has_key = key.is_some();
    let keyring = match key {
        Some(k) => Keyring::new(k),
        // Documents and their files need no secret; nothing is unsealed.
        None => Keyring::without_secrets()?,
    };
    let mut key_problem = None;
    let opened = emisor_store::open(&scratch.0, StoreOptions::default(), |inventory| {
        if has_key && !inventory.key_ids.iter().all(|id| keyring.knows(id)) {
            key_problem = Some(format!(
                "the key given (id {}) does not open the backup's secrets, sealed under {}",
                keyring.current().id(),
                inventory
                    .key_ids
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(keyring.clone())
    });
    let handle = match opened {
        Ok(h) => h,
        Err(e) => {
            report
                .problems
                .push(format!("the copy does not open as a store: {e}"));
            return Ok(report);
        }
    };
    let check_codes = has_key && key_problem.is_none();
    report.problems.extend(key_problem);
    check_documents(handle.store(), &manifest, check_codes, &mut report);
    let _ = handle.close();
    Ok(report)
}

fn check_documents(store: &dyn Store, manifest: &Manifest, check_codes: bool, report: &mut Report) {
    // One document at a time, by id (ids only grow; a restart skips the
    // rest of a block of 256), so memory stays flat whatever the store's size.
    let mut documents = 0u64;
    for id in 1..=manifest.last_document_id {
        match store.document(id) {
            Ok(Some(doc)) => {
                documents += 1;
                if !doc.pending_build {
                    check_document(store, &doc, check_codes, report);
                }
            }
            Ok(None) => {}
            Err(e) => report
                .problems
                .push(format!("document {id} does not read: {e}")),
        }
    }
    report.documents = documents;
    if report.documents != manifest.documents.total() {
        report.problems.push(format!(
            "{} documents in the copy, the manifest counts {}",
            report.documents,
            manifest.documents.total()
        ));
    }
}

fn check_document(
    store: &dyn Store,
    doc: &emisor_store::DocumentRecord,
    check_codes: bool,
    report: &mut Report,
) {
    let id = doc.id;
    let files = match store.document_files(id) {
        Ok(Some(f)) => f,
        Ok(None) => {
            report
                .problems
                .push(format!("document {id}: its signed XML is missing"));
            return;
        }
        Err(e) => {
            report
                .problems
                .push(format!("document {id}: its signed XML does not read: {e}"));
            return;
        }
    };
    match xades::verify(&files.xml) {
        Ok(v) if v.signing_certificate_ok => report.signatures_verified += 1,
        Ok(_) => report.problems.push(format!(
            "document {id}: xades:SigningCertificate does not match the signing certificate"
        )),
        Err(e) => {
            report
                .problems
                .push(format!("document {id}: the signature does not verify: {e}"));
            return;
        }
    }
    if !check_codes {
        report.codes_not_recomputed += 1;
        return;
    }
    match recompute(store, doc, &files.xml) {
        Some(Ok(code)) if doc.code.as_deref() == Some(code.as_str()) => {
            report.codes_recomputed += 1
        }
        Some(Ok(code)) => report.problems.push(format!(
            "document {id}: its code recomputes to {code}, the store has {}",
            doc.code.as_deref().unwrap_or("none")
        )),
        Some(Err(e)) => report.problems.push(format!("document {id}: {e}")),
        None => report.codes_not_recomputed += 1,
    }
}

/// The document's code from its XML with the key its scheme takes; `None`
/// where no formula here applies (payroll, events).
fn recompute(
    store: &dyn Store,
    doc: &emisor_store::DocumentRecord,
    xml: &str,
) -> Option<Result<String, String>> {
    let extracted = codes::extract_code_input(xml).ok()?;
    let key = if extracted.uuid_scheme_name == "CUFE-SHA384" {
        store
            .resolution(doc.company_id, doc.resolution_id)
            .ok()??
            .technical_key
            .expose()
            .to_string()
    } else {
        store
            .software(doc.company_id, SoftwareKind::Invoicing)
            .ok()??
            .pin
            .expose()
            .to_string()
    };
    Some(Ok(extracted.recompute(&key)))
}

/// A copy of the backup's data dir to open (opening writes), removed when
/// dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn copy_of(backup: &Path, manifest: &Manifest) -> BackupResult<Scratch> {
        let dir = std::env::temp_dir().join(format!(
            "emisor-verify-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
        ));
        let scratch = Scratch(dir);
        manifest::materialize(backup, manifest, &scratch.0)
            .map_err(BackupError::io("copying the backup to", &scratch.0))?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
