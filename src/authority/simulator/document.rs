//! What the simulator reads from a received document to route its checks:
//! family and type code, number, declared code, issuer NIT, software id.

use roxmltree::{Document, Node};

/// Document families as the authority's validator tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Invoice,
    CreditNote,
    DebitNote,
    /// ApplicationResponse (events).
    Event,
    /// NominaIndividual (102).
    Payroll,
    /// NominaIndividualDeAjuste (103).
    PayrollAdjustment,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentFacts {
    pub family: Family,
    /// `01`, `05`, `20`, `91`, `95`, `92`, `96`, `102`, `103`…
    pub type_code: String,
    /// Full number with prefix (`cbc:ID`, `NumeroSecuenciaXML/@Numero`).
    pub number: String,
    /// The code the document declares (`cbc:UUID`, `InformacionGeneral/@CUNE`).
    pub code: String,
    /// The issuer: supplier; buyer for support documents (05, 95); sender
    /// of an event; employer of payroll.
    pub issuer_nit: String,
    /// `sts:SoftwareID` / `ProveedorXML/@SoftwareID`.
    pub software_id: Option<String>,
    /// `cbc:IssueDate` as written (invoices and notes).
    pub issue_date: Option<String>,
    /// The other party: customer (the supplier of a support document),
    /// receiver of an event, the employee of payroll; who besides the
    /// issuer may ask for the document back.
    pub receiver_id: Option<String>,
}

/// Equivalent documents (POS and others) validated with DEAD06.
const EQUIVALENT: [&str; 13] = [
    "20", "25", "27", "30", "32", "35", "40", "45", "50", "55", "60", "93", "94",
];

impl DocumentFacts {
    /// Reads the facts; `Err` carries a ZB01-style reason.
    pub fn read(xml: &str) -> Result<DocumentFacts, String> {
        let doc = Document::parse(xml).map_err(|e| format!("XML mal formado: {e}"))?;
        let root = doc.root_element();
        match root.tag_name().name() {
            "Invoice" => ubl(root, Family::Invoice, "InvoiceTypeCode", "01"),
            "CreditNote" => ubl(root, Family::CreditNote, "CreditNoteTypeCode", "91"),
            "DebitNote" => ubl(root, Family::DebitNote, "DebitNoteTypeCode", "92"),
            "ApplicationResponse" => event(root),
            "NominaIndividual" => payroll(root, Family::Payroll),
            "NominaIndividualDeAjuste" => payroll(root, Family::PayrollAdjustment),
            other => Err(format!(
                "Elemento raíz no soportado: {}",
                other.chars().take(64).collect::<String>()
            )),
        }
    }

    /// Invoices 01, 02 and 04 are coded with the range's technical key;
    /// everything else with the software PIN (protocol.md §1.1).
    pub fn uses_technical_key(&self) -> bool {
        self.family == Family::Invoice && matches!(self.type_code.as_str(), "01" | "02" | "04")
    }

    /// Documents numbered under a resolution (invoice root: FE, DS, POS…).
    pub fn needs_range(&self) -> bool {
        self.family == Family::Invoice
    }

    /// Rule id for a code that does not recompute (protocol.md §6).
    pub fn code_rule(&self) -> &'static str {
        let t = self.type_code.as_str();
        match self.family {
            _ if EQUIVALENT.contains(&t) => "DEAD06",
            Family::Invoice if t == "05" => "DSAD06",
            Family::Invoice => "FAD06",
            Family::CreditNote if t == "95" => "NSAD06",
            Family::CreditNote => "CAD06",
            Family::DebitNote => "DAD06",
            Family::Event => "AAD06",
            Family::Payroll => "NIE024",
            Family::PayrollAdjustment => "NIAE024",
        }
    }

    /// `CUFE`, `CUDE`, `CUDS` or `CUNE`.
    pub fn code_name(&self) -> &'static str {
        match self.family {
            Family::Payroll | Family::PayrollAdjustment => "CUNE",
            _ if matches!(self.type_code.as_str(), "05" | "95") => "CUDS",
            _ if self.uses_technical_key() => "CUFE",
            _ => "CUDE",
        }
    }

    /// Name used in `StatusMessage`.
    pub fn label(&self) -> &'static str {
        match (self.family, self.type_code.as_str()) {
            (Family::Invoice, "05") => "El Documento Soporte",
            (Family::Invoice, t) if EQUIVALENT.contains(&t) => "El Documento Equivalente",
            (Family::Invoice, _) => "La Factura electrónica",
            (Family::CreditNote, "95") => "La Nota de Ajuste del Documento Soporte",
            (Family::CreditNote, _) => "La Nota Crédito electrónica",
            (Family::DebitNote, _) => "La Nota Débito electrónica",
            (Family::Event, _) => "El Evento",
            (Family::Payroll, _) | (Family::PayrollAdjustment, _) => {
                "La Nómina Individual Electrónica"
            }
        }
    }
}

