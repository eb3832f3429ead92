//! The payroll XML: `NominaIndividual` (102) and `NominaIndividualDeAjuste`
//! (103, `Reemplazar` or `Eliminar`), element order and attributes as the
//! authority's 1.0.6 schemas have them. Written in canonical form (see
//! `xml_writer`) with one empty `ext:ExtensionContent`, the last (and only)
//! extension, where the signer puts the XAdES signature (protocol.md §3.4).
//!
//! Concepts map to elements as follows (spec 2.12 `seccion` → schema):
//! `BASICO` → `Basico`; `TRANSPORTE` → `Transporte/@AuxilioTransporte`;
//! `HED` → `HEDs/HED`; `HEN` → `HENs/HEN`; `HRN` → `HRNs/HRN`; `HRD` →
//! `HRDDFs/HRDDF` (Sunday/holiday daytime surcharge); `SND` →
//! `HRNDFs/HRNDF` (Sunday/holiday night surcharge); `VACACIONES` →
//! `VacacionesComunes`; `PRIMAS` → `Primas`; `CESANTIAS` → `Cesantias`;
//! `INCAPACIDAD` → `Incapacidad`; `LICENCIA` → `LicenciaR`; `BONIFICACION`
//! → `Bonificacion/@BonificacionS`; `AUXILIO` → `Auxilio/@AuxilioNS`;
//! `OTRO` → `OtroConcepto/@ConceptoS`. Deductions: `SALUD` → `Salud`,
//! `FONDO_PENSION` → `FondoPension` (both required by the schema: written
//! with zeros when absent), `FONDO_SP` → `FondoSP`, `SINDICATO` →
//! `Sindicato`, `SANCION` → `Sancion/@SancionPriv`, `LIBRANZA` →
//! `Libranza`, `ANTICIPO` → `Anticipo`, `RETENCION` → `RetencionFuente`,
//! `AFC` → `AFC`, `COOPERATIVA` → `Cooperativa`, `EMBARGO` →
//! `EmbargoFiscal`. Single elements (`Primas`, `Cesantias`,
//! `RetencionFuente`…) carry the sum of their lines.

use rust_decimal::Decimal;

use super::model::{Deduction, DeductionKind, Earning, EarningKind, PayrollDocument, PayrollKind};
use super::totals::{cents, PayrollTotals};
use crate::engine::model::IssuerContext;
use crate::engine::xml_writer::{XmlWriteError, XmlWriter};

pub const NS_INDIVIDUAL: &str = "dian:gov:co:facturaelectronica:NominaIndividual";
pub const NS_ADJUSTMENT: &str = "dian:gov:co:facturaelectronica:NominaIndividualDeAjuste";
const NS_DS: &str = "http://www.w3.org/2000/09/xmldsig#";
const NS_EXT: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2";
const NS_XADES: &str = "http://uri.etsi.org/01903/v1.3.2#";
const NS_XADES141: &str = "http://uri.etsi.org/01903/v1.4.1#";
const NS_XS: &str = "http://www.w3.org/2001/XMLSchema-instance";
const NS_XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// `InformacionGeneral/@Version` of each root (payroll annex examples).
const VERSION_INDIVIDUAL: &str = "V1.0: Documento Soporte de Pago de Nómina Electrónica";
const VERSION_ADJUSTMENT: &str =
    "V1.0: Nota de Ajuste de Documento Soporte de Pago de Nómina Electrónica";

/// What the builder writes besides the document itself.
#[derive(Debug, Clone)]
pub struct PayrollBuildInput<'a> {
    pub doc: &'a PayrollDocument,
    pub ctx: &'a IssuerContext,
    pub totals: &'a PayrollTotals,
    pub cune: &'a str,
    /// `CodigoQR`: the verification URL alone (`…/document/searchqr?documentkey=<CUNE>`,
    /// rules NIE021, NIAE021, NIAE234); the annex §13.1 text is the printed
    /// QR's ([`super::printed_qr_text`]).
    pub qr_url: &'a str,
    pub software_security_code: &'a str,
    /// `FechaGen` (`YYYY-MM-DD`) and `HoraGen` (`HH:MM:SS-05:00`).
    pub gen_date: &'a str,
    pub gen_time: &'a str,
}

