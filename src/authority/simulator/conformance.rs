//! The authority's business rules on a document's content that the
//! signature, code and numbering checks do not see (protocol.md §6, §7.3,
//! §7.5b, §7.5c): the operation type valid for the document type, the
//! resident vendor of a support document as a NIT, the three extensions of
//! a POS receipt, and `sts:DianExtensions` against the authority's schema
//! of it (which is how a POS adjustment note naming its source
//! `sts:CreditNoteSource` is refused). A rejection is
//! `Regla: X, Rechazo: …`; a notification (`Regla: X, Notificación: …`)
//! travels with an accepted document and does not reject it.

use roxmltree::{Document, Node};

use super::document::{child, path, text, DocumentFacts, Family};
use crate::engine::codes::{nit_check_digit, qr_url};

/// What the rules say about one document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub rejections: Vec<String>,
    pub notifications: Vec<String>,
}

fn rejection(rule: &str, text: &str) -> String {
    format!("Regla: {rule}, Rechazo: {text}")
}

/// Health-sector operation types, valid on invoices and their notes (annex
/// 1.9, sector salud; the Ministry of Health's annex, Res. 2275 de 2023).
const HEALTH_OPERATIONS: [&str; 7] = [
    "SS-CUFE",
    "SS-CUDE",
    "SS-POS",
    "SS-SNum",
    "SS-Recaudo",
    "SS-Reporte",
    "SS-SinAporte",
];

/// Operation types of invoices 01-04 (annex numeral 13.1.5.1: 10 standard,
/// 09 AIU, 11 mandates, 12 transport, 13 foreign exchange, 15/16 currency
/// purchase/sale, protocol.md §7.3), of credit notes (20 with reference, 22
/// without, 23 for the old invoices) and of debit notes (30, 32, 33).
const INVOICE_OPERATIONS: [&str; 7] = ["09", "10", "11", "12", "13", "15", "16"];
const CREDIT_NOTE_OPERATIONS: [&str; 3] = ["20", "22", "23"];
const DEBIT_NOTE_OPERATIONS: [&str; 3] = ["30", "32", "33"];

/// FAD02 / CAD02 / DAD02: `CustomizationID` is an operation type of the
/// document's type (an export, 02, included: 04 is no operation type).
fn operation_type(root: Node<'_, '_>, facts: &DocumentFacts, out: &mut Verdict) {
    let (rule, valid): (&str, &[&str]) = match (facts.family, facts.type_code.as_str()) {
        (Family::Invoice, "01" | "02" | "03" | "04") => ("FAD02", &INVOICE_OPERATIONS),
        (Family::CreditNote, "91") => ("CAD02", &CREDIT_NOTE_OPERATIONS),
        (Family::DebitNote, "92") => ("DAD02", &DEBIT_NOTE_OPERATIONS),
        _ => return,
    };
    let op = text(child(root, "CustomizationID")).unwrap_or_default();
    if !valid.contains(&op.as_str()) && !HEALTH_OPERATIONS.contains(&op.as_str()) {
        out.rejections.push(rejection(
            rule,
            &format!(
                "El tipo de operación '{}' no es válido para el tipo de documento {}.",
                op.chars().take(32).collect::<String>(),
                facts.type_code
            ),
        ));
    }
}

/// DSAJ25a / DSAJ24b: the resident vendor (operation 10) of a support
/// document or its adjustment note is identified in `PartyTaxScheme` as a
/// NIT, `schemeName` 31 with its check digit in `schemeID`, whatever
/// document the person holds.
fn support_vendor(root: Node<'_, '_>, facts: &DocumentFacts, out: &mut Verdict) {
    if !matches!(facts.type_code.as_str(), "05" | "95") {
        return;
    }
    if text(child(root, "CustomizationID")).as_deref() != Some("10") {
        return;
    }
    let id = path(
        root,
        &[
            "AccountingSupplierParty",
            "Party",
            "PartyTaxScheme",
            "CompanyID",
        ],
    );
    let number = text(id).unwrap_or_default();
    if id.and_then(|n| n.attribute("schemeName")) != Some("31") {
        out.rejections.push(rejection(
            "DSAJ25a",
            "El vendedor residente debe identificarse con schemeName 31 en PartyTaxScheme/CompanyID.",
        ));
        return;
    }
    let expected = nit_check_digit(&number).map(|d| d.to_string());
    let given = id.and_then(|n| n.attribute("schemeID"));
    if expected.is_none() || given != expected.as_deref() {
        out.rejections.push(rejection(
            "DSAJ24b",
            "El dígito de verificación del vendedor (schemeID) no corresponde al número informado.",
        ));
    }
}

