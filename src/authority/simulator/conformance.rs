//! The authority's business rules on a document's content that the
//! signature, code and numbering checks do not see (protocol.md §6, §7.3,
//! §7.5b, §7.5c): the operation type valid for the document type, the
//! resident vendor of a support document as a NIT, the three extensions of
//! a POS receipt, and the source of a POS adjustment note. A rejection is
//! `Regla: X, Rechazo: …`; a notification (`Regla: X, Notificación: …`)
//! travels with an accepted document and does not reject it.

use roxmltree::{Document, Node};

use super::document::{child, path, text, DocumentFacts, Family};
use crate::engine::codes::nit_check_digit;

/// What the rules say about one document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub rejections: Vec<String>,
    pub notifications: Vec<String>,
}

fn rejection(rule: &str, text: &str) -> String {
    format!("Regla: {rule}, Rechazo: {text}")
}

fn notification(rule: &str, text: &str) -> String {
    format!("Regla: {rule}, Notificación: {text}")
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

/// NAAB14 (notification): a POS adjustment note (94) names its source
/// `sts:CreditNoteSource`, not `sts:InvoiceSource`.
fn pos_note_source(root: Node<'_, '_>, facts: &DocumentFacts, out: &mut Verdict) {
    if facts.family != Family::CreditNote || facts.type_code != "94" {
        return;
    }
    let dian = root
        .descendants()
        .find(|n| n.is_element() && n.tag_name().name() == "DianExtensions");
    if dian.and_then(|d| child(d, "InvoiceSource")).is_some() {
        out.notifications.push(notification(
            "NAAB14",
            "La nota de ajuste del documento equivalente debe informar sts:CreditNoteSource.",
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
    pos_note_source(root, facts, &mut out);
    out
}
