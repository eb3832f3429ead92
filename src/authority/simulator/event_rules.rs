//! The authority's rules on an event's own content (the invoice's terms at
//! hand), as its validator applies them (`wscuellar/DIAN`, June 2022:
//! `Validator.cs`, `LogicalEventRadian.cs`, `XmlParser.cs`): who receives
//! a tacit acceptance (AAG01e), each circulation event's sub-type (no code
//! of its own: the generic schema rejection ZB01), a title only of a credit
//! invoice (LGC62), the registration's `ConstanciadePagos` (LGC57) and
//! validity end date (AAH59), the invoice's buyer named in an endorsement
//! (AAH26b, AAH25b) and the negotiation of an endorsement in property
//! (AAI05, AAI07a, AAI09, AAI07b).

use chrono::NaiveDate;
use roxmltree::Node;
use rust_decimal::Decimal;

use super::document::{child, path, text};
use crate::engine::events::terms::InvoiceTerms;
use crate::engine::events::EventKind;
use crate::engine::ubl::common::AUTHORITY_NIT;

/// A rejection as the authority lists it.
pub fn rule(code: &str, text: &str) -> String {
    format!("Regla: {code}, Rechazo: {text}")
}

/// A notification as the authority lists it.
pub fn notice(code: &str, text: &str) -> String {
    format!("Regla: {code}, Notificación: {text}")
}

/// The authority's generic schema rejection, for a sub-type its validator
/// gives no code of its own.
pub const SCHEMA_RULE: &str = "ZB01";

/// What the rules find: rejections and notifications.
#[derive(Debug, Default)]
pub struct Findings {
    pub rejections: Vec<String>,
    pub notifications: Vec<String>,
}

/// Sub-types of each circulation event (`EnumHelper.cs`
/// `EventCustomization` 361-364, `SubEventStatus` 371/372; guarantee and
/// procuration have none there and carry their event code).
pub fn valid_customizations(kind: EventKind) -> Option<&'static [&'static str]> {
    match kind {
        EventKind::Registration => Some(&["361", "362", "363", "364"]),
        EventKind::EndorsementProperty => Some(&["371", "372"]),
        EventKind::EndorsementGuarantee => Some(&["038"]),
        EventKind::EndorsementProcuration => Some(&["039"]),
        _ => None,
    }
}

/// The `Name`/`Value` pairs of `CustomTagGeneral/<group>`, in order.
fn custom_tag(root: Node<'_, '_>, group: &str) -> Option<Vec<(String, String)>> {
    let node = root.descendants().find(|n| {
        n.is_element()
            && n.tag_name().name() == group
            && n.parent_element()
                .is_some_and(|p| p.tag_name().name() == "CustomTagGeneral")
    })?;
    let mut pairs = Vec::new();
    let mut name: Option<String> = None;
    for c in node.children().filter(|c| c.is_element()) {
        let value = c.text().map(str::trim).unwrap_or_default().to_string();
        match c.tag_name().name() {
            "Name" => name = Some(value),
            "Value" => pairs.push((name.take().unwrap_or_default(), value)),
            _ => {}
        }
    }
    Some(pairs)
}

fn value_of<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// `DocumentResponse/cac:IssuerParty`: its identification and name (by its
/// `PartyTaxScheme`, else its `PartyLegalEntity`).
fn issuer_party(root: Node<'_, '_>) -> Option<(String, String)> {
    let party = path(root, &["DocumentResponse", "IssuerParty"])?;
    let scheme = child(party, "PartyTaxScheme").or_else(|| child(party, "PartyLegalEntity"))?;
    Some((
        text(child(scheme, "CompanyID")).unwrap_or_default(),
        text(child(scheme, "RegistrationName")).unwrap_or_default(),
    ))
}

/// AAG01e: the tacit acceptance is received by the authority (or by no
/// one): `Validator.cs` ValidateParty, case AceptacionTacita.
fn tacit_receiver(root: Node<'_, '_>, out: &mut Findings) {
    let receiver = text(path(
        root,
        &["ReceiverParty", "PartyTaxScheme", "CompanyID"],
    ));
    if receiver.is_some_and(|r| r != AUTHORITY_NIT) {
        out.rejections.push(rule(
            "AAG01e",
            "El receptor de la aceptación tácita debe ser la DIAN (800197268).",
        ));
    }
}

/// The sub-type of a circulation event (`cbc:CustomizationID`).
fn sub_type(root: Node<'_, '_>, kind: EventKind, out: &mut Findings) {
    let Some(valid) = valid_customizations(kind) else {
        return;
    };
    let given = text(child(root, "CustomizationID")).unwrap_or_default();
    if !valid.contains(&given.as_str()) {
        out.rejections.push(rule(
            SCHEMA_RULE,
            &format!(
                "Fallo en el esquema XML del archivo: el tipo de operación (CustomizationID) '{}' no corresponde al evento {}; se esperaba {}.",
                given.chars().take(16).collect::<String>(),
                kind.authority_code(),
                valid.join(", ")
            ),
        ));
    }
}