/// The three extensions a POS receipt carries, with their names in order
/// (protocol.md §7.5b).
const POS_EXTENSIONS: [(&str, &str, &[&str]); 3] = [
    (
        "FabricanteSoftware",
        "InformacionDelFabricanteDelSoftware",
        &["NombreApellido", "RazonSocial", "NombreSoftware"],
    ),
    (
        "BeneficiosComprador",
        "InformacionBeneficiosComprador",
        &["Codigo", "NombresApellidos", "Puntos"],
    ),
    (
        "PuntoVenta",
        "InformacionCajaVenta",
        &[
            "PlacaCaja",
            "UbicaciónCaja",
            "Cajero",
            "TipoCaja",
            "CódigoVenta",
            "SubTotal",
        ],
    ),
];

/// DEPD11 / DEPD21: a POS receipt (20) carries the three extensions, each
/// with all its names (literal, accents included). The public sources cite
/// both rules for these nodes without saying which names which: here a
/// missing extension is DEPD11 and an incomplete one DEPD21.
fn pos_extensions(root: Node<'_, '_>, facts: &DocumentFacts, out: &mut Verdict) {
    if facts.family != Family::Invoice || facts.type_code != "20" {
        return;
    }
    let contents: Vec<Node<'_, '_>> = child(root, "UBLExtensions")
        .map(|u| {
            u.children()
                .filter(|c| c.is_element() && c.tag_name().name() == "UBLExtension")
                .filter_map(|e| child(e, "ExtensionContent"))
                .collect()
        })
        .unwrap_or_default();
    for (wrapper, group, names) in POS_EXTENSIONS {
        let found = contents
            .iter()
            .find_map(|c| child(*c, wrapper).and_then(|w| child(w, group)));
        let Some(group_node) = found else {
            out.rejections.push(rejection(
                "DEPD11",
                &format!(
                    "No se encontró la extensión {wrapper}/{group} del documento equivalente POS."
                ),
            ));
            continue;
        };
        let given: Vec<String> = group_node
            .children()
            .filter(|c| c.is_element() && c.tag_name().name() == "Name")
            .filter_map(|c| text(Some(c)))
            .collect();
        let missing: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !given.iter().any(|g| g == n))
            .collect();
        if !missing.is_empty() {
            out.rejections.push(rejection(
                "DEPD21",
                &format!("La extensión {group} no informa {}.", missing.join(", ")),
            ));
        }
    }
}

/// `sts:DianExtensions` in the element order of the authority's
/// `DIAN_UBL_Structures.xsd` (`DianExtensionsType`): (name, namespace,
/// least, most). `AdditionalMonetaryTotal` and `FinancialInformation` have
/// `maxOccurs="0"` there, so they are absent.
const DIAN_EXTENSIONS: [(&str, &str, u32, u32); 7] = [
    ("InvoiceControl", STS_NS, 0, 1),
    ("InvoiceSource", STS_NS, 1, 1),
    ("SoftwareProvider", STS_NS, 1, 1),
    ("SoftwareSecurityCode", STS_NS, 1, 1),
    ("AuthorizationProvider", STS_NS, 1, 1),
    ("QRCode", STS_NS, 1, 1),
    ("LegalMonetaryTotal", CAC_NS, 0, 1),
];

const STS_NS: &str = "dian:gov:co:facturaelectronica:Structures-2-1";
const CAC_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";

