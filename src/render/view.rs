//! What a printed document shows, read from its signed UBL XML: the XML is
//! what the authority validated, so the PDF prints that and nothing
//! recomputed. Any family's root (Invoice, CreditNote, DebitNote) reads
//! the same way; amounts stay the XML's decimal strings.

use roxmltree::{Document, Node};

use super::RenderError;

/// The root element of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    Invoice,
    CreditNote,
    DebitNote,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartyView {
    /// Registration (legal) name.
    pub name: String,
    /// Trade name when it differs from the legal one.
    pub trade_name: Option<String>,
    /// The authority's identification type (31 NIT, 13 cédula …).
    pub id_type: String,
    pub id_number: String,
    pub check_digit: Option<String>,
    pub address: Option<String>,
    pub city: Option<String>,
    pub department: Option<String>,
    pub country: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
}

impl PartyView {
    /// `NIT 900000001-2`, `CC 1020304050`.
    pub fn identification(&self) -> String {
        let kind = id_type_name(&self.id_type);
        match &self.check_digit {
            Some(dv) if self.id_type == "31" => format!("{kind} {}-{dv}", self.id_number),
            _ => format!("{kind} {}", self.id_number),
        }
    }

    /// `Bogotá, D.C. - Bogotá - Colombia`, what of it is known.
    pub fn place(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for p in [&self.city, &self.department, &self.country]
            .into_iter()
            .flatten()
        {
            if !p.is_empty() && !parts.contains(&p.as_str()) {
                parts.push(p);
            }
        }
        parts.join(" - ")
    }
}