fn amount(text: &str) -> Option<Decimal> {
    text.parse().ok()
}

/// LGC62, LGC57, AAH59: a registration (the authority's 036) of a credit
/// invoice, with the title's original value and the invoice's due date.
fn registration(root: Node<'_, '_>, invoice: &InvoiceTerms, out: &mut Findings) {
    if invoice.is_cash() {
        out.rejections.push(rule(
            "LGC62",
            "La factura electrónica de venta de contado no puede inscribirse como título valor.",
        ));
    }
    match custom_tag(root, "ConstanciadePagos")
        .and_then(|pairs| pairs.into_iter().next())
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
    {
        None => out.rejections.push(rule(
            "LGC57",
            "Valor original del Titulo Valor (ConstanciadePagos ValorFEV-TV) no informado.",
        )),
        // A different value is a notification (Mandatory = false).
        Some(v) if amount(&v).is_none() || amount(&v) != invoice.payable => {
            out.notifications.push(notice(
                "LGC57",
                "Valor original del Titulo Valor es diferente al valor total de la factura referenciada",
            ))
        }
        Some(_) => {}
    }
    let end = text(path(
        root,
        &[
            "DocumentResponse",
            "DocumentReference",
            "ValidityPeriod",
            "EndDate",
        ],
    ))
    .and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok());
    match invoice.payment_due_date {
        None => out.rejections.push(rule("89", "PaymentDueDate llega NULL")),
        Some(due) if end != Some(due) => out.rejections.push(rule(
            "AAH59",
            "EndDate del evento no coincide con el PaymentDueDate de la factura referenciada",
        )),
        Some(_) => {}
    }
}

/// AAH26b, AAH25b: an endorsement names the invoice's buyer.
fn endorsement_buyer(root: Node<'_, '_>, invoice: &InvoiceTerms, out: &mut Findings) {
    let (id, name) = issuer_party(root).unwrap_or_default();
    if id != invoice.buyer_id {
        out.rejections.push(rule(
            "AAH26b",
            "El documento de identidad no corresponde al del documento electronico referenciado",
        ));
    }
    let unescape = |s: &str| s.replace("&amp;", "&");
    if unescape(&name) != unescape(&invoice.buyer_name) {
        out.rejections.push(rule(
            "AAH25b",
            "No corresponde al adquiriente/deudor del documento electronico referenciado",
        ));
    }
}

/// AAI05, AAI07a, AAI09, AAI07b (`LogicalEventRadian.cs` ValidateEndoso):
/// an endorsement in property carries its negotiation, each value present,
/// PrecioPagarseFEV = ValorTotalEndoso × (100 − TasaDescuento) / 100.
fn negotiation(root: Node<'_, '_>, out: &mut Findings) {
    let pairs = custom_tag(root, "InformacionNegociacion").unwrap_or_default();
    let missing = [
        ("ValorTotalEndoso", "AAI05"),
        ("PrecioPagarseFEV", "AAI07a"),
        ("TasaDescuento", "AAI09"),
    ]
    .into_iter()
    .find(|(name, _)| value_of(&pairs, name).is_none());
    if let Some((name, code)) = missing {
        out.rejections.push(rule(
            code,
            &format!("El valor {name} de InformacionNegociacion no es informado."),
        ));
        return;
    }
    let get = |name: &str| value_of(&pairs, name).and_then(amount);
    let consistent = match (
        get("ValorTotalEndoso"),
        get("PrecioPagarseFEV"),
        get("TasaDescuento"),
    ) {
        (Some(total), Some(price), Some(rate)) => {
            total * (Decimal::ONE_HUNDRED - rate) / Decimal::ONE_HUNDRED == price
        }
        _ => false,
    };
    if !consistent {
        out.rejections.push(rule(
            "AAI07b",
            "El valor informado es diferente a la operación de Valor total del endoso * la tasa de descuento para los eventos: Endoso en Propiedad y Endoso con efectos de cesión ordinaria",
        ));
    }
}

/// Every content rule of an event of `kind` on `invoice` (its terms when
/// the simulator accepted it).
pub fn check(root: Node<'_, '_>, kind: EventKind, invoice: Option<&InvoiceTerms>) -> Findings {
    let mut out = Findings::default();
    if kind == EventKind::TacitAcceptance {
        tacit_receiver(root, &mut out);
    }
    sub_type(root, kind, &mut out);
    match (kind, invoice) {
        (EventKind::Registration, Some(invoice)) => registration(root, invoice, &mut out),
        (k, Some(invoice)) if k.is_endorsement() => endorsement_buyer(root, invoice, &mut out),
        _ => {}
    }
    if kind == EventKind::EndorsementProperty {
        negotiation(root, &mut out);
    }
    out
}