/// An amount as written: two decimals, dot, no separators.
pub fn amount(d: Decimal) -> String {
    format!("{:.2}", cents(d))
}

fn opt(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

/// Attribute list without the absent optional ones.
fn attrs<'a>(list: &[(&'a str, Option<&'a str>)]) -> Vec<(&'a str, &'a str)> {
    list.iter()
        .filter_map(|(k, v)| v.map(|v| (*k, v)))
        .collect()
}

/// The unsigned XML (declaration + canonical root).
pub fn build(input: &PayrollBuildInput<'_>) -> Result<String, XmlWriteError> {
    let doc = input.doc;
    let mut w = XmlWriter::with_capacity(8 * 1024);
    w.declaration();
    let (root, ns, schema) = match doc.kind {
        PayrollKind::Individual => (
            "NominaIndividual",
            NS_INDIVIDUAL,
            "dian:gov:co:facturaelectronica:NominaIndividual NominaIndividualElectronicaXSD.xsd",
        ),
        _ => (
            "NominaIndividualDeAjuste",
            NS_ADJUSTMENT,
            "dian:gov:co:facturaelectronica:NominaIndividualDeAjuste NominaIndividualDeAjusteElectronicaXSD.xsd",
        ),
    };
    w.root_start(
        root,
        ns,
        &[
            ("ds", NS_DS),
            ("ext", NS_EXT),
            ("xades", NS_XADES),
            ("xades141", NS_XADES141),
            ("xs", NS_XS),
            ("xsi", NS_XSI),
        ],
        &[("SchemaLocation", ""), ("xsi:schemaLocation", schema)],
    );
    w.open("ext:UBLExtensions");
    w.open("ext:UBLExtension");
    w.open("ext:ExtensionContent");
    w.end("ext:ExtensionContent");
    w.end("ext:UBLExtension");
    w.end("ext:UBLExtensions");
    match doc.kind {
        PayrollKind::Individual => {
            if let Some(cune) = &doc.novelty {
                w.leaf("Novedad", &[("CUNENov", cune)], "true");
            }
            body(&mut w, input)?;
        }
        PayrollKind::Replace => {
            w.el("TipoNota", "1");
            w.open("Reemplazar");
            predecessor(&mut w, "ReemplazandoPredecesor", doc);
            body(&mut w, input)?;
            w.end("Reemplazar");
        }
        PayrollKind::Delete => {
            w.el("TipoNota", "2");
            w.open("Eliminar");
            predecessor(&mut w, "EliminandoPredecesor", doc);
            sequence(&mut w, input, false);
            place(&mut w, input);
            provider(&mut w, input);
            w.el("CodigoQR", input.qr_url);
            general(&mut w, input, false);
            for n in &doc.notes {
                w.el("Notas", n);
            }
            employer(&mut w, input);
            w.end("Eliminar");
        }
    }
    w.end(root);
    w.finish()
}

fn predecessor(w: &mut XmlWriter, name: &str, doc: &PayrollDocument) {
    let (number, cune, date) = match &doc.predecessor {
        Some(p) => (
            p.number.clone(),
            p.cune.clone(),
            p.generated.format("%Y-%m-%d").to_string(),
        ),
        None => Default::default(),
    };
    w.leaf(
        name,
        &[
            ("CUNEPred", &cune),
            ("FechaGenPred", &date),
            ("NumeroPred", &number),
        ],
        "",
    );
}

fn sequence(w: &mut XmlWriter, input: &PayrollBuildInput<'_>, with_worker_code: bool) {
    let ctx = input.ctx;
    let consecutive = ctx.number.to_string();
    let number = ctx.document_number();
    let code = if with_worker_code {
        opt(&input.doc.employee.code)
    } else {
        None
    };
    w.leaf(
        "NumeroSecuenciaXML",
        &attrs(&[
            ("CodigoTrabajador", code),
            ("Consecutivo", Some(&consecutive)),
            ("Numero", Some(&number)),
            ("Prefijo", Some(&ctx.resolution.prefix)),
        ]),
        "",
    );
}

fn company_address(ctx: &IssuerContext) -> (String, String, String, String) {
    match &ctx.company.address {
        Some(a) => (
            a.country_code.clone(),
            a.department_code.clone(),
            a.municipality_code.clone(),
            a.line.clone(),
        ),
        None => ("CO".into(), String::new(), String::new(), String::new()),
    }
}

