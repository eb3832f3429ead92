//! Sector data of invoices and notes: the health sector's extension and
//! billed period, and the cargo-transport properties of a freight line.
//!
//! Health: the Ministry of Health's technical annex for health-sector
//! invoices (Resolución 506 de 2021 and 510 de 2022, replaced by Resolución
//! 2275 de 2023, modified by Resolución 1884 de 2024) adds "campos de datos
//! adicionales del sector salud" in a `CustomTagGeneral` extension:
//! `Interoperabilidad/Group[@schemeName="Sector Salud"]/Collection[@schemeName="Usuario"]`
//! with `AdditionalInformation` name/value pairs, and the billed period in
//! `cac:InvoicePeriod`. We write the minimum the annex requires of every
//! health invoice: `CODIGO_PRESTADOR`, `MODALIDAD_PAGO` and
//! `COBERTURA_PLAN_BENEFICIOS` (coded, with their list in `schemeName`),
//! `NUMERO_CONTRATO` and `NUMERO_POLIZA`, and the period. When the users
//! (patients) are named, the collection is repeated once per user with
//! `TIPO_DOCUMENTO_IDENTIFICACION` (`salud_identificacion.gc`),
//! `NUMERO_DOCUMENTO_IDENTIFICACION`, `PRIMER_APELLIDO` and `PRIMER_NOMBRE`
//! (the Resolución 506 layout, which public issuers still write), and a
//! copay goes in `COPAGO` of the first collection (Resolución 2275's
//! name); the payable amount is not reduced by it. The layout follows
//! three independent public implementations (a PHP/Laravel API, a VB.NET
//! issuer, a PHP generator) that agree on names and nesting; the elements
//! are in the root's own namespace, as the POS extensions
//! (protocol.md §7.5b), and the extension sits between the authority's
//! `sts:DianExtensions` and the signature.
//!
//! Cargo transport: the invoice annex (v1.8 and later, freight invoices of
//! carriers reporting to the national cargo registry, RNDC) puts the
//! consignment on each line: `cac:Item/cac:AdditionalItemProperty` `01`
//! (filing number of the consignment in the RNDC), `02` (the carrier's
//! consignment number) and `03` (freight value, with the quantity
//! transported in `cbc:ValueQuantity`, `KGM` or `GLL`), and `schemeID`
//! `1`/`0` on `cbc:ID` of the line (registered in the RNDC or not). The
//! annex PDF was not at hand; the layout is the one an electronic-invoicing
//! provider's SDK documents field by field ("campo oficial DIAN") and two
//! carriers' own invoice generators write. The operation type stays 10
//! (decisions.md §5 "Operation types in the XML"), although the annex's
//! list (numeral 13.1.5.1) also has a 12 "Transporte".

use rust_decimal::Decimal;

use super::common::{fmt_amount, fmt_decimal};
use crate::engine::model::{CargoTransport, HealthInfo, HealthUser};
use crate::engine::xml_writer::XmlWriter;

/// `Responsable` and `Tipo, identificador:año del acto administrativo` of
/// the health extension.
const HEALTH_RESPONSIBLE: &str = "url www.minsalud.gov.co";
const HEALTH_ACT: &str = "Resolución 2275:2023";

/// Payment modalities (`salud_modalidad_pago.gc`).
pub const PAYMENT_MODALITIES: &[(&str, &str)] = &[
    (
        "01",
        "Pago individual por caso / Conjunto integral de atenciones / Paquete / Canasta",
    ),
    ("02", "Pago global prospectivo"),
    ("03", "Pago por capitación"),
    ("04", "Pago por evento"),
    ("05", "Otra modalidad"),
];

/// Coverages or benefit plans (`salud_cobertura.gc`).
pub const COVERAGES: &[(&str, &str)] = &[
    ("01", "Plan de beneficios en salud financiado con UPC"),
    ("02", "Presupuesto máximo"),
    ("03", "Prima EPS / EOC, no asegurados SOAT"),
    ("04", "Cobertura Póliza SOAT"),
    ("05", "Cobertura ARL"),
    ("06", "Cobertura ADRES"),
    ("07", "Cobertura Salud Pública"),
    ("08", "Cobertura entidad territorial, recursos de oferta"),
    ("09", "Urgencias población migrante"),
    ("10", "Plan complementario en salud"),
    ("11", "Plan medicina prepagada"),
    ("12", "Otras pólizas en salud"),
    ("13", "Cobertura Régimen Especial o Excepción"),
    (
        "14",
        "Cobertura Fondo Nacional de Salud de las Personas Privadas de la Libertad",
    ),
    ("15", "Particular"),
    (
        "16",
        "Plan de beneficios en salud financiado con UPC régimen contributivo",
    ),
    (
        "17",
        "Plan de beneficios en salud financiado con UPC régimen subsidiado",
    ),
];

/// The name of a code of `list`.
pub fn code_name(
    list: &'static [(&'static str, &'static str)],
    code: &str,
) -> Option<&'static str> {
    list.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
}

/// Units a transported quantity is measured in: kilograms or gallons.
pub const TRANSPORT_UNITS: [&str; 2] = ["KGM", "GLL"];