pub(crate) fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

pub(crate) fn path<'a, 'i>(n: Node<'a, 'i>, steps: &[&str]) -> Option<Node<'a, 'i>> {
    steps.iter().try_fold(n, |cur, s| child(cur, s))
}

pub(crate) fn text(n: Option<Node<'_, '_>>) -> Option<String> {
    let t = n?.text()?.trim();
    (!t.is_empty()).then(|| t.to_string())
}

pub(crate) fn descendant<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.descendants()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn party_id(root: Node<'_, '_>, party: &str) -> Option<String> {
    text(path(root, &[party, "Party", "PartyTaxScheme", "CompanyID"]))
}

fn ubl(
    root: Node<'_, '_>,
    family: Family,
    type_element: &str,
    default_type: &str,
) -> Result<DocumentFacts, String> {
    let type_code = text(child(root, type_element)).unwrap_or_else(|| default_type.to_string());
    let (issuer_party, receiver_party) = if matches!(type_code.as_str(), "05" | "95") {
        ("AccountingCustomerParty", "AccountingSupplierParty")
    } else {
        ("AccountingSupplierParty", "AccountingCustomerParty")
    };
    Ok(DocumentFacts {
        family,
        number: text(child(root, "ID")).ok_or("Falta cbc:ID")?,
        code: text(child(root, "UUID")).ok_or("Falta cbc:UUID")?,
        issuer_nit: party_id(root, issuer_party).ok_or("Falta el NIT del emisor")?,
        software_id: text(descendant(root, "SoftwareID")),
        issue_date: text(child(root, "IssueDate")),
        receiver_id: party_id(root, receiver_party),
        type_code,
    })
}

fn event(root: Node<'_, '_>) -> Result<DocumentFacts, String> {
    Ok(DocumentFacts {
        family: Family::Event,
        type_code: "96".into(),
        number: text(child(root, "ID")).ok_or("Falta cbc:ID")?,
        code: text(child(root, "UUID")).ok_or("Falta cbc:UUID")?,
        issuer_nit: text(path(root, &["SenderParty", "PartyTaxScheme", "CompanyID"]))
            .ok_or("Falta el NIT del emisor del evento")?,
        software_id: text(descendant(root, "SoftwareID")),
        issue_date: None,
        receiver_id: text(path(
            root,
            &["ReceiverParty", "PartyTaxScheme", "CompanyID"],
        )),
    })
}

/// The part of a payroll document holding the data (`Reemplazar` or
/// `Eliminar` for an adjustment).
pub(crate) fn payroll_body<'a, 'i>(root: Node<'a, 'i>) -> Node<'a, 'i> {
    child(root, "Reemplazar")
        .or_else(|| child(root, "Eliminar"))
        .unwrap_or(root)
}

fn attr(n: Option<Node<'_, '_>>, name: &str) -> Option<String> {
    let v = n?.attribute(name)?.trim();
    (!v.is_empty()).then(|| v.to_string())
}

