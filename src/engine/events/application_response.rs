//! The ApplicationResponse of an event (UBL 2.1, protocol.md §1.7, §7.5),
//! unsigned and in canonical form (the builders' contract with
//! `xades::sign`): `sts:DianExtensions` with the software, the circulation
//! events' `CustomTagGeneral` (decisions.md "Registry terms"), then the
//! signature slot; the sub-type in `cbc:CustomizationID`; sender and
//! receiver; the response code (the authority's), the invoice it refers to
//! by number and CUFE (with the registration's validity end date), and the
//! party the event names in `DocumentResponse/cac:IssuerParty`: the
//! invoice's buyer in an endorsement, who received in 030 and 032.

use chrono::{DateTime, FixedOffset, NaiveDate};

use super::terms::CustomTag;
use super::EventKind;
use crate::engine::codes::{self, EventCodeInput};
use crate::engine::model::colombia_offset;
use crate::engine::ubl::common::{
    write_signature_slot, AUTHORITY_NIT, AUTHORITY_NIT_DV, DIAN_AGENCY_ID, DIAN_AGENCY_NAME,
    ROOT_NAMESPACES,
};
use crate::engine::xml_writer::{XmlWriteError, XmlWriter};

pub const APPLICATION_RESPONSE_NAMESPACE: &str =
    "urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2";
/// `cbc:ProfileID` of the events of an invoice.
pub const PROFILE_ID: &str = "DIAN 2.1: ApplicationResponse de la Factura Electrónica de Venta";
/// `DocumentReference/cbc:DocumentTypeCode` of a national invoice.
pub const INVOICE_TYPE_CODE: &str = "01";

/// A party of the event, by its tax identification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventParty {
    pub name: String,
    /// NIT without check digit, or another identification number.
    pub id_number: String,
    /// Identification type (`31` NIT, `13` CC…).
    pub id_type: String,
    pub check_digit: Option<u8>,
    /// Fiscal responsibilities (`O-13`, `R-99-PN`…).
    pub tax_level: String,
}

/// A person named in the event (`cac:Person`): who received the invoice or
/// the goods (030, 032).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPerson {
    /// Identification number and its type (`13` CC, `31` NIT…), with the
    /// check digit of a NIT.
    pub id_number: String,
    pub id_type: String,
    pub check_digit: Option<u8>,
    pub first_name: String,
    pub family_name: String,
    pub job_title: Option<String>,
    pub department: Option<String>,
}

/// `DocumentResponse/cac:IssuerParty`.
#[derive(Debug, Clone, Copy)]
pub enum IssuerParty<'a> {
    /// A party by its tax identification (the invoice's buyer, in an
    /// endorsement: rules AAH25b, AAH26b).
    Party(&'a EventParty),
    /// A person (who received, in 030 and 032).
    Person(&'a EventPerson),
}

/// The registered software that issues the event.
#[derive(Debug, Clone)]
pub struct EventSoftware<'a> {
    pub id: &'a str,
    pub pin: &'a str,
    pub provider_nit: &'a str,
    pub provider_check_digit: u8,
}

/// Everything one event's XML carries.
#[derive(Debug, Clone)]
pub struct EventInput<'a> {
    pub kind: EventKind,
    /// The event's own number (`cbc:ID`).
    pub number: &'a str,
    /// 1 production, 2 testing.
    pub environment: u8,
    pub issued_at: DateTime<FixedOffset>,
    pub sender: &'a EventParty,
    pub receiver: &'a EventParty,
    /// The invoice: its number and CUFE.
    pub invoice_number: &'a str,
    pub invoice_cufe: &'a str,
    pub software: EventSoftware<'a>,
    /// Claim concept (`01`-`04`) of a 031, in `ResponseCode/@listID`.
    pub claim_concept: Option<&'a str>,
    /// Free text (notes, the claim's reason, endorsement conditions).
    pub notes: &'a [String],
    /// `cbc:CustomizationID`: the event's sub-type.
    pub customization_id: &'a str,
    /// The `CustomTagGeneral` extension of a circulation event.
    pub custom_tag: Option<&'a CustomTag>,
    /// `DocumentReference/cac:ValidityPeriod/cbc:EndDate` (the
    /// registration: the invoice's `PaymentDueDate`, rule AAH59).
    pub validity_end: Option<NaiveDate>,
    pub issuer_party: Option<IssuerParty<'a>>,
}