/// ZB01 (the authority's schema rejection): the UBL schemas leave extension
/// content to a lax wildcard, which the authority validates against its own
/// `DIAN_UBL_Structures.xsd`. Checked here is the content model of
/// `sts:DianExtensions` itself: its children, their order and counts (what
/// catches a `sts:CreditNoteSource`, a name the schema does not know), and
/// the country code inside `sts:InvoiceSource` (`cac:CountryType`).
fn dian_extensions(root: Node<'_, '_>, facts: &DocumentFacts, out: &mut Verdict) {
    if !matches!(
        facts.family,
        Family::Invoice | Family::CreditNote | Family::DebitNote
    ) {
        return;
    }
    let Some(ext) = root
        .descendants()
        .find(|n| n.is_element() && n.tag_name().name() == "DianExtensions")
    else {
        out.rejections.push(rejection(
            "ZB01",
            "Falta el elemento sts:DianExtensions en ext:UBLExtensions.",
        ));
        return;
    };
    if ext.tag_name().namespace() != Some(STS_NS) {
        out.rejections.push(rejection(
            "ZB01",
            "El elemento DianExtensions no está en el espacio de nombres de DIAN_UBL_Structures.xsd.",
        ));
        return;
    }
    if let Some(problem) = content_model(ext) {
        out.rejections.push(rejection("ZB01", &problem));
        return;
    }
    let code = child(ext, "InvoiceSource").and_then(|s| child(s, "IdentificationCode"));
    if text(code).is_none_or(|c| c.trim().is_empty()) {
        out.rejections.push(rejection(
            "ZB01",
            "El elemento sts:InvoiceSource debe informar cbc:IdentificationCode.",
        ));
    }
}

/// The first way `ext`'s children break [`DIAN_EXTENSIONS`], as a message
/// like a schema validator's; `None` when they follow it.
fn content_model(ext: Node<'_, '_>) -> Option<String> {
    let expected = |from: usize| {
        DIAN_EXTENSIONS
            .iter()
            .skip(from)
            .map(|(name, ..)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut slot = 0;
    let mut count = 0;
    for el in ext.children().filter(|c| c.is_element()) {
        let name = el.tag_name().name();
        let ns = el.tag_name().namespace().unwrap_or_default();
        loop {
            let Some((want, want_ns, least, most)) = DIAN_EXTENSIONS.get(slot) else {
                return Some(format!(
                    "Elemento {name}: no se esperaba este elemento al final de sts:DianExtensions."
                ));
            };
            if name == *want && ns == *want_ns && count < *most {
                count += 1;
                break;
            }
            if count < *least {
                return Some(format!(
                    "Elemento {}: no se esperaba este elemento. Se esperaba: {}.",
                    name.chars().take(64).collect::<String>(),
                    expected(slot)
                ));
            }
            slot += 1;
            count = 0;
        }
    }
    // What is left must be optional.
    while let Some((want, _, least, _)) = DIAN_EXTENSIONS.get(slot) {
        if count < *least {
            return Some(format!(
                "Falta el elemento {want} en sts:DianExtensions. Se esperaba: {}.",
                expected(slot)
            ));
        }
        slot += 1;
        count = 0;
    }
    None
}

/// NIE021 (102), NIAE021 (103 replacing), NIAE234 (103 deleting): the
/// payroll's `CodigoQR` is the verification URL of its CUNE on the
/// environment's catalogue (`https://catalogo-vpfe(-hab).dian.gov.co/document/searchqr?documentkey=<CUNE>`),
/// nothing else: the annex §13.1 text is what the printed QR carries.
fn payroll_qr(root: Node<'_, '_>, facts: &DocumentFacts, out: &mut Verdict) {
    let (body, rule) = match facts.family {
        Family::Payroll => (root, "NIE021"),
        Family::PayrollAdjustment => match (child(root, "Reemplazar"), child(root, "Eliminar")) {
            (Some(b), _) => (b, "NIAE021"),
            (_, Some(b)) => (b, "NIAE234"),
            _ => return,
        },
        _ => return,
    };
    let environment = child(body, "InformacionGeneral")
        .and_then(|i| i.attribute("Ambiente"))
        .and_then(|a| a.trim().parse::<u8>().ok())
        .unwrap_or(2);
    let expected = qr_url(environment, &facts.code);
    let given = text(child(body, "CodigoQR")).unwrap_or_default();
    if given.trim() != expected {
        out.rejections.push(rejection(
            rule,
            &format!("El valor del CodigoQR debe corresponder a la URL {expected}"),
        ));
    }
}

/// Every rule above, on one document.
pub fn check(xml: &str, facts: &DocumentFacts) -> Verdict {
    let mut out = Verdict::default();
    let Ok(doc) = Document::parse(xml) else {
        // Already refused as ZB01 by the reading of its facts.
        return out;
    };
    let root = doc.root_element();
    operation_type(root, facts, &mut out);
    support_vendor(root, facts, &mut out);
    pos_extensions(root, facts, &mut out);
    dian_extensions(root, facts, &mut out);
    payroll_qr(root, facts, &mut out);
    out
}
