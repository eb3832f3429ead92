//! `emisor admin …`: the same provisioning as `/admin`, on the data dir of a
//! stopped server. Answers are JSON on stdout (secrets appear only where a
//! key is created).

use std::path::PathBuf;

use anyhow::Context;
use chrono::{NaiveDate, Utc};
use clap::Subcommand;
use emisor_store::{SoftwareRegistration, Store};
use secrecy::ExposeSecret;
use serde::Serialize;

use super::credentials::{software_kind, ResolutionRequest};
use super::keys::environment;
use super::views::{ApiKeyView, CompanyView, ResolutionView};
use crate::config::Settings;
use crate::provisioning::api_keys::create_api_key;
use crate::provisioning::certificates::import_pkcs12;
use crate::provisioning::companies::{checked_nit, create_company, CompanyRequest};
use crate::provisioning::demo::provision_demo_company;
use crate::security::master_key::{open_store, rotate, RotationStep};

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Companies.
    #[command(subcommand)]
    Company(CompanyCommand),
    /// Software registrations at the authority.
    #[command(subcommand)]
    Software(SoftwareCommand),
    /// Numbering resolutions.
    #[command(subcommand)]
    Resolution(ResolutionCommand),
    /// Signing certificates.
    #[command(subcommand)]
    Certificate(CertificateCommand),
    /// API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Run the authority's enablement test set through the running server.
    TestSet {
        #[arg(long)]
        company: u64,
        /// Server base URL; default: `<data-dir>/listening`.
        #[arg(long)]
        server: Option<String>,
        /// Admin token; default: config, demo-keys.json or admin-token.
        #[arg(long)]
        token: Option<String>,
    },
    /// Back the data dir up into DIR: through the running server's admin API
    /// when one answers at `<data-dir>/listening` (DIR must then lie under
    /// its `[backup] dir`), else on the stopped data dir.
    Backup {
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
        /// Server base URL; default: `<data-dir>/listening` when it answers.
        #[arg(long)]
        server: Option<String>,
        /// Admin token; default: config, demo-keys.json or admin-token.
        #[arg(long)]
        token: Option<String>,
    },
    /// Read a backup whole: checksums, every document's signed XML and its
    /// signature; with the master key, the secrets and every code. Exits
    /// non-zero on any problem.
    Verify {
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
        /// The master key file (32 bytes, or their base64).
        #[arg(long, value_name = "FILE")]
        key: Option<PathBuf>,
    },
    /// Restore a backup into a new data dir, its numberings held until
    /// confirmed (`numbering confirm`).
    Restore {
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
        /// The new data dir (absent or empty).
        #[arg(long = "data-dir", value_name = "NEW")]
        data_dir: PathBuf,
    },
    /// Write every record of the store to FILE (a new file), in the
    /// engine-neutral export format: through the running server's admin API
    /// when one answers at `<data-dir>/listening` (FILE must then lie under
    /// its `[backup] dir`), else from the stopped data dir.
    Export {
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
        /// Server base URL; default: `<data-dir>/listening` when it answers.
        #[arg(long)]
        server: Option<String>,
        /// Admin token; default: config, demo-keys.json or admin-token.
        #[arg(long)]
        token: Option<String>,
    },
    /// Read an export into the data dir, which must be new or empty (and
    /// opened with the master key the export was written under); its
    /// numberings held until confirmed (`numbering confirm`).
    Import {
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
    },
    /// Move a stopped sled data dir into the empty PostgreSQL database at
    /// URL through the export format, under the data dir's master key; the
    /// database's numberings held until confirmed (`numbering confirm`).
    Migrate {
        #[arg(long = "from-data-dir", value_name = "DIR")]
        from_data_dir: PathBuf,
        /// The database's URL (`postgres://user:password@host/db`).
        #[arg(long, value_name = "URL")]
        to: String,
    },
    /// A restored data dir's numberings, held until their next number is
    /// confirmed.
    #[command(subcommand)]
    Numbering(NumberingCommand),
    /// Re-seal every stored secret under a new master key, in one atomic
    /// step, and replace the key file (the server must be stopped).
    RotateMasterKey {
        /// Where to write the new key when the current one comes from
        /// EMISOR_SECURITY__MASTER_KEY (the key file is replaced in place).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Stop for good at this step (for crash tests: the caller kills
        /// the process there).
        #[arg(long, value_enum, hide = true)]
        pause_at: Option<RotationStep>,
    },
}

#[derive(Debug, Subcommand)]
pub enum CompanyCommand {
    Create(Box<CompanyArgs>),
    List,
}