/// An event ready to sign.
#[derive(Debug, Clone)]
pub struct BuiltEvent {
    pub unsigned_xml: String,
    /// The event's CUDE (protocol.md §1.7).
    pub cude: String,
}

fn date_time(at: DateTime<FixedOffset>) -> (String, String) {
    let local = at.with_timezone(&colombia_offset());
    (
        local.format("%Y-%m-%d").to_string(),
        local.format("%H:%M:%S%:z").to_string(),
    )
}

/// The CUDE of `input` (no environment digit).
pub fn cude(input: &EventInput<'_>) -> String {
    let (date, time) = date_time(input.issued_at);
    codes::event_code(&EventCodeInput {
        number: input.number,
        issue_date: &date,
        issue_time: &time,
        sender_nit: &input.sender.id_number,
        receiver_id: &input.receiver.id_number,
        response_code: input.kind.authority_code(),
        document_id: input.invoice_number,
        document_type_code: INVOICE_TYPE_CODE,
        pin: input.software.pin,
    })
}

fn agency() -> [(&'static str, &'static str); 2] {
    [
        ("schemeAgencyID", DIAN_AGENCY_ID),
        ("schemeAgencyName", DIAN_AGENCY_NAME),
    ]
}

fn write_extensions(w: &mut XmlWriter, input: &EventInput<'_>, qr: &str) {
    let s = &input.software;
    w.open("ext:UBLExtensions");
    w.open("ext:UBLExtension");
    w.open("ext:ExtensionContent");
    w.open("sts:DianExtensions");
    w.open("sts:InvoiceSource");
    w.leaf(
        "cbc:IdentificationCode",
        &[
            ("listAgencyID", "6"),
            (
                "listAgencyName",
                "United Nations Economic Commission for Europe",
            ),
            (
                "listSchemeURI",
                "urn:oasis:names:specification:ubl:codelist:gc:CountryIdentificationCode-2.1",
            ),
        ],
        "CO",
    );
    w.end("sts:InvoiceSource");
    w.open("sts:SoftwareProvider");
    let dv = s.provider_check_digit.to_string();
    let [a, b] = agency();
    w.leaf(
        "sts:ProviderID",
        &[a, b, ("schemeID", dv.as_str()), ("schemeName", "31")],
        s.provider_nit,
    );
    w.leaf("sts:SoftwareID", &agency(), s.id);
    w.end("sts:SoftwareProvider");
    let ssc = codes::software_security_code(s.id, s.pin, input.number);
    w.leaf("sts:SoftwareSecurityCode", &agency(), &ssc);
    w.open("sts:AuthorizationProvider");
    w.leaf(
        "sts:AuthorizationProviderID",
        &[a, b, ("schemeID", AUTHORITY_NIT_DV), ("schemeName", "31")],
        AUTHORITY_NIT,
    );
    w.end("sts:AuthorizationProvider");
    w.el("sts:QRCode", qr);
    w.end("sts:DianExtensions");
    w.end("ext:ExtensionContent");
    w.end("ext:UBLExtension");
    if let Some(tag) = input.custom_tag {
        // In the root's namespace, like the POS extensions: the extension
        // content is a lax wildcard the authority reads by local names.
        w.open("ext:UBLExtension");
        w.open("ext:ExtensionContent");
        w.open("CustomTagGeneral");
        w.open(tag.group);
        for (name, value) in &tag.pairs {
            w.el("Name", name);
            w.el("Value", value);
        }
        w.end(tag.group);
        w.end("CustomTagGeneral");
        w.end("ext:ExtensionContent");
        w.end("ext:UBLExtension");
    }
    write_signature_slot(w);
    w.end("ext:UBLExtensions");
}

fn write_party(w: &mut XmlWriter, element: &str, p: &EventParty) {
    w.open(element);
    write_tax_scheme(w, p);
    w.end(element);
}

