//! The ApplicationResponse the simulator returns in `XmlBase64Bytes` for an
//! accepted document (ResponseCode 02 "Documento validado por la DIAN").
//! It is NOT signed (the real authority signs it); consumers that embed it in
//! an AttachedDocument get a well-formed UBL ApplicationResponse.

use super::document::DocumentFacts;
use crate::authority::soap::escape_text;
use chrono::{DateTime, FixedOffset};

/// The authority's NIT, as it appears in its own responses.
pub const AUTHORITY_NIT: &str = "800197268";

pub fn build(facts: &DocumentFacts, response_id: &str, at: DateTime<FixedOffset>) -> String {
    let e = escape_text;
    format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
            "<ApplicationResponse xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2\"",
            " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
            " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\">",
            "<cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID>",
            "<cbc:CustomizationID>1</cbc:CustomizationID>",
            "<cbc:ProfileID>DIAN 2.1</cbc:ProfileID>",
            "<cbc:ID>{id}</cbc:ID>",
            "<cbc:IssueDate>{date}</cbc:IssueDate>",
            "<cbc:IssueTime>{time}</cbc:IssueTime>",
            "<cbc:Note>Simulador: respuesta sin firma</cbc:Note>",
            "<cac:SenderParty><cac:PartyTaxScheme>",
            "<cbc:RegistrationName>Unidad Especial Dirección de Impuestos y Aduanas Nacionales</cbc:RegistrationName>",
            "<cbc:CompanyID schemeAgencyID=\"195\" schemeID=\"4\" schemeName=\"31\">{dian}</cbc:CompanyID>",
            "<cac:TaxScheme><cbc:ID>01</cbc:ID><cbc:Name>IVA</cbc:Name></cac:TaxScheme>",
            "</cac:PartyTaxScheme></cac:SenderParty>",
            "<cac:ReceiverParty><cac:PartyTaxScheme>",
            "<cbc:CompanyID schemeAgencyID=\"195\" schemeName=\"31\">{issuer}</cbc:CompanyID>",
            "<cac:TaxScheme><cbc:ID>01</cbc:ID><cbc:Name>IVA</cbc:Name></cac:TaxScheme>",
            "</cac:PartyTaxScheme></cac:ReceiverParty>",
            "<cac:DocumentResponse>",
            "<cac:Response><cbc:ResponseCode>02</cbc:ResponseCode>",
            "<cbc:Description>Documento validado por la DIAN</cbc:Description></cac:Response>",
            "<cac:DocumentReference><cbc:ID>{number}</cbc:ID>",
            "<cbc:UUID schemeName=\"{scheme}-SHA384\">{code}</cbc:UUID></cac:DocumentReference>",
            "</cac:DocumentResponse>",
            "</ApplicationResponse>"
        ),
        id = e(response_id),
        date = at.format("%Y-%m-%d"),
        time = at.format("%H:%M:%S%:z"),
        dian = AUTHORITY_NIT,
        issuer = e(&facts.issuer_nit),
        number = e(&facts.number),
        scheme = facts.code_name(),
        code = e(&facts.code),
    )
}

/// The ApplicationResponse `GetStatusEvent` answers in `XmlBase64Bytes`
/// for an invoice: the authority as sender, the invoice's issuer as
/// receiver, and one `cac:DocumentResponse` per accepted event, in the
/// order and with the members the authority's `XmlUtilEvents` writes them
/// (`Response` with `ReferenceID` the line, `ResponseCode`, `Description`,
/// `EffectiveDate`, `EffectiveTime`; `DocumentReference` with the event's
/// number and CUDE; `IssuerParty`; `RecipientParty`). Not signed.
pub fn events(
    issuer_nit: &str,
    events: &[super::events::ListedEvent],
    response_id: &str,
    at: DateTime<FixedOffset>,
) -> String {
    let e = escape_text;
    let party = |element: &str, name: &str, nit: &str| {
        format!(
            "<cac:{element}><cac:PartyTaxScheme><cbc:RegistrationName>{}</cbc:RegistrationName>\
             <cbc:CompanyID schemeAgencyID=\"195\" schemeName=\"31\">{}</cbc:CompanyID>\
             <cac:TaxScheme><cbc:ID>01</cbc:ID><cbc:Name>IVA</cbc:Name></cac:TaxScheme>\
             </cac:PartyTaxScheme></cac:{element}>",
            e(name),
            e(nit)
        )
    };
    let mut out = format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
            "<ApplicationResponse xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2\"",
            " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
            " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\">",
            "<cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID>",
            "<cbc:CustomizationID>1</cbc:CustomizationID>",
            "<cbc:ProfileID>DIAN 2.1</cbc:ProfileID>",
            "<cbc:ID>{id}</cbc:ID>",
            "<cbc:IssueDate>{date}</cbc:IssueDate>",
            "<cbc:IssueTime>{time}</cbc:IssueTime>",
            "<cbc:Note>Simulador: respuesta sin firma</cbc:Note>",
        ),
        id = e(response_id),
        date = at.format("%Y-%m-%d"),
        time = at.format("%H:%M:%S%:z"),
    );
    out.push_str(&party(
        "SenderParty",
        "Unidad Especial Dirección de Impuestos y Aduanas Nacionales",
        AUTHORITY_NIT,
    ));
    out.push_str(&party("ReceiverParty", "", issuer_nit));
    for (line, ev) in events.iter().enumerate() {
        out.push_str(&format!(
            "<cac:DocumentResponse><cac:Response><cbc:ReferenceID>{line}</cbc:ReferenceID>\
             <cbc:ResponseCode>{code}</cbc:ResponseCode><cbc:Description>{description}</cbc:Description>\
             <cbc:EffectiveDate>{date}</cbc:EffectiveDate><cbc:EffectiveTime>{time}</cbc:EffectiveTime></cac:Response>\
             <cac:DocumentReference><cbc:ID>{number}</cbc:ID><cbc:UUID schemeName=\"CUDE-SHA384\">{cude}</cbc:UUID></cac:DocumentReference>",
            line = line + 1,
            code = e(&ev.code),
            description = e(&ev.description),
            date = e(&ev.date),
            time = e(&ev.time),
            number = e(&ev.number),
            cude = e(&ev.cude),
        ));
        out.push_str(&party("IssuerParty", &ev.sender_name, &ev.sender_nit));
        out.push_str(&party(
            "RecipientParty",
            &ev.receiver_name,
            &ev.receiver_nit,
        ));
        out.push_str("</cac:DocumentResponse>");
    }
    out.push_str("</ApplicationResponse>");
    out
}