fn place(w: &mut XmlWriter, input: &PayrollBuildInput<'_>) {
    let p = &input.doc.place;
    let (country, department, municipality, _) = company_address(input.ctx);
    w.leaf(
        "LugarGeneracionXML",
        &[
            (
                "DepartamentoEstado",
                opt(&p.department).unwrap_or(&department),
            ),
            ("Idioma", opt(&p.language).unwrap_or("es")),
            (
                "MunicipioCiudad",
                opt(&p.municipality).unwrap_or(&municipality),
            ),
            ("Pais", opt(&p.country).unwrap_or(&country)),
        ],
        "",
    );
}

fn provider(w: &mut XmlWriter, input: &PayrollBuildInput<'_>) {
    let s = &input.ctx.software;
    let dv = s.provider_check_digit.to_string();
    w.leaf(
        "ProveedorXML",
        &[
            ("DV", &dv),
            ("NIT", &s.provider_nit),
            ("RazonSocial", &input.ctx.company.name),
            ("SoftwareID", &s.id),
            ("SoftwareSC", input.software_security_code),
        ],
        "",
    );
}

fn general(w: &mut XmlWriter, input: &PayrollBuildInput<'_>, full: bool) {
    let doc = input.doc;
    let env = input.ctx.environment.to_string();
    let version = if doc.kind == PayrollKind::Individual {
        VERSION_INDIVIDUAL
    } else {
        VERSION_ADJUSTMENT
    };
    let trm = doc.exchange_rate.map(|r| r.normalize().to_string());
    let mut list: Vec<(&str, Option<&str>)> = vec![
        ("Ambiente", Some(&env)),
        ("CUNE", Some(input.cune)),
        ("EncripCUNE", Some("CUNE-SHA384")),
        ("FechaGen", Some(input.gen_date)),
        ("HoraGen", Some(input.gen_time)),
    ];
    if full {
        list.push(("PeriodoNomina", Some(doc.period.periodicity())));
        list.push(("TipoMoneda", Some(&doc.currency)));
        list.push(("TRM", trm.as_deref()));
    }
    list.push(("TipoXML", Some(doc.kind.xml_type())));
    list.push(("Version", Some(version)));
    w.leaf("InformacionGeneral", &attrs(&list), "");
}

fn employer(w: &mut XmlWriter, input: &PayrollBuildInput<'_>) {
    let c = &input.ctx.company;
    let o = &input.doc.employer;
    let (country, department, municipality, address) = company_address(input.ctx);
    let dv = c.check_digit.unwrap_or(0).to_string();
    w.leaf(
        "Empleador",
        &[
            ("DV", &dv),
            (
                "DepartamentoEstado",
                opt(&o.department).unwrap_or(&department),
            ),
            ("Direccion", opt(&o.address).unwrap_or(&address)),
            (
                "MunicipioCiudad",
                opt(&o.municipality).unwrap_or(&municipality),
            ),
            ("NIT", &c.id_number),
            ("Pais", opt(&o.country).unwrap_or(&country)),
            ("RazonSocial", opt(&o.name).unwrap_or(&c.name)),
        ],
        "",
    );
}

/// The monthly salary: as given, else the basic line's amount.
pub fn salary(doc: &PayrollDocument) -> Decimal {
    doc.employee.salary.unwrap_or_else(|| {
        doc.earnings
            .iter()
            .find(|e| e.kind == EarningKind::Basic)
            .map(|e| e.amount)
            .unwrap_or_default()
    })
}