fn payroll(root: Node<'_, '_>, family: Family) -> Result<DocumentFacts, String> {
    let body = payroll_body(root);
    let info = child(body, "InformacionGeneral");
    Ok(DocumentFacts {
        family,
        type_code: attr(info, "TipoXML").unwrap_or_else(|| {
            if family == Family::Payroll {
                "102"
            } else {
                "103"
            }
            .to_string()
        }),
        number: attr(child(body, "NumeroSecuenciaXML"), "Numero")
            .ok_or("Falta NumeroSecuenciaXML/@Numero")?,
        code: attr(info, "CUNE").ok_or("Falta InformacionGeneral/@CUNE")?,
        issuer_nit: attr(child(body, "Empleador"), "NIT").ok_or("Falta Empleador/@NIT")?,
        software_id: attr(child(body, "ProveedorXML"), "SoftwareID"),
        issue_date: None,
        receiver_id: attr(child(body, "Trabajador"), "NumeroDocumento"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UBL: &str = r#"xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2" xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2" xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2" xmlns:sts="dian:gov:co:facturaelectronica:Structures-2-1""#;

    fn invoice(type_code: &str) -> String {
        format!(
            r#"<Invoice {UBL}><sts:SoftwareID>sw</sts:SoftwareID><cbc:ID>SETP990000001</cbc:ID><cbc:UUID schemeName="CUFE-SHA384">abc</cbc:UUID><cbc:InvoiceTypeCode>{type_code}</cbc:InvoiceTypeCode>
            <cac:AccountingSupplierParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>900000001</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingSupplierParty>
            <cac:AccountingCustomerParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>800000002</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingCustomerParty></Invoice>"#
        )
    }

    #[test]
    fn invoice_facts() {
        let f = DocumentFacts::read(&invoice("01")).expect("facts");
        assert_eq!(f.family, Family::Invoice);
        assert_eq!(f.number, "SETP990000001");
        assert_eq!(f.issuer_nit, "900000001");
        assert_eq!(f.receiver_id.as_deref(), Some("800000002"));
        assert_eq!(f.software_id.as_deref(), Some("sw"));
        assert!(f.uses_technical_key() && f.needs_range());
        assert_eq!((f.code_rule(), f.code_name()), ("FAD06", "CUFE"));
    }

    #[test]
    fn support_document_issuer_is_the_buyer() {
        let f = DocumentFacts::read(&invoice("05")).expect("facts");
        assert_eq!(f.issuer_nit, "800000002");
        assert_eq!(f.receiver_id.as_deref(), Some("900000001"));
        assert!(!f.uses_technical_key());
        assert_eq!((f.code_rule(), f.code_name()), ("DSAD06", "CUDS"));
        let pos = DocumentFacts::read(&invoice("20")).expect("facts");
        assert_eq!(pos.code_rule(), "DEAD06");
    }

    #[test]
    fn payroll_facts() {
        let xml = r#"<NominaIndividualDeAjuste xmlns="dian:gov:co:facturaelectronica:NominaIndividualDeAjuste"><TipoNota>2</TipoNota><Eliminar><NumeroSecuenciaXML Numero="NA1"/><ProveedorXML SoftwareID="p1"/><InformacionGeneral TipoXML="103" CUNE="c1"/><Empleador NIT="900000001"/></Eliminar></NominaIndividualDeAjuste>"#;
        let f = DocumentFacts::read(xml).expect("facts");
        assert_eq!(f.family, Family::PayrollAdjustment);
        assert_eq!(
            (f.number.as_str(), f.code.as_str(), f.issuer_nit.as_str()),
            ("NA1", "c1", "900000001")
        );
        assert_eq!(f.code_rule(), "NIAE024");
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(DocumentFacts::read("<x").is_err());
        assert!(DocumentFacts::read("<Other/>").is_err());
        assert!(DocumentFacts::read(
            &invoice("01").replace("<cbc:UUID schemeName=\"CUFE-SHA384\">abc</cbc:UUID>", "")
        )
        .is_err());
        assert!(DocumentFacts::read("<!DOCTYPE x [<!ENTITY a 'b'>]><Invoice/>").is_err());
    }
}
