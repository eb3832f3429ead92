//! The sandbox company: everything a first request needs, generated locally
//! (decisions.md §1 and §5). Used for `id_empresa` 1 on an empty data dir and
//! for `POST /admin/companies` with `demo: true`.

use chrono::{NaiveDate, Utc};
use emisor_store::{
    test_set, Company, Environment, NewResolution, NumberingResolution, SoftwareKind,
    SoftwareRegistration, Store, PAYROLL_DOCUMENT_TYPE,
};
use rand::Rng;
use serde::Serialize;
use utoipa::ToSchema;

use super::api_keys::create_api_key;
use super::certificates::import_pkcs12;
use super::companies::{create_company, CompanyRequest};
use super::ProvisioningError;
use crate::engine::signing_key::generate_self_signed;

pub const DEMO_NIT: &str = "900000001";

/// `demo-keys.json` (decisions.md §5): the one place the operator is shown
/// the demo company's secrets. `Debug` leaves them out.
#[derive(Clone, Serialize, ToSchema)]
pub struct DemoKeys {
    pub id_empresa: u64,
    pub nit: String,
    pub sk_test: String,
    pub sk_live: String,
    pub admin_token: String,
    pub tax_sim_url: String,
    pub software_id: String,
    pub software_pin: String,
    pub payroll_software_id: String,
    pub payroll_software_pin: String,
    pub test_set_id: String,
    pub resoluciones: Vec<DemoResolution>,
}

impl std::fmt::Debug for DemoKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoKeys")
            .field("id_empresa", &self.id_empresa)
            .field("nit", &self.nit)
            .field("tax_sim_url", &self.tax_sim_url)
            .finish_non_exhaustive()
    }
}

/// One numbering a document type takes: `demo-keys.json` lists a
/// resolution once per type it serves (decisions.md §5).
#[derive(Clone, Serialize, ToSchema)]
pub struct DemoResolution {
    pub id_tipo_documento: u8,
    pub prefijo: String,
    pub desde: u64,
    pub hasta: u64,
    pub clave_tecnica: String,
    pub vigencia_desde: NaiveDate,
    pub vigencia_hasta: NaiveDate,
    /// The authority's test set, which numbers this type for `sk_test_`
    /// keys (any company); the others are the company's own resolutions,
    /// used in production and, for types without a test set, in testing.
    pub set_de_pruebas: bool,
}

impl DemoResolution {
    /// `r` once per document type it serves.
    pub fn entries(r: &NumberingResolution) -> Vec<DemoResolution> {
        r.document_types()
            .into_iter()
            .map(|t| DemoResolution {
                id_tipo_documento: t,
                prefijo: r.prefix.clone(),
                desde: r.from,
                hasta: r.to,
                clave_tecnica: r.technical_key.expose().to_string(),
                vigencia_desde: r.valid_from,
                vigencia_hasta: r.valid_to,
                set_de_pruebas: r.is_test_set(),
            })
            .collect()
    }
}

/// The sandbox company's own resolutions (its production numbering): the
/// main document type, the others it serves, and the prefix. Invoices,
/// exports and T04 share one range, as the authority numbers them; types
/// 6 and 8 have no resolution of their own.
const DEMO_RESOLUTIONS: [(u8, &[u8], &str); 9] = [
    (1, &[6, 8], "FE"),
    (2, &[], "NC"),
    (3, &[], "ND"),
    (4, &[], "DS"),
    (5, &[], "NDS"),
    (7, &[], "CONT"),
    (9, &[], "POS"),
    (10, &[], "NAP"),
    (PAYROLL_DOCUMENT_TYPE, &[], "NOM"),
];

/// Every numbering a company's documents take, by document type: the test
/// set first where one serves the type, then its own resolutions.
pub fn numbering_entries(own: &[NumberingResolution], company: u64) -> Vec<DemoResolution> {
    let mut entries: Vec<DemoResolution> = test_set::TEST_SETS
        .iter()
        .flat_map(|set| DemoResolution::entries(&set.resolution(company)))
        .chain(own.iter().flat_map(DemoResolution::entries))
        .collect();
    // Stable: within a type the test set stays ahead of the own resolution.
    entries.sort_by_key(|e| e.id_tipo_documento);
    entries
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::thread_rng().fill(buf.as_mut_slice());
    hex::encode(buf)
}

fn random_pin() -> String {
    format!("{:05}", rand::thread_rng().gen_range(10000..100000))
}

fn date(y: i32, m: u32, d: u32) -> Result<NaiveDate, ProvisioningError> {
    NaiveDate::from_ymd_opt(y, m, d).ok_or_else(|| super::invalid("date", "invalid"))
}

/// The demo company's identity when nothing else is given.
pub fn demo_company_request() -> CompanyRequest {
    CompanyRequest {
        nit: DEMO_NIT.into(),
        razon_social: "Empresa Demo S.A.S.".into(),
        ..Default::default()
    }
}