fn write_tax_scheme(w: &mut XmlWriter, p: &EventParty) {
    w.open("cac:PartyTaxScheme");
    w.el("cbc:RegistrationName", &p.name);
    let dv = p.check_digit.map(|d| d.to_string());
    let [a, b] = agency();
    let mut attrs = vec![a, b, ("schemeName", p.id_type.as_str())];
    if let Some(dv) = dv.as_deref() {
        attrs.push(("schemeID", dv));
    }
    w.leaf("cbc:CompanyID", &attrs, &p.id_number);
    let level = if p.tax_level.is_empty() {
        "R-99-PN"
    } else {
        p.tax_level.as_str()
    };
    w.leaf("cbc:TaxLevelCode", &[("listName", "48")], level);
    w.open("cac:TaxScheme");
    w.el("cbc:ID", "01");
    w.el("cbc:Name", "IVA");
    w.end("cac:TaxScheme");
    w.end("cac:PartyTaxScheme");
}

fn write_issuer_party(w: &mut XmlWriter, party: IssuerParty<'_>) {
    w.open("cac:IssuerParty");
    match party {
        IssuerParty::Party(p) => write_tax_scheme(w, p),
        IssuerParty::Person(p) => {
            w.open("cac:Person");
            let dv = p.check_digit.map(|d| d.to_string());
            let mut attrs = vec![("schemeName", p.id_type.as_str())];
            if let Some(dv) = dv.as_deref() {
                attrs.insert(0, ("schemeID", dv));
            }
            w.leaf("cbc:ID", &attrs, &p.id_number);
            w.el("cbc:FirstName", &p.first_name);
            w.el("cbc:FamilyName", &p.family_name);
            if let Some(job) = &p.job_title {
                w.el("cbc:JobTitle", job);
            }
            if let Some(department) = &p.department {
                w.el("cbc:OrganizationDepartment", department);
            }
            w.end("cac:Person");
        }
    }
    w.end("cac:IssuerParty");
}

/// Builds the unsigned ApplicationResponse and its CUDE.
pub fn build(input: &EventInput<'_>) -> Result<BuiltEvent, XmlWriteError> {
    let cude = cude(input);
    let (date, time) = date_time(input.issued_at);
    let env = input.environment.to_string();
    let qr = format!(
        "{}{cude}",
        if input.environment == 1 {
            codes::QR_URL_PRODUCTION
        } else {
            codes::QR_URL_TEST
        }
    );
    let mut w = XmlWriter::with_capacity(8 * 1024);
    w.declaration();
    w.root_start(
        "ApplicationResponse",
        APPLICATION_RESPONSE_NAMESPACE,
        &ROOT_NAMESPACES,
        &[],
    );
    write_extensions(&mut w, input, &qr);
    w.el("cbc:UBLVersionID", "UBL 2.1");
    w.el("cbc:CustomizationID", input.customization_id);
    w.el("cbc:ProfileID", PROFILE_ID);
    w.el("cbc:ProfileExecutionID", &env);
    w.el("cbc:ID", input.number);
    w.leaf(
        "cbc:UUID",
        &[("schemeID", env.as_str()), ("schemeName", "CUDE-SHA384")],
        &cude,
    );
    w.el("cbc:IssueDate", &date);
    w.el("cbc:IssueTime", &time);
    for note in input.notes {
        w.el("cbc:Note", note);
    }
    write_party(&mut w, "cac:SenderParty", input.sender);
    write_party(&mut w, "cac:ReceiverParty", input.receiver);
    w.open("cac:DocumentResponse");
    w.open("cac:Response");
    match input.claim_concept {
        Some(concept) => w.leaf(
            "cbc:ResponseCode",
            &[("listID", concept)],
            input.kind.authority_code(),
        ),
        None => w.el("cbc:ResponseCode", input.kind.authority_code()),
    }
    w.el("cbc:Description", input.kind.name());
    w.end("cac:Response");
    w.open("cac:DocumentReference");
    w.el("cbc:ID", input.invoice_number);
    w.leaf(
        "cbc:UUID",
        &[("schemeName", "CUFE-SHA384")],
        input.invoice_cufe,
    );
    w.el("cbc:DocumentTypeCode", INVOICE_TYPE_CODE);
    if let Some(end) = input.validity_end {
        w.open("cac:ValidityPeriod");
        w.el("cbc:EndDate", &end.format("%Y-%m-%d").to_string());
        w.end("cac:ValidityPeriod");
    }
    w.end("cac:DocumentReference");
    if let Some(party) = input.issuer_party {
        write_issuer_party(&mut w, party);
    }
    w.end("cac:DocumentResponse");
    w.end("ApplicationResponse");
    Ok(BuiltEvent {
        unsigned_xml: w.finish()?,
        cude,
    })
}