/// `company create`: the fields of the admin API's company request.
#[derive(Debug, clap::Args)]
pub struct CompanyArgs {
    #[arg(long)]
    pub nit: String,
    #[arg(long)]
    pub razon_social: String,
    #[arg(long)]
    pub dv: Option<u8>,
    #[arg(long)]
    pub direccion: Option<String>,
    #[arg(long)]
    pub municipio_codigo: Option<String>,
    #[arg(long)]
    pub municipio_nombre: Option<String>,
    #[arg(long)]
    pub departamento_codigo: Option<String>,
    #[arg(long)]
    pub departamento_nombre: Option<String>,
    #[arg(long)]
    pub email: Option<String>,
    #[arg(long)]
    pub telefono: Option<String>,
    #[arg(long)]
    pub tipo_organizacion: Option<u8>,
    #[arg(long)]
    pub regimen: Option<String>,
    #[arg(long)]
    pub responsabilidades: Option<String>,
    #[arg(long)]
    pub rate_limit_per_minute: Option<u32>,
    /// Provision like the demo company (software, resolutions, certificate, keys).
    #[arg(long)]
    pub demo: bool,
}

impl From<CompanyArgs> for CompanyRequest {
    fn from(a: CompanyArgs) -> Self {
        CompanyRequest {
            nit: a.nit,
            dv: a.dv,
            razon_social: a.razon_social,
            nombre_comercial: None,
            direccion: a.direccion,
            municipio_codigo: a.municipio_codigo,
            municipio_nombre: a.municipio_nombre,
            departamento_codigo: a.departamento_codigo,
            departamento_nombre: a.departamento_nombre,
            email: a.email,
            telefono: a.telefono,
            tipo_organizacion: a.tipo_organizacion,
            regimen: a.regimen,
            responsabilidades: a.responsabilidades,
            rate_limit_per_minute: a.rate_limit_per_minute,
            limite_documentos_mes: None,
            demo: a.demo,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum SoftwareCommand {
    Set {
        #[arg(long)]
        company: u64,
        /// `facturacion` or `nomina`.
        #[arg(long)]
        tipo: String,
        #[arg(long)]
        software_id: String,
        #[arg(long)]
        pin: String,
        #[arg(long)]
        test_set_id: Option<String>,
        #[arg(long)]
        proveedor_nit: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResolutionCommand {
    Add {
        #[arg(long)]
        company: u64,
        /// Document type 1-10, or 11 for payroll.
        #[arg(long)]
        tipo: u8,
        #[arg(long)]
        numero: String,
        #[arg(long)]
        fecha: NaiveDate,
        #[arg(long)]
        prefijo: String,
        #[arg(long)]
        desde: u64,
        #[arg(long)]
        hasta: u64,
        #[arg(long)]
        vigencia_desde: NaiveDate,
        #[arg(long)]
        vigencia_hasta: NaiveDate,
        #[arg(long)]
        clave_tecnica: Option<String>,
        /// Other types numbered from the same range (6,8 with an invoice
        /// resolution: exports and T04).
        #[arg(long, value_delimiter = ',')]
        tipos_adicionales: Vec<u8>,
    },
    List {
        #[arg(long)]
        company: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum CertificateCommand {
    /// Import a PKCS#12 (.p12/.pfx) file.
    Import {
        #[arg(long)]
        company: u64,
        #[arg(long)]
        file: PathBuf,
        #[arg(long)]
        password: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum NumberingCommand {
    /// The hold and the numberings confirmed so far.
    Hold,
    /// Release one numbering: it goes on from `--siguiente`, or from the
    /// store's own next number with `--nada-emitido`.
    Confirm {
        #[arg(long)]
        company: u64,
        /// The resolution (or test set) id.
        #[arg(long)]
        resolution: u64,
        #[arg(long)]
        siguiente: Option<u64>,
        #[arg(long)]
        nada_emitido: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    Create {
        #[arg(long)]
        company: u64,
        /// `test` or `live`.
        #[arg(long)]
        ambiente: String,
        #[arg(long)]
        label: Option<String>,
        /// The user the key belongs to (WebSocket room `user_{id}`).
        #[arg(long)]
        user_id: Option<u64>,
    },
    List {
        #[arg(long)]
        company: u64,
    },
    Revoke {
        #[arg(long)]
        id: u64,
    },
}

fn print<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn api<T>(r: Result<T, crate::http::error::ApiError>) -> anyhow::Result<T> {
    r.map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn run(settings: &Settings, command: AdminCommand) -> anyhow::Result<()> {
    if let AdminCommand::TestSet {
        company,
        server,
        token,
    } = command
    {
        return run_test_set(settings, company, server, token);
    }
    if let AdminCommand::RotateMasterKey { out, pause_at } = command {
        let (rotation, notices) = rotate(settings, out.as_deref(), pause_at)?;
        for notice in notices {
            eprintln!("{notice}");
        }
        return print(&rotation);
    }
    let command = match command {
        AdminCommand::Backup { to, server, token } => {
            return super::data::backup(settings, &to, server, token)
        }
        AdminCommand::Verify { from, key } => return super::data::verify(&from, key.as_deref()),
        AdminCommand::Restore { from, data_dir } => {
            return super::data::restore(settings, &from, &data_dir)
        }
        AdminCommand::Numbering(n) => return super::data::numbering(settings, n),
        AdminCommand::Export { to, server, token } => {
            return super::data::export(settings, &to, server, token)
        }
        AdminCommand::Import { from } => return super::data::import(settings, &from),
        AdminCommand::Migrate { from_data_dir, to } => {
            return super::data::migrate(settings, &from_data_dir, to)
        }
        other => other,
    };
    let opened = open_store(settings)?;
    for notice in &opened.notices {
        eprintln!("{notice}");
    }
    let store: &dyn Store = opened.store.store();
    match command {
        AdminCommand::Company(CompanyCommand::List) => {
            let all: Vec<CompanyView> = store.companies()?.into_iter().map(Into::into).collect();
            print(&all)
        }
        AdminCommand::Company(CompanyCommand::Create(args)) => {
            let req = CompanyRequest::from(*args);
            if req.demo {
                let (_, keys) =
                    provision_demo_company(store, &req, settings.admin.token.expose_secret(), "")?;
                print(&keys)
            } else {
                print(&CompanyView::from(create_company(store, &req)?))
            }
        }
        AdminCommand::Software(SoftwareCommand::Set {
            company,
            tipo,
            software_id,
            pin,
            test_set_id,
            proveedor_nit,
        }) => {
            let kind = api(software_kind(&tipo))?;
            let c = store
                .company(company)?
                .ok_or_else(|| anyhow::anyhow!("company {company} not found"))?;
            let provider_nit = proveedor_nit.unwrap_or(c.nit);
            let provider_dv = checked_nit(&provider_nit, None)?;
            let reg = SoftwareRegistration {
                company_id: company,
                kind,
                software_id,
                pin: pin.into(),
                test_set_id,
                provider_nit,
                provider_dv,
                registered_at: Utc::now(),
            };
            store.put_software(reg.clone())?;
            print(&serde_json::json!({
                "id_empresa": company, "tipo": tipo, "software_id": reg.software_id,
                "test_set_id": reg.test_set_id, "proveedor_nit": reg.provider_nit,
            }))
        }
        AdminCommand::Resolution(ResolutionCommand::Add {
            company,
            tipo,
            numero,
            fecha,
            prefijo,
            desde,
            hasta,
            vigencia_desde,
            vigencia_hasta,
            clave_tecnica,
            tipos_adicionales,
        }) => {
            let new = api(ResolutionRequest {
                id_tipo_documento: tipo,
                numero_resolucion: numero,
                fecha_resolucion: fecha,
                prefijo,
                desde,
                hasta,
                vigencia_desde,
                vigencia_hasta,
                clave_tecnica,
                tipos_adicionales,
            }
            .into_new())?;
            store
                .company(company)?
                .ok_or_else(|| anyhow::anyhow!("company {company} not found"))?;
            let r = store.add_resolution(company, new)?;
            let next = store.next_number(&r)?;
            print(&ResolutionView::new(r, next))
        }
        AdminCommand::Resolution(ResolutionCommand::List { company }) => {
            let views = store
                .resolutions(company)?
                .into_iter()
                .map(|r| {
                    let next = store.next_number(&r)?;
                    Ok(ResolutionView::new(r, next))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            print(&views)
        }
        AdminCommand::Certificate(CertificateCommand::Import {
            company,
            file,
            password,
        }) => {
            let der =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let rec = import_pkcs12(store, company, &der, &password, Utc::now())?;
            print(&serde_json::json!({
                "id_empresa": company, "sujeto": rec.subject, "emisor": rec.issuer,
                "serial": rec.serial, "valido_desde": rec.not_before.to_rfc3339(),
                "valido_hasta": rec.not_after.to_rfc3339(),
            }))
        }
        AdminCommand::Key(KeyCommand::Create {
            company,
            ambiente,
            label,
            user_id,
        }) => {
            let env = api(environment(&ambiente))?;
            let issued = create_api_key(store, company, env, label, user_id)?;
            let mut view = ApiKeyView::from(issued.record);
            view.key = Some(issued.secret);
            print(&view)
        }
        AdminCommand::Key(KeyCommand::List { company }) => {
            let keys: Vec<ApiKeyView> = store
                .api_keys(company)?
                .into_iter()
                .map(Into::into)
                .collect();
            print(&keys)
        }
        // Handled above: the first needs the running server, the second
        // opens the store its own way.
        AdminCommand::TestSet { .. }
        | AdminCommand::RotateMasterKey { .. }
        | AdminCommand::Backup { .. }
        | AdminCommand::Verify { .. }
        | AdminCommand::Restore { .. }
        | AdminCommand::Numbering(_)
        | AdminCommand::Export { .. }
        | AdminCommand::Import { .. }
        | AdminCommand::Migrate { .. } => Ok(()),
        AdminCommand::Key(KeyCommand::Revoke { id }) => {
            let key = store
                .revoke_api_key(id, Utc::now())?
                .ok_or_else(|| anyhow::anyhow!("API key {id} not found"))?;
            // Nodes serving on the same database refuse it and close its
            // sockets once told (within their key cache's expiry if not).
            if let Err(e) = crate::fanout::key_revoked_outside(&opened.store, id) {
                let within = crate::http::auth::SHARED_KEY_TTL.as_secs();
                eprintln!(
                    "the serving nodes were not told (they refuse the key within {within} s): {e}"
                );
            }
            print(&ApiKeyView::from(key))
        }
    }
}

/// `emisor admin test-set --company N`: asks the running server (its
/// `<data-dir>/listening` address, the admin token of `demo-keys.json`,
/// `admin-token` or the config) to run the enablement test set, and prints
/// its progress until it ends.
pub fn run_test_set(
    settings: &Settings,
    company: u64,
    server: Option<String>,
    token: Option<String>,
) -> anyhow::Result<()> {
    let dir = settings.data_dir();
    let url = match server {
        Some(u) => u,
        None => listening_url(dir).with_context(|| {
            format!(
                "no running server found in {} (give --server)",
                dir.display()
            )
        })?,
    };
    let token = admin_token(settings, token)?;
    actix_web::rt::System::new().block_on(async move {
        let client = awc::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .finish();
        let path = format!("{url}/admin/companies/{company}/set-pruebas");
        let mut res = client
            .post(&path)
            .bearer_auth(&token)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
        let body: serde_json::Value = res.json().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        if !res.status().is_success() {
            anyhow::bail!(
                "{}",
                body.get("message")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("the server refused the test set")
            );
        }
        loop {
            actix_web::rt::time::sleep(std::time::Duration::from_secs(1)).await;
            let mut res = client
                .get(&path)
                .bearer_auth(&token)
                .send()
                .await
                .map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
            let body: serde_json::Value = res.json().await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let d = body.get("data").unwrap_or(&serde_json::Value::Null);
            println!(
                "{}: {} of {} sent, {} accepted, {} rejected, {} pending",
                d["estado"].as_str().unwrap_or("?"),
                d["enviados"],
                d["total"],
                d["aceptados"],
                d["rechazados"],
                d["pendientes"]
            );
            if d["estado"] != "en_progreso" {
                println!("{}", serde_json::to_string_pretty(d).unwrap_or_default());
                return if d["estado"] == "aceptado" {
                    Ok(())
                } else {
                    Err(anyhow::anyhow!("the test set was not accepted"))
                };
            }
        }
    })
}

/// The address a server on `dir` wrote to `<dir>/listening`.
pub fn listening_url(dir: &std::path::Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(dir.join("listening"))?
        .trim()
        .to_string())
}

/// The admin token: given, else the config's, `demo-keys.json`'s or
/// `admin-token`'s.
pub fn admin_token(settings: &Settings, token: Option<String>) -> anyhow::Result<String> {
    let dir = settings.data_dir();
    token
        .or_else(|| {
            Some(settings.admin.token.expose_secret().to_string()).filter(|t| !t.is_empty())
        })
        .or_else(|| {
            std::fs::read_to_string(dir.join("demo-keys.json"))
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v.get("admin_token")?.as_str().map(str::to_string))
                .filter(|t| !t.is_empty())
        })
        .or_else(|| {
            std::fs::read_to_string(dir.join("admin-token"))
                .ok()
                .map(|t| t.trim().to_string())
        })
        .ok_or_else(|| anyhow::anyhow!("no admin token (give --token)"))
}