/// Fills the address fields a sandbox company needs to issue documents.
fn with_sandbox_defaults(req: &CompanyRequest) -> CompanyRequest {
    let or = |v: &Option<String>, d: &str| Some(v.clone().unwrap_or_else(|| d.to_string()));
    CompanyRequest {
        direccion: or(&req.direccion, "Calle 100 # 10-20"),
        municipio_codigo: or(&req.municipio_codigo, "11001"),
        municipio_nombre: or(&req.municipio_nombre, "Bogotá, D.C."),
        departamento_codigo: or(&req.departamento_codigo, "11"),
        departamento_nombre: or(&req.departamento_nombre, "Bogotá"),
        email: or(&req.email, "facturacion@demo.example"),
        telefono: or(&req.telefono, "6015550100"),
        responsabilidades: or(&req.responsabilidades, "O-13"),
        demo: true,
        ..req.clone()
    }
}

/// Creates a sandbox company with software registrations, a resolution for
/// every document type and payroll, a self-signed certificate and one key of
/// each environment.
pub fn provision_demo_company(
    store: &dyn Store,
    req: &CompanyRequest,
    admin_token: &str,
    tax_sim_url: &str,
) -> Result<(Company, DemoKeys), ProvisioningError> {
    let company = create_company(store, &with_sandbox_defaults(req))?;
    let now = Utc::now();

    let invoicing = SoftwareRegistration {
        company_id: company.id,
        kind: SoftwareKind::Invoicing,
        software_id: uuid::Uuid::new_v4().to_string(),
        pin: random_pin().into(),
        test_set_id: Some(uuid::Uuid::new_v4().to_string()),
        provider_nit: company.nit.clone(),
        provider_dv: company.dv,
        registered_at: now,
    };
    let payroll = SoftwareRegistration {
        kind: SoftwareKind::Payroll,
        software_id: uuid::Uuid::new_v4().to_string(),
        pin: random_pin().into(),
        test_set_id: Some(uuid::Uuid::new_v4().to_string()),
        ..invoicing.clone()
    };
    store.put_software(invoicing.clone())?;
    store.put_software(payroll.clone())?;

    // Its own resolutions number production documents (and, in testing,
    // the types the authority's test sets do not serve: notes, T03,
    // payroll); the test sets are built in.
    let mut resolutions = Vec::new();
    for (doc_type, also_serves, prefix) in DEMO_RESOLUTIONS {
        resolutions.push(store.add_resolution(
            company.id,
            NewResolution {
                document_type: doc_type,
                also_serves: also_serves.to_vec(),
                resolution_number: format!("1876{:07}", company.id * 100 + u64::from(doc_type)),
                resolution_date: date(2019, 1, 19)?,
                prefix: prefix.into(),
                from: 1,
                to: 99_999_999,
                valid_from: date(2019, 1, 19)?,
                valid_to: date(2030, 1, 19)?,
                technical_key: random_hex(20).into(),
            },
        )?);
    }

    let (p12, password) = generate_self_signed(&company.name, &company.nit, 3650)?;
    import_pkcs12(store, company.id, &p12, &password, now)?;

    // The demo keys are company keys (no user).
    let label = || Some("demo".to_string());
    let sk_test = create_api_key(store, company.id, Environment::Test, label(), None)?;
    let sk_live = create_api_key(store, company.id, Environment::Live, label(), None)?;

    let keys = DemoKeys {
        id_empresa: company.id,
        nit: company.nit.clone(),
        sk_test: sk_test.secret,
        sk_live: sk_live.secret,
        admin_token: admin_token.to_string(),
        tax_sim_url: tax_sim_url.to_string(),
        software_id: invoicing.software_id,
        software_pin: invoicing.pin.expose().to_string(),
        payroll_software_id: payroll.software_id,
        payroll_software_pin: payroll.pin.expose().to_string(),
        test_set_id: invoicing.test_set_id.unwrap_or_default(),
        resoluciones: numbering_entries(&resolutions, company.id),
    };
    Ok((company, keys))
}

/// Writes `demo-keys.json` readable by the owner only (mode 0600).
pub fn write_demo_keys(path: &std::path::Path, keys: &DemoKeys) -> Result<(), ProvisioningError> {
    let io = |source| ProvisioningError::Io {
        path: path.display().to_string(),
        source,
    };
    let json = serde_json::to_vec_pretty(keys).map_err(|e| io(std::io::Error::other(e)))?;
    write_private(path, &json).map_err(io)
}

/// On a later start the in-process simulator listens on a new port: the
/// saved `demo-keys.json` is pointed at it (its other fields untouched).
pub fn refresh_demo_sim_url(path: &std::path::Path, url: &str) -> Result<(), ProvisioningError> {
    let io = |source| ProvisioningError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut keys: serde_json::Value = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| io(std::io::Error::other(e)))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    if keys.get("tax_sim_url").and_then(serde_json::Value::as_str) == Some(url) {
        return Ok(());
    }
    let Some(fields) = keys.as_object_mut() else {
        return Err(io(std::io::Error::other("not a JSON object")));
    };
    fields.insert("tax_sim_url".into(), url.into());
    let json = serde_json::to_vec_pretty(&keys).map_err(|e| io(std::io::Error::other(e)))?;
    write_private(path, &json).map_err(io)
}

/// Creates or replaces a file with mode 0600 from the start (no window in
/// which another user could read it).
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(bytes)?;
    f.sync_all()
}