fn worker(w: &mut XmlWriter, input: &PayrollBuildInput<'_>) {
    let e = &input.doc.employee;
    let (country, department, municipality, address) = company_address(input.ctx);
    let salary = amount(salary(input.doc));
    let bool_text = |b: bool| if b { "true" } else { "false" };
    w.leaf(
        "Trabajador",
        &attrs(&[
            ("AltoRiesgoPension", Some(bool_text(e.high_risk_pension))),
            ("CodigoTrabajador", opt(&e.code)),
            (
                "LugarTrabajoDepartamentoEstado",
                Some(opt(&e.work_department).unwrap_or(&department)),
            ),
            (
                "LugarTrabajoDireccion",
                Some(opt(&e.work_address).unwrap_or(&address)),
            ),
            (
                "LugarTrabajoMunicipioCiudad",
                Some(opt(&e.work_municipality).unwrap_or(&municipality)),
            ),
            (
                "LugarTrabajoPais",
                Some(opt(&e.work_country).unwrap_or(&country)),
            ),
            ("NumeroDocumento", Some(&e.id_number)),
            ("OtrosNombres", opt(&e.other_names)),
            ("PrimerApellido", Some(&e.first_surname)),
            ("PrimerNombre", Some(&e.first_name)),
            ("SalarioIntegral", Some(bool_text(e.integral_salary))),
            (
                "SegundoApellido",
                Some(e.second_surname.as_deref().unwrap_or("")),
            ),
            ("SubTipoTrabajador", Some(&e.worker_subtype)),
            ("Sueldo", Some(&salary)),
            ("TipoContrato", Some(&e.contract_type)),
            ("TipoDocumento", Some(&e.id_type)),
            ("TipoTrabajador", Some(&e.worker_type)),
        ]),
        "",
    );
}

/// Everything of a 102 after `Novedad`, and of a `Reemplazar` after its
/// predecessor.
fn body(w: &mut XmlWriter, input: &PayrollBuildInput<'_>) -> Result<(), XmlWriteError> {
    let doc = input.doc;
    let p = &doc.period;
    let date = |d: chrono::NaiveDate| d.format("%Y-%m-%d").to_string();
    let hired = date(p.hired.unwrap_or(p.settlement_start));
    let retired = p.retired.map(date);
    let start = date(p.settlement_start);
    let end = date(p.settlement_end);
    let days = p.days_worked.to_string();
    w.leaf(
        "Periodo",
        &attrs(&[
            ("FechaGen", Some(input.gen_date)),
            ("FechaIngreso", Some(&hired)),
            ("FechaLiquidacionFin", Some(&end)),
            ("FechaLiquidacionInicio", Some(&start)),
            ("FechaRetiro", retired.as_deref()),
            ("TiempoLaborado", Some(&days)),
        ]),
        "",
    );
    sequence(w, input, true);
    place(w, input);
    provider(w, input);
    w.el("CodigoQR", input.qr_url);
    general(w, input, true);
    for n in &doc.notes {
        w.el("Notas", n);
    }
    employer(w, input);
    worker(w, input);
    let pay = &doc.payment;
    w.leaf(
        "Pago",
        &attrs(&[
            ("Banco", opt(&pay.bank)),
            ("Forma", Some(&pay.form)),
            ("Metodo", Some(&pay.method)),
            ("NumeroCuenta", opt(&pay.account_number)),
            ("TipoCuenta", opt(&pay.account_type)),
        ]),
        "",
    );
    w.open("FechasPagos");
    let dates = if doc.payment_dates.is_empty() {
        vec![p.settlement_end]
    } else {
        doc.payment_dates.clone()
    };
    for d in dates {
        w.el("FechaPago", &date(d));
    }
    w.end("FechasPagos");
    earnings(w, doc);
    deductions(w, doc);
    if let Some(r) = doc.rounding {
        w.el("Redondeo", &amount(r));
    }
    w.el("DevengadosTotal", &amount(input.totals.earnings));
    w.el("DeduccionesTotal", &amount(input.totals.deductions));
    w.el("ComprobanteTotal", &amount(input.totals.net));
    Ok(())
}

fn of_kind(lines: &[Earning], kind: EarningKind) -> impl Iterator<Item = &Earning> {
    lines.iter().filter(move |l| l.kind == kind)
}

fn quantity(l: &Earning, default: Decimal) -> String {
    l.quantity.unwrap_or(default).normalize().to_string()
}

/// Whole days (the schema types these `Cantidad` as integers).
fn days(l: &Earning) -> String {
    l.quantity
        .unwrap_or(Decimal::ONE)
        .trunc()
        .normalize()
        .to_string()
}