fn information(w: &mut XmlWriter, name: &str, value: &str, scheme: Option<(&str, &str)>) {
    w.open("AdditionalInformation");
    w.el("Name", name);
    match scheme {
        Some((id, list)) => w.leaf("Value", &[("schemeID", id), ("schemeName", list)], value),
        None => w.el("Value", value),
    }
    w.end("AdditionalInformation");
}

/// Identification types of health-sector users (`salud_identificacion.gc`).
pub const HEALTH_ID_TYPES: &[(&str, &str)] = &[
    ("CC", "Cédula de ciudadanía"),
    ("CE", "Cédula de extranjería"),
    ("CD", "Carné diplomático"),
    ("PA", "Pasaporte"),
    ("SC", "Salvoconducto"),
    ("PE", "Permiso especial de permanencia"),
    ("RC", "Registro civil"),
    ("TI", "Tarjeta de identidad"),
    ("CN", "Certificado de nacido vivo"),
    ("AS", "Adulto sin identificar"),
    ("MS", "Menor sin identificar"),
    ("DE", "Documento extranjero"),
    ("PT", "Permiso por protección temporal"),
    ("SI", "Sin identificación"),
];

/// The `ext:UBLExtension` with the health sector's `CustomTagGeneral`: one
/// `Usuario` collection per user served (the annex repeats the collection
/// for each), or one without user data when none is named.
pub fn write_health_extension(w: &mut XmlWriter, h: &HealthInfo) {
    w.open("ext:UBLExtension");
    w.open("ext:ExtensionContent");
    w.open("CustomTagGeneral");
    w.el("Name", "Responsable");
    w.el("Value", HEALTH_RESPONSIBLE);
    w.el("Name", "Tipo, identificador:año del acto administrativo");
    w.el("Value", HEALTH_ACT);
    w.open("Interoperabilidad");
    w.start("Group", &[("schemeName", "Sector Salud")]);
    if h.users.is_empty() {
        write_health_collection(w, h, None, h.copay);
    }
    for (i, user) in h.users.iter().enumerate() {
        write_health_collection(w, h, Some(user), h.copay.filter(|_| i == 0));
    }
    w.end("Group");
    w.end("Interoperabilidad");
    w.end("CustomTagGeneral");
    w.end("ext:ExtensionContent");
    w.end("ext:UBLExtension");
}

fn write_health_collection(
    w: &mut XmlWriter,
    h: &HealthInfo,
    user: Option<&HealthUser>,
    copay: Option<Decimal>,
) {
    w.start("Collection", &[("schemeName", "Usuario")]);
    information(w, "CODIGO_PRESTADOR", &h.provider_code, None);
    if let Some(u) = user {
        let id_name = code_name(HEALTH_ID_TYPES, &u.id_type).unwrap_or_default();
        information(
            w,
            "TIPO_DOCUMENTO_IDENTIFICACION",
            id_name,
            Some((&u.id_type, "salud_identificacion.gc")),
        );
        information(w, "NUMERO_DOCUMENTO_IDENTIFICACION", &u.id_number, None);
        information(w, "PRIMER_APELLIDO", &u.last_name, None);
        information(w, "PRIMER_NOMBRE", &u.first_name, None);
    }
    let modality = code_name(PAYMENT_MODALITIES, &h.payment_modality).unwrap_or_default();
    information(
        w,
        "MODALIDAD_PAGO",
        modality,
        Some((&h.payment_modality, "salud_modalidad_pago.gc")),
    );
    let coverage = code_name(COVERAGES, &h.coverage).unwrap_or_default();
    information(
        w,
        "COBERTURA_PLAN_BENEFICIOS",
        coverage,
        Some((&h.coverage, "salud_cobertura.gc")),
    );
    information(w, "NUMERO_CONTRATO", &h.contract_number, None);
    information(w, "NUMERO_POLIZA", &h.policy_number, None);
    if let Some(c) = copay {
        information(w, "COPAGO", &fmt_amount(c), None);
    }
    w.end("Collection");
}

/// `cac:InvoicePeriod` of a health document: the billed period, the issue
/// date (`YYYY-MM-DD`) where a bound is not given.
pub fn write_health_period(w: &mut XmlWriter, h: &HealthInfo, issue_date: &str) {
    let day = |d: Option<chrono::NaiveDate>| {
        d.map(|d| d.format("%Y-%m-%d").to_string())
            .unwrap_or_else(|| issue_date.to_string())
    };
    w.open("cac:InvoicePeriod");
    w.el("cbc:StartDate", &day(h.period_start));
    w.el("cbc:EndDate", &day(h.period_end));
    w.end("cac:InvoicePeriod");
}

/// The freight line's properties `01`, `02` and `03`.
pub fn write_transport_properties(w: &mut XmlWriter, t: &CargoTransport) {
    let property = |w: &mut XmlWriter, name: &str, value: &str, quantity: Option<Decimal>| {
        w.open("cac:AdditionalItemProperty");
        w.el("cbc:Name", name);
        w.el("cbc:Value", value);
        if let Some(q) = quantity {
            w.leaf(
                "cbc:ValueQuantity",
                &[("unitCode", t.unit_code.as_str())],
                &fmt_decimal(q),
            );
        }
        w.end("cac:AdditionalItemProperty");
    };
    property(w, "01", &t.rndc_filing, None);
    property(w, "02", &t.consignment, None);
    property(w, "03", &fmt_amount(t.freight), Some(t.quantity));
}