/// The authority's short names of identification types.
fn id_type_name(code: &str) -> &str {
    match code {
        "11" => "RC",
        "12" => "TI",
        "13" => "CC",
        "21" => "TE",
        "22" => "CE",
        "31" => "NIT",
        "41" => "Pasaporte",
        "42" => "Doc. extranjero",
        "47" => "PEP",
        "48" => "PPT",
        "50" => "NIT otro país",
        "91" => "NUIP",
        other => other,
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolutionView {
    pub number: String,
    pub prefix: String,
    pub from: String,
    pub to: String,
    pub valid_from: String,
    pub valid_to: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaxView {
    pub name: String,
    /// Percentage, when the tax is one.
    pub percent: Option<String>,
    pub taxable: String,
    pub amount: String,
}

impl TaxView {
    /// `IVA 19%`, `INC Bolsas 66.00 x unidad`, `ReteRenta 2.5%`.
    pub fn label(&self) -> String {
        match &self.percent {
            Some(p) if !p.contains('x') => format!("{} {}%", self.name, trim_zeros(p)),
            Some(p) => format!("{} {p}", self.name),
            None => self.name.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineView {
    pub number: String,
    pub code: String,
    pub description: String,
    pub quantity: String,
    pub unit: String,
    pub unit_price: String,
    pub line_total: String,
    /// `IVA 19%`, `INC 8%` …
    pub taxes: Vec<String>,
    /// Allowances (negative) and charges on the line, summed.
    pub discounts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReferenceView {
    pub number: String,
    pub code: Option<String>,
    pub code_scheme: Option<String>,
    pub issue_date: Option<String>,
    pub concept_code: Option<String>,
    pub concept: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TotalsView {
    pub line_extension: String,
    pub tax_exclusive: String,
    pub tax_inclusive: String,
    pub allowance_total: String,
    pub charge_total: String,
    /// Paid in advance (a health invoice's copay); empty when none.
    pub prepaid: String,
    pub payable: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowanceView {
    pub is_charge: bool,
    pub reason: String,
    pub amount: String,
}

/// Everything printed about one document.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentView {
    pub root: Root,
    /// The authority's type code (01, 02, 03, 04, 05, 20, 91, 92, 94, 95).
    pub type_code: String,
    pub operation: Option<String>,
    pub number: String,
    pub code: String,
    /// `CUFE-SHA384`, `CUDE-SHA384`, `CUDS-SHA384`.
    pub code_scheme: String,
    pub issue_date: String,
    pub issue_time: String,
    pub due_date: Option<String>,
    pub notes: Vec<String>,
    pub currency: String,
    pub supplier: PartyView,
    pub customer: PartyView,
    pub resolution: Option<ResolutionView>,
    pub provider_nit: String,
    pub provider_dv: Option<String>,
    pub software_id: String,
    /// POS receipts: the software's maker (`NombreSoftware`, `RazonSocial`).
    pub software_maker: Option<(String, String)>,
    /// POS receipts: register and cashier.
    pub register: Option<(String, String)>,
    pub reference: Option<ReferenceView>,
    /// Payment form (1 cash, 2 credit), means code, due date.
    pub payment: Option<(String, String, Option<String>)>,
    /// Source currency, target currency, rate.
    pub exchange: Option<(String, String, String)>,
    pub delivery_terms: Option<String>,
    pub allowances: Vec<AllowanceView>,
    pub taxes: Vec<TaxView>,
    pub withholdings: Vec<TaxView>,
    pub totals: TotalsView,
    pub lines: Vec<LineView>,
}

// --- tree walking ---------------------------------------------------------

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn children<'a, 'i: 'a>(n: Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    n.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

fn at<'a, 'i>(n: Node<'a, 'i>, path: &[&str]) -> Option<Node<'a, 'i>> {
    path.iter().try_fold(n, |n, name| child(n, name))
}

fn text(n: Node<'_, '_>, path: &[&str]) -> Option<String> {
    at(n, path)
        .and_then(|n| n.text())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

fn text_or_empty(n: Node<'_, '_>, path: &[&str]) -> String {
    text(n, path).unwrap_or_default()
}

fn party(n: Option<Node<'_, '_>>) -> PartyView {
    let Some(p) = n.and_then(|n| child(n, "Party")) else {
        return PartyView::default();
    };
    let legal = at(p, &["PartyLegalEntity", "CompanyID"])
        .or_else(|| at(p, &["PartyTaxScheme", "CompanyID"]))
        .or_else(|| at(p, &["PartyIdentification", "ID"]));
    let name = text(p, &["PartyLegalEntity", "RegistrationName"])
        .or_else(|| text(p, &["PartyTaxScheme", "RegistrationName"]))
        .or_else(|| text(p, &["PartyName", "Name"]))
        .unwrap_or_default();
    let trade_name = text(p, &["PartyName", "Name"]).filter(|t| *t != name);
    let address = at(p, &["PhysicalLocation", "Address"])
        .or_else(|| at(p, &["PartyTaxScheme", "RegistrationAddress"]));
    PartyView {
        name,
        trade_name,
        id_type: legal
            .and_then(|n| n.attribute("schemeName"))
            .unwrap_or("31")
            .to_string(),
        id_number: legal
            .and_then(|n| n.text())
            .map(|t| t.trim().to_string())
            .unwrap_or_default(),
        check_digit: legal
            .and_then(|n| n.attribute("schemeID"))
            .map(str::to_string),
        address: address.and_then(|a| text(a, &["AddressLine", "Line"])),
        city: address.and_then(|a| text(a, &["CityName"])),
        department: address.and_then(|a| text(a, &["CountrySubentity"])),
        country: address.and_then(|a| text(a, &["Country", "Name"])),
        phone: text(p, &["Contact", "Telephone"]),
        email: text(p, &["Contact", "ElectronicMail"]),
    }
}

/// The subtotals of every `element` (`TaxTotal`, `WithholdingTaxTotal`)
/// directly under `n`.
fn tax_subtotals(n: Node<'_, '_>, element: &str) -> Vec<TaxView> {
    let mut out = Vec::new();
    for total in children(n, element) {
        for s in children(total, "TaxSubtotal") {
            let name = text(s, &["TaxCategory", "TaxScheme", "Name"])
                .or_else(|| text(s, &["TaxCategory", "TaxScheme", "ID"]))
                .unwrap_or_default();
            let percent = text(s, &["TaxCategory", "Percent"])
                .or_else(|| text(s, &["PerUnitAmount"]).map(|p| format!("{p} x unidad")));
            out.push(TaxView {
                name,
                percent,
                taxable: text_or_empty(s, &["TaxableAmount"]),
                amount: text_or_empty(s, &["TaxAmount"]),
            });
        }
    }
    out
}

fn allowances(n: Node<'_, '_>) -> Vec<AllowanceView> {
    children(n, "AllowanceCharge")
        .map(|a| AllowanceView {
            is_charge: text(a, &["ChargeIndicator"]).as_deref() == Some("true"),
            reason: text_or_empty(a, &["AllowanceChargeReason"]),
            amount: text_or_empty(a, &["Amount"]),
        })
        .collect()
}

fn line(n: Node<'_, '_>) -> LineView {
    let quantity = n
        .children()
        .find(|c| c.is_element() && c.tag_name().name().ends_with("Quantity"));
    let taxes = tax_subtotals(n, "TaxTotal")
        .into_iter()
        .chain(tax_subtotals(n, "WithholdingTaxTotal"))
        .map(|t| t.label())
        .collect();
    let discounts = allowances(n)
        .into_iter()
        .map(|a| {
            if a.is_charge {
                a.amount
            } else {
                format!("-{}", a.amount)
            }
        })
        .collect();
    LineView {
        number: text_or_empty(n, &["ID"]),
        code: text_or_empty(n, &["Item", "StandardItemIdentification", "ID"]),
        description: text_or_empty(n, &["Item", "Description"]),
        quantity: quantity
            .and_then(|q| q.text())
            .map(|t| t.trim().to_string())
            .unwrap_or_default(),
        unit: quantity
            .and_then(|q| q.attribute("unitCode"))
            .unwrap_or_default()
            .to_string(),
        unit_price: text_or_empty(n, &["Price", "PriceAmount"]),
        line_total: text_or_empty(n, &["LineExtensionAmount"]),
        taxes,
        discounts,
    }
}

/// `19.00` → `19`, `0.966` → `0.966`.
pub fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// One of the POS extension groups: `Name`/`Value` pairs.
fn extension_value(doc: &Document<'_>, name: &str) -> Option<String> {
    doc.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "Name")
        .find(|n| n.text().map(str::trim) == Some(name))
        .and_then(|n| n.next_sibling_element())
        .and_then(|v| v.text())
        .map(|t| t.trim().to_string())
}

impl DocumentView {
    /// Reads a signed (or unsigned) UBL document of any family.
    pub fn read(xml: &str) -> Result<DocumentView, RenderError> {
        let doc = Document::parse(xml).map_err(|e| RenderError::Xml(e.to_string()))?;
        let r = doc.root_element();
        let root = match r.tag_name().name() {
            "Invoice" => Root::Invoice,
            "CreditNote" => Root::CreditNote,
            "DebitNote" => Root::DebitNote,
            other => {
                return Err(RenderError::Xml(format!(
                    "a document rooted at {other} has no printed form here"
                )))
            }
        };
        let type_code = match root {
            Root::Invoice => text(r, &["InvoiceTypeCode"]),
            Root::CreditNote => text(r, &["CreditNoteTypeCode"]),
            Root::DebitNote => None,
        }
        .unwrap_or_else(|| "92".into());
        let dian = doc
            .descendants()
            .find(|n| n.is_element() && n.tag_name().name() == "DianExtensions");
        let resolution = dian
            .and_then(|d| child(d, "InvoiceControl"))
            .map(|c| ResolutionView {
                number: text_or_empty(c, &["InvoiceAuthorization"]),
                prefix: text_or_empty(c, &["AuthorizedInvoices", "Prefix"]),
                from: text_or_empty(c, &["AuthorizedInvoices", "From"]),
                to: text_or_empty(c, &["AuthorizedInvoices", "To"]),
                valid_from: text_or_empty(c, &["AuthorizationPeriod", "StartDate"]),
                valid_to: text_or_empty(c, &["AuthorizationPeriod", "EndDate"]),
            });
        let provider = dian.and_then(|d| at(d, &["SoftwareProvider", "ProviderID"]));
        let uuid = child(r, "UUID");
        let billing = at(r, &["BillingReference", "InvoiceDocumentReference"]);
        let discrepancy = child(r, "DiscrepancyResponse");
        let reference = billing.map(|b| ReferenceView {
            number: text_or_empty(b, &["ID"]),
            code: text(b, &["UUID"]),
            code_scheme: child(b, "UUID")
                .and_then(|u| u.attribute("schemeName"))
                .map(str::to_string),
            issue_date: text(b, &["IssueDate"]),
            concept_code: discrepancy.and_then(|d| text(d, &["ResponseCode"])),
            concept: discrepancy.and_then(|d| text(d, &["Description"])),
        });
        let monetary =
            child(r, "LegalMonetaryTotal").or_else(|| child(r, "RequestedMonetaryTotal"));
        let totals = monetary
            .map(|m| TotalsView {
                line_extension: text_or_empty(m, &["LineExtensionAmount"]),
                tax_exclusive: text_or_empty(m, &["TaxExclusiveAmount"]),
                tax_inclusive: text_or_empty(m, &["TaxInclusiveAmount"]),
                allowance_total: text_or_empty(m, &["AllowanceTotalAmount"]),
                charge_total: text_or_empty(m, &["ChargeTotalAmount"]),
                prepaid: text_or_empty(m, &["PrepaidAmount"]),
                payable: text_or_empty(m, &["PayableAmount"]),
            })
            .unwrap_or_default();
        let line_name = match root {
            Root::Invoice => "InvoiceLine",
            Root::CreditNote => "CreditNoteLine",
            Root::DebitNote => "DebitNoteLine",
        };
        let maker =
            extension_value(&doc, "NombreSoftware").zip(extension_value(&doc, "RazonSocial"));
        let register = extension_value(&doc, "PlacaCaja").zip(extension_value(&doc, "Cajero"));
        Ok(DocumentView {
            root,
            type_code,
            operation: text(r, &["CustomizationID"]),
            number: text_or_empty(r, &["ID"]),
            code: uuid
                .and_then(|u| u.text())
                .map(|t| t.trim().to_string())
                .unwrap_or_default(),
            code_scheme: uuid
                .and_then(|u| u.attribute("schemeName"))
                .unwrap_or_default()
                .to_string(),
            issue_date: text_or_empty(r, &["IssueDate"]),
            issue_time: text_or_empty(r, &["IssueTime"]),
            due_date: text(r, &["DueDate"]),
            notes: children(r, "Note")
                .filter_map(|n| n.text())
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            currency: text(r, &["DocumentCurrencyCode"]).unwrap_or_else(|| "COP".into()),
            supplier: party(child(r, "AccountingSupplierParty")),
            customer: party(child(r, "AccountingCustomerParty")),
            resolution,
            provider_nit: provider
                .and_then(|p| p.text())
                .map(|t| t.trim().to_string())
                .unwrap_or_default(),
            provider_dv: provider
                .and_then(|p| p.attribute("schemeID"))
                .map(str::to_string),
            software_id: dian
                .and_then(|d| text(d, &["SoftwareProvider", "SoftwareID"]))
                .unwrap_or_default(),
            software_maker: maker,
            register,
            reference,
            payment: child(r, "PaymentMeans").map(|p| {
                (
                    text_or_empty(p, &["ID"]),
                    text_or_empty(p, &["PaymentMeansCode"]),
                    text(p, &["PaymentDueDate"]),
                )
            }),
            exchange: child(r, "PaymentExchangeRate").map(|x| {
                (
                    text_or_empty(x, &["SourceCurrencyCode"]),
                    text_or_empty(x, &["TargetCurrencyCode"]),
                    text_or_empty(x, &["CalculationRate"]),
                )
            }),
            delivery_terms: text(r, &["DeliveryTerms", "LossRiskResponsibilityCode"]),
            allowances: allowances(r),
            taxes: tax_subtotals(r, "TaxTotal"),
            withholdings: tax_subtotals(r, "WithholdingTaxTotal"),
            totals,
            lines: children(r, line_name).map(line).collect(),
        })
    }

    /// The issuing company buys (support documents and their adjustments):
    /// the other party is the supplier.
    pub fn issuer_is_buyer(&self) -> bool {
        matches!(self.type_code.as_str(), "05" | "95")
    }

    /// The party the document is issued to (or, for a support document,
    /// bought from).
    pub fn counterparty(&self) -> &PartyView {
        if self.issuer_is_buyer() {
            &self.supplier
        } else {
            &self.customer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_sample_invoice() {
        let (xml, code) = crate::fixtures::signed_invoice(
            "900000001",
            "SETP990000001",
            crate::fixtures::TECH_KEY,
        );
        let v = DocumentView::read(&xml).unwrap();
        assert_eq!(v.root, Root::Invoice);
        assert_eq!(v.type_code, "01");
        assert_eq!(v.number, "SETP990000001");
        assert_eq!(v.code, code);
        assert_eq!(v.code_scheme, "CUFE-SHA384");
        assert_eq!(v.issue_date, "2024-02-15");
        assert_eq!(v.totals.payable, "1190.00");
        assert_eq!(v.taxes.len(), 1);
        assert_eq!(v.taxes[0].amount, "190.00");
        let res = v.resolution.unwrap();
        assert_eq!(res.number, "18760000001");
        assert_eq!(
            (res.from.as_str(), res.to.as_str()),
            ("990000000", "995000000")
        );
        assert_eq!(v.provider_nit, "900000001");
        assert_eq!(v.customer.id_number, crate::fixtures::CUSTOMER);
    }

    #[test]
    fn other_roots_are_refused() {
        let err = DocumentView::read("<ApplicationResponse/>").unwrap_err();
        assert!(err.to_string().contains("ApplicationResponse"), "{err}");
        assert!(DocumentView::read("not xml").is_err());
    }
}