fn earnings(w: &mut XmlWriter, doc: &PayrollDocument) {
    let lines = &doc.earnings;
    w.open("Devengados");
    let basic = of_kind(lines, EarningKind::Basic).next();
    let basic_days = basic
        .and_then(|b| b.quantity)
        .map(|q| q.trunc().normalize().to_string())
        .unwrap_or_else(|| doc.period.days_worked.max(1).to_string());
    let basic_amount = amount(basic.map(|b| b.amount).unwrap_or_default());
    w.leaf(
        "Basico",
        &[
            ("DiasTrabajados", &basic_days),
            ("SueldoTrabajado", &basic_amount),
        ],
        "",
    );
    for l in of_kind(lines, EarningKind::Transport) {
        w.leaf(
            "Transporte",
            &[("AuxilioTransporte", &amount(l.amount))],
            "",
        );
    }
    for (group, item, kind) in [
        ("HEDs", "HED", EarningKind::OvertimeDay),
        ("HENs", "HEN", EarningKind::OvertimeNight),
        ("HRNs", "HRN", EarningKind::SurchargeNight),
        ("HRDDFs", "HRDDF", EarningKind::SurchargeHolidayDay),
        ("HRNDFs", "HRNDF", EarningKind::SurchargeHolidayNight),
    ] {
        let mut items = of_kind(lines, kind).peekable();
        if items.peek().is_none() {
            continue;
        }
        w.open(group);
        for l in items {
            let percent = l
                .percent
                .or(kind.default_percent())
                .unwrap_or_default()
                .normalize()
                .to_string();
            w.leaf(
                item,
                &[
                    ("Cantidad", &quantity(l, Decimal::ONE)),
                    ("Pago", &amount(l.amount)),
                    ("Porcentaje", &percent),
                ],
                "",
            );
        }
        w.end(group);
    }
    let vacations: Vec<&Earning> = of_kind(lines, EarningKind::Vacation).collect();
    if !vacations.is_empty() {
        w.open("Vacaciones");
        for l in vacations {
            w.leaf(
                "VacacionesComunes",
                &[("Cantidad", &days(l)), ("Pago", &amount(l.amount))],
                "",
            );
        }
        w.end("Vacaciones");
    }
    let bonus: Vec<&Earning> = of_kind(lines, EarningKind::Bonus).collect();
    if !bonus.is_empty() {
        let total: Decimal = bonus.iter().map(|l| cents(l.amount)).sum();
        let qty: Decimal = bonus
            .iter()
            .map(|l| l.quantity.unwrap_or(Decimal::ONE).trunc())
            .sum();
        w.leaf(
            "Primas",
            &[
                ("Cantidad", &qty.normalize().to_string()),
                ("Pago", &amount(total)),
            ],
            "",
        );
    }
    let severance: Vec<&Earning> = of_kind(lines, EarningKind::Severance).collect();
    if let Some(first) = severance.first() {
        let total: Decimal = severance.iter().map(|l| cents(l.amount)).sum();
        let percent = first
            .percent
            .unwrap_or(Decimal::from(12))
            .normalize()
            .to_string();
        w.leaf(
            "Cesantias",
            &[
                ("Pago", &amount(total)),
                ("PagoIntereses", "0.00"),
                ("Porcentaje", &percent),
            ],
            "",
        );
    }
    let sick: Vec<&Earning> = of_kind(lines, EarningKind::SickLeave).collect();
    if !sick.is_empty() {
        w.open("Incapacidades");
        for l in sick {
            w.leaf(
                "Incapacidad",
                &[
                    ("Cantidad", &days(l)),
                    ("Pago", &amount(l.amount)),
                    ("Tipo", "1"),
                ],
                "",
            );
        }
        w.end("Incapacidades");
    }
    let leave: Vec<&Earning> = of_kind(lines, EarningKind::Leave).collect();
    if !leave.is_empty() {
        w.open("Licencias");
        for l in leave {
            w.leaf(
                "LicenciaR",
                &[("Cantidad", &days(l)), ("Pago", &amount(l.amount))],
                "",
            );
        }
        w.end("Licencias");
    }
    for (group, item, attr, kind) in [
        (
            "Bonificaciones",
            "Bonificacion",
            "BonificacionS",
            EarningKind::Premium,
        ),
        ("Auxilios", "Auxilio", "AuxilioNS", EarningKind::Aid),
    ] {
        let mut items = of_kind(lines, kind).peekable();
        if items.peek().is_none() {
            continue;
        }
        w.open(group);
        for l in items {
            w.leaf(item, &[(attr, &amount(l.amount))], "");
        }
        w.end(group);
    }
    let others: Vec<&Earning> = of_kind(lines, EarningKind::Other).collect();
    if !others.is_empty() {
        w.open("OtrosConceptos");
        for l in others {
            let description = opt(&l.description).unwrap_or("Otro concepto");
            w.leaf(
                "OtroConcepto",
                &[
                    ("ConceptoS", &amount(l.amount)),
                    ("DescripcionConcepto", description),
                ],
                "",
            );
        }
        w.end("OtrosConceptos");
    }
    w.end("Devengados");
}

fn deductions_of(lines: &[Deduction], kind: DeductionKind) -> impl Iterator<Item = &Deduction> {
    lines.iter().filter(move |l| l.kind == kind)
}

fn percent_of(l: Option<&Deduction>, kind: DeductionKind) -> String {
    l.and_then(|l| l.percent)
        .unwrap_or_else(|| {
            if l.is_some() {
                kind.default_percent()
            } else {
                Decimal::ZERO
            }
        })
        .normalize()
        .to_string()
}

fn deductions(w: &mut XmlWriter, doc: &PayrollDocument) {
    let lines = &doc.deductions;
    w.open("Deducciones");
    for (name, kind) in [
        ("Salud", DeductionKind::Health),
        ("FondoPension", DeductionKind::Pension),
    ] {
        let l = deductions_of(lines, kind).next();
        w.leaf(
            name,
            &[
                (
                    "Deduccion",
                    &amount(l.map(|l| l.amount).unwrap_or_default()),
                ),
                ("Porcentaje", &percent_of(l, kind)),
            ],
            "",
        );
    }
    if let Some(l) = deductions_of(lines, DeductionKind::SolidarityFund).next() {
        w.leaf(
            "FondoSP",
            &[
                ("DeduccionSP", &amount(l.amount)),
                (
                    "Porcentaje",
                    &percent_of(Some(l), DeductionKind::SolidarityFund),
                ),
            ],
            "",
        );
    }
    let unions: Vec<&Deduction> = deductions_of(lines, DeductionKind::Union).collect();
    if !unions.is_empty() {
        w.open("Sindicatos");
        for l in unions {
            w.leaf(
                "Sindicato",
                &[
                    ("Deduccion", &amount(l.amount)),
                    ("Porcentaje", &percent_of(Some(l), DeductionKind::Union)),
                ],
                "",
            );
        }
        w.end("Sindicatos");
    }
    let sanctions: Vec<&Deduction> = deductions_of(lines, DeductionKind::Sanction).collect();
    if !sanctions.is_empty() {
        w.open("Sanciones");
        for l in sanctions {
            w.leaf(
                "Sancion",
                &[
                    ("SancionPriv", &amount(l.amount)),
                    ("SancionPublic", "0.00"),
                ],
                "",
            );
        }
        w.end("Sanciones");
    }
    let loans: Vec<&Deduction> = deductions_of(lines, DeductionKind::Loan).collect();
    if !loans.is_empty() {
        w.open("Libranzas");
        for l in loans {
            let description = opt(&l.description).unwrap_or("Libranza");
            w.leaf(
                "Libranza",
                &[
                    ("Deduccion", &amount(l.amount)),
                    ("Descripcion", description),
                ],
                "",
            );
        }
        w.end("Libranzas");
    }
    let advances: Vec<&Deduction> = deductions_of(lines, DeductionKind::Advance).collect();
    if !advances.is_empty() {
        w.open("Anticipos");
        for l in advances {
            w.el("Anticipo", &amount(l.amount));
        }
        w.end("Anticipos");
    }
    for (name, kind) in [
        ("RetencionFuente", DeductionKind::Withholding),
        ("AFC", DeductionKind::Afc),
        ("Cooperativa", DeductionKind::Cooperative),
        ("EmbargoFiscal", DeductionKind::Garnishment),
    ] {
        let mut items = deductions_of(lines, kind).peekable();
        if items.peek().is_none() {
            continue;
        }
        let total: Decimal = items.map(|l| cents(l.amount)).sum();
        w.el(name, &amount(total));
    }
    w.end("Deducciones");
}
