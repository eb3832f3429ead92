//! The engine's input model: what a document says, in English names,
//! independent of the HTTP JSON (Spanish or unified) and of the store.
//!
//! The API layer maps its requests into [`Document`] and [`IssuerContext`];
//! the engine validates, totals, builds the XML, signs and packages them.

use chrono::{DateTime, FixedOffset, NaiveDate, Offset};
use rust_decimal::Decimal;

use super::codes::CodeScheme;

/// The ten unified document types (`id_tipo_documento`, spec 2.2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum DocumentKind {
    Invoice = 1,
    CreditNote = 2,
    DebitNote = 3,
    SupportDocument = 4,
    SupportAdjustment = 5,
    ExportInvoice = 6,
    ContingencyT03 = 7,
    ContingencyT04 = 8,
    Pos = 9,
    PosAdjustment = 10,
}

/// Root element of the UBL document a kind produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootElement {
    Invoice,
    CreditNote,
    DebitNote,
}

impl RootElement {
    pub fn name(self) -> &'static str {
        match self {
            RootElement::Invoice => "Invoice",
            RootElement::CreditNote => "CreditNote",
            RootElement::DebitNote => "DebitNote",
        }
    }

    /// Default namespace of the root element.
    pub fn namespace(self) -> &'static str {
        match self {
            RootElement::Invoice => "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
            RootElement::CreditNote => "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
            RootElement::DebitNote => "urn:oasis:names:specification:ubl:schema:xsd:DebitNote-2",
        }
    }

    /// Name of the line element (`cac:InvoiceLine` ...).
    pub fn line_element(self) -> &'static str {
        match self {
            RootElement::Invoice => "cac:InvoiceLine",
            RootElement::CreditNote => "cac:CreditNoteLine",
            RootElement::DebitNote => "cac:DebitNoteLine",
        }
    }

    /// Name of the quantity element of a line.
    pub fn quantity_element(self) -> &'static str {
        match self {
            RootElement::Invoice => "cbc:InvoicedQuantity",
            RootElement::CreditNote => "cbc:CreditedQuantity",
            RootElement::DebitNote => "cbc:DebitedQuantity",
        }
    }

    /// Name of the monetary total element.
    pub fn monetary_total_element(self) -> &'static str {
        match self {
            RootElement::DebitNote => "cac:RequestedMonetaryTotal",
            _ => "cac:LegalMonetaryTotal",
        }
    }
}

/// Which secret goes in the key slot of the document code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKey {
    /// The technical key of the numbering resolution (CUFE).
    TechnicalKey,
    /// The software PIN (CUDE, CUDS).
    SoftwarePin,
}

impl DocumentKind {
    pub const ALL: [DocumentKind; 10] = [
        DocumentKind::Invoice,
        DocumentKind::CreditNote,
        DocumentKind::DebitNote,
        DocumentKind::SupportDocument,
        DocumentKind::SupportAdjustment,
        DocumentKind::ExportInvoice,
        DocumentKind::ContingencyT03,
        DocumentKind::ContingencyT04,
        DocumentKind::Pos,
        DocumentKind::PosAdjustment,
    ];

    /// From the unified API code 1..=10.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code).checked_sub(1)?).copied()
    }

    /// The unified API code 1..=10.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The authority's document type code (`InvoiceTypeCode` /
    /// `CreditNoteTypeCode`, protocol.md §7.2). Debit notes carry none in the
    /// XML (the schema has no type code there) but the value is 92.
    pub fn type_code(self) -> &'static str {
        match self {
            DocumentKind::Invoice => "01",
            DocumentKind::CreditNote => "91",
            DocumentKind::DebitNote => "92",
            DocumentKind::SupportDocument => "05",
            DocumentKind::SupportAdjustment => "95",
            DocumentKind::ExportInvoice => "02",
            DocumentKind::ContingencyT03 => "03",
            DocumentKind::ContingencyT04 => "04",
            DocumentKind::Pos => "20",
            DocumentKind::PosAdjustment => "94",
        }
    }

    /// Short name used by the `consecutivo/:tipo` endpoint and in logs.
    pub fn short_name(self) -> &'static str {
        match self {
            DocumentKind::Invoice => "fe",
            DocumentKind::CreditNote => "nc",
            DocumentKind::DebitNote => "nd",
            DocumentKind::SupportDocument => "ds",
            DocumentKind::SupportAdjustment => "na",
            DocumentKind::ExportInvoice => "fx",
            DocumentKind::ContingencyT03 => "t03",
            DocumentKind::ContingencyT04 => "t04",
            DocumentKind::Pos => "pos",
            DocumentKind::PosAdjustment => "nap",
        }
    }

    pub fn root(self) -> RootElement {
        match self {
            DocumentKind::CreditNote
            | DocumentKind::SupportAdjustment
            | DocumentKind::PosAdjustment => RootElement::CreditNote,
            DocumentKind::DebitNote => RootElement::DebitNote,
            _ => RootElement::Invoice,
        }
    }

    /// The code the document carries (decisions.md §5 "Codes by type").
    pub fn code_scheme(self) -> CodeScheme {
        match self {
            DocumentKind::Invoice | DocumentKind::ExportInvoice | DocumentKind::ContingencyT04 => {
                CodeScheme::Cufe
            }
            DocumentKind::SupportDocument | DocumentKind::SupportAdjustment => CodeScheme::Cuds,
            DocumentKind::CreditNote
            | DocumentKind::DebitNote
            | DocumentKind::ContingencyT03
            | DocumentKind::Pos
            | DocumentKind::PosAdjustment => CodeScheme::Cude,
        }
    }

    /// Which secret the code uses.
    pub fn code_key(self) -> CodeKey {
        match self.code_scheme() {
            CodeScheme::Cufe => CodeKey::TechnicalKey,
            _ => CodeKey::SoftwarePin,
        }
    }

    /// A POS receipt or its adjustment note: sold while a customer waits
    /// at the till.
    pub fn is_pos(self) -> bool {
        matches!(self, DocumentKind::Pos | DocumentKind::PosAdjustment)
    }

    /// A contingency invoice (T03, T04, spec 2.2).
    pub fn is_contingency(self) -> bool {
        matches!(
            self,
            DocumentKind::ContingencyT03 | DocumentKind::ContingencyT04
        )
    }

    /// Dated the day it reaches the authority (annex 1.9 of the sales
    /// invoice, rules FAD09e, CAD09e, DAD09e): a sales invoice, an export
    /// invoice, a credit or a debit note.
    pub fn dated_the_day_it_is_sent(self) -> bool {
        matches!(
            self,
            DocumentKind::Invoice
                | DocumentKind::CreditNote
                | DocumentKind::DebitNote
                | DocumentKind::ExportInvoice
        )
    }

    /// A sales invoice that may circulate as a title (the registry's):
    /// a sales invoice, an export invoice, a T04 contingency invoice, the
    /// kinds that carry a CUFE.
    pub fn is_sales_invoice(self) -> bool {
        matches!(
            self,
            DocumentKind::Invoice | DocumentKind::ExportInvoice | DocumentKind::ContingencyT04
        )
    }

    /// Notes and adjustments must reference the original document.
    pub fn needs_reference(self) -> bool {
        matches!(
            self,
            DocumentKind::CreditNote
                | DocumentKind::DebitNote
                | DocumentKind::SupportAdjustment
                | DocumentKind::PosAdjustment
        )
    }

    /// Whether a note of this kind may reference `original`: a credit or
    /// debit note an invoice (sales, export or contingency), a support
    /// adjustment a support document, a POS adjustment a POS receipt.
    pub fn may_reference(self, original: DocumentKind) -> bool {
        match self {
            DocumentKind::CreditNote | DocumentKind::DebitNote => matches!(
                original,
                DocumentKind::Invoice
                    | DocumentKind::ExportInvoice
                    | DocumentKind::ContingencyT03
                    | DocumentKind::ContingencyT04
            ),
            DocumentKind::SupportAdjustment => original == DocumentKind::SupportDocument,
            DocumentKind::PosAdjustment => original == DocumentKind::Pos,
            _ => true,
        }
    }

    /// The kind as a refusal names it ("a credit note").
    pub fn name(self) -> &'static str {
        match self {
            DocumentKind::Invoice => "a sales invoice",
            DocumentKind::CreditNote => "a credit note",
            DocumentKind::DebitNote => "a debit note",
            DocumentKind::SupportDocument => "a support document",
            DocumentKind::SupportAdjustment => "a support-document adjustment note",
            DocumentKind::ExportInvoice => "an export invoice",
            DocumentKind::ContingencyT03 => "a contingency T03 document",
            DocumentKind::ContingencyT04 => "a contingency T04 document",
            DocumentKind::Pos => "a POS receipt",
            DocumentKind::PosAdjustment => "a POS adjustment note",
        }
    }

    /// Documents numbered under an authority resolution carry
    /// `sts:InvoiceControl`: every Invoice-rooted kind (FE, export,
    /// contingency, DS, POS); notes do not.
    pub fn has_numbering_resolution(self) -> bool {
        self.root() == RootElement::Invoice
    }

    /// The seller is the counterparty and the buyer is the issuing company
    /// (support documents: the company buys from a person not obliged to
    /// invoice).
    pub fn issuer_is_buyer(self) -> bool {
        matches!(
            self,
            DocumentKind::SupportDocument | DocumentKind::SupportAdjustment
        )
    }

    /// `cbc:ProfileID` text (protocol.md §7.1).
    pub fn profile_id(self) -> &'static str {
        match self {
            DocumentKind::Invoice
            | DocumentKind::ExportInvoice
            | DocumentKind::ContingencyT03
            | DocumentKind::ContingencyT04 => "DIAN 2.1: Factura Electrónica de Venta",
            DocumentKind::CreditNote => "DIAN 2.1: Nota Crédito de Factura Electrónica de Venta",
            DocumentKind::DebitNote => "DIAN 2.1: Nota Débito de Factura Electrónica de Venta",
            DocumentKind::SupportDocument => {
                "DIAN 2.1: documento soporte en adquisiciones efectuadas a no obligados a facturar."
            }
            DocumentKind::SupportAdjustment => {
                "DIAN 2.1: Nota de ajuste al documento soporte en adquisiciones efectuadas a sujetos no obligados a expedir factura o documento equivalente"
            }
            DocumentKind::Pos => "DIAN 2.1: Documento Equivalente POS",
            DocumentKind::PosAdjustment => {
                "DIAN 2.1: Nota de ajuste crédito al documento equivalente"
            }
        }
    }

    /// Default `cbc:CustomizationID` (operation type, protocol.md §7.3):
    /// 10 standard, also for an export (`InvoiceTypeCode` 02 says it is one;
    /// 04 is not an operation type and the authority rejects it, rule FAD02);
    /// 20 credit note with reference (a POS adjustment names the equivalent
    /// document it adjusts, 20, protocol.md §7.5b); 30 debit note with
    /// reference; support documents 10 (resident).
    pub fn default_operation_type(self) -> &'static str {
        match self {
            DocumentKind::CreditNote | DocumentKind::PosAdjustment => "20",
            DocumentKind::DebitNote => "30",
            _ => "10",
        }
    }
}

/// Organization type (`cbc:AdditionalAccountID`): 1 legal entity, 2 natural person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum OrganizationType {
    #[default]
    LegalEntity = 1,
    NaturalPerson = 2,
}

impl OrganizationType {
    pub fn code(self) -> &'static str {
        match self {
            OrganizationType::LegalEntity => "1",
            OrganizationType::NaturalPerson => "2",
        }
    }
}

/// A postal address with the authority's location codes.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Address {
    /// Street line.
    pub line: String,
    /// Official municipality code (DIVIPOLA, 5 digits, e.g. `11001`).
    pub municipality_code: String,
    pub municipality_name: String,
    /// Department name (`cbc:CountrySubentity`).
    pub department_name: String,
    /// Department code (`cbc:CountrySubentityCode`, 2 digits).
    pub department_code: String,
    pub postal_zone: Option<String>,
    /// ISO 3166-1 alpha-2, `CO` for Colombia.
    pub country_code: String,
    pub country_name: String,
}

/// The tax scheme a party is registered under (`cac:PartyTaxScheme/cac:TaxScheme`):
/// `01` IVA, `ZZ` not applicable (and others from the authority's list).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaxSchemeRef {
    pub id: String,
    pub name: String,
}

impl Default for TaxSchemeRef {
    fn default() -> Self {
        TaxSchemeRef {
            id: "ZZ".into(),
            name: "No aplica".into(),
        }
    }
}

/// A party: the issuing company, a customer, or a support-document vendor.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Party {
    /// Identification type code (protocol.md §7.6): `31` NIT, `13` CC, ...
    pub id_type: String,
    /// Identification number, digits only for NIT (no check digit, no dots).
    pub id_number: String,
    /// NIT check digit; computed by validation when absent for type `31`.
    pub check_digit: Option<u8>,
    /// Legal or full name.
    pub name: String,
    /// Trade name (`cac:PartyName`); defaults to `name`.
    pub trade_name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub address: Option<Address>,
    pub organization_type: OrganizationType,
    /// Fiscal responsibilities (`cbc:TaxLevelCode`, list 48), e.g. `R-99-PN`
    /// or `O-13;O-15`.
    pub tax_responsibilities: String,
    pub tax_scheme: TaxSchemeRef,
}

impl Party {
    /// The final consumer of a POS receipt without a named customer.
    pub fn final_consumer() -> Party {
        Party {
            id_type: "13".into(),
            id_number: "222222222222".into(),
            check_digit: None,
            name: "Consumidor final".into(),
            organization_type: OrganizationType::NaturalPerson,
            tax_responsibilities: "R-99-PN".into(),
            ..Party::default()
        }
    }

    /// The check digit written in `schemeID`: the given one, or for a NIT
    /// (type `31`) the computed one.
    pub fn effective_check_digit(&self) -> Option<u8> {
        self.check_digit.or_else(|| {
            if self.id_type == "31" {
                super::codes::nit_check_digit(&self.id_number)
            } else {
                None
            }
        })
    }

    /// Trade name or, failing that, the legal name.
    pub fn display_name(&self) -> &str {
        self.trade_name.as_deref().unwrap_or(&self.name)
    }
}

/// How a tax is computed on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TaxRate {
    /// Percentage of the taxable base (IVA 19, INC 8, ICA 0.966 ...).
    Percent(#[serde(with = "crate::engine::exact")] Decimal),
    /// Fixed amount per unit of quantity (INC on plastic bags, code 22; fuel
    /// taxes 24/25/26).
    PerUnit(#[serde(with = "crate::engine::exact")] Decimal),
}

/// One tax (or withholding) of a line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LineTax {
    /// Authority tax code (`01` IVA, `03` ICA, `04` INC, `22` bags, ...;
    /// withholdings `05` ReteIVA, `06` ReteRenta/ReteFuente, `07` ReteICA).
    pub code: String,
    pub rate: TaxRate,
    /// Taxable base declared by the caller; when absent the line extension
    /// (for ReteIVA `05`: the line's IVA amount).
    #[serde(with = "crate::engine::exact::option")]
    pub taxable: Option<Decimal>,
    /// Amount declared by the caller; compared with the computed one by
    /// [`crate::engine::totals::check_declared`].
    #[serde(with = "crate::engine::exact::option")]
    pub amount: Option<Decimal>,
}

impl LineTax {
    pub fn percent(code: &str, percent: Decimal) -> LineTax {
        LineTax {
            code: code.into(),
            rate: TaxRate::Percent(percent),
            taxable: None,
            amount: None,
        }
    }

    pub fn per_unit(code: &str, amount_per_unit: Decimal) -> LineTax {
        LineTax {
            code: code.into(),
            rate: TaxRate::PerUnit(amount_per_unit),
            taxable: None,
            amount: None,
        }
    }
}

/// A discount (allowance) or a charge, on a line or on the whole document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AllowanceCharge {
    /// `true` for a charge, `false` for a discount.
    pub is_charge: bool,
    /// Reason code of the authority's list (discounts: `00`..`11`), optional.
    pub reason_code: Option<String>,
    pub reason: String,
    #[serde(with = "crate::engine::exact")]
    pub amount: Decimal,
}

/// One document line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Line {
    pub description: String,
    #[serde(with = "crate::engine::exact")]
    pub quantity: Decimal,
    /// Unit of measure (`94` unit, `KGM`, `E48` service, ...).
    pub unit_code: String,
    #[serde(with = "crate::engine::exact")]
    pub unit_price: Decimal,
    /// Line subtotal declared by the caller (quantity × price − discounts +
    /// charges); computed when absent.
    #[serde(with = "crate::engine::exact::option")]
    pub line_extension: Option<Decimal>,
    pub taxes: Vec<LineTax>,
    pub withholdings: Vec<LineTax>,
    pub allowances_charges: Vec<AllowanceCharge>,
    /// Product code (`cac:StandardItemIdentification`); defaults to the line number.
    pub item_code: Option<String>,
    /// Cargo-transport data of the line (freight invoices).
    pub transport: Option<CargoTransport>,
}

impl Line {
    /// A line with no taxes, unit `94`.
    pub fn simple(description: &str, quantity: Decimal, unit_price: Decimal) -> Line {
        Line {
            description: description.into(),
            quantity,
            unit_code: "94".into(),
            unit_price,
            line_extension: None,
            taxes: Vec::new(),
            withholdings: Vec::new(),
            allowances_charges: Vec::new(),
            item_code: None,
            transport: None,
        }
    }
}

/// Payment form and method (`cac:PaymentMeans`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Payment {
    /// `1` cash (contado), `2` credit.
    pub form: String,
    /// Payment means code: `10` cash, `42` deposit, `47` transfer, `48` credit card ...
    pub method: String,
    /// Required for credit.
    pub due_date: Option<NaiveDate>,
}

impl Default for Payment {
    fn default() -> Self {
        Payment {
            form: "1".into(),
            method: "10".into(),
            due_date: None,
        }
    }
}

/// Exchange rate of a foreign-currency document (`cac:PaymentExchangeRate`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExchangeRate {
    pub source_currency: String,
    pub target_currency: String,
    #[serde(with = "crate::engine::exact")]
    pub rate: Decimal,
    pub date: NaiveDate,
}

/// The original document a note or adjustment refers to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BillingReference {
    /// Prefix + number of the original document.
    pub number: String,
    /// Its CUFE / CUDE / CUDS.
    pub code: String,
    pub issue_date: NaiveDate,
    pub scheme: CodeScheme,
}

/// Concept of a note (`cac:DiscrepancyResponse`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NoteConcept {
    /// Concept code (spec 2.8).
    pub code: String,
    /// Free text reason (`motivo`).
    pub description: String,
}

/// Health-sector data (the API's operation type `11`): the "campos de datos
/// adicionales del sector salud" of the Ministry of Health's technical annex
/// for health-sector invoices (Resolución 506 de 2021, replaced by
/// Resolución 2275 de 2023 and modified by Resolución 1884 de 2024). Written
/// in a `CustomTagGeneral` extension and `cac:InvoicePeriod`; the document's
/// `CustomizationID` becomes `SS-CUFE` (invoices) or `SS-CUDE` (notes),
/// decisions.md §5 "Operation types in the XML".
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct HealthInfo {
    /// `CODIGO_PRESTADOR`: the provider's code in the health system (REPS).
    pub provider_code: String,
    /// `MODALIDAD_PAGO`: code of the list `salud_modalidad_pago.gc`.
    pub payment_modality: String,
    /// `COBERTURA_PLAN_BENEFICIOS`: code of the list `salud_cobertura.gc`.
    pub coverage: String,
    /// `NUMERO_CONTRATO` with the paying entity; empty when none.
    pub contract_number: String,
    /// `NUMERO_POLIZA` (SOAT or voluntary plan); empty when none.
    pub policy_number: String,
    /// Start of the billed period (`cac:InvoicePeriod`); the issue date when absent.
    pub period_start: Option<NaiveDate>,
    /// End of the billed period; the issue date when absent.
    pub period_end: Option<NaiveDate>,
    /// The users (patients) served, one `Collection` each with their
    /// identification and names; none: one collection without user data.
    pub users: Vec<HealthUser>,
    /// `COPAGO`: what the user paid (copay or moderating fee), written in
    /// the first collection and, on an invoice, as its prepaid payment: the
    /// payable amount is reduced by it and the operation is `SS-CUFE`
    /// ("servicios + aporte del usuario"); without one, `SS-SinAporte`.
    #[serde(with = "crate::engine::exact::option")]
    pub copay: Option<Decimal>,
}

impl HealthInfo {
    /// Whether the user paid a part (a copay above zero).
    pub fn has_copay(&self) -> bool {
        self.copay
            .is_some_and(|c| c.is_sign_positive() && !c.is_zero())
    }
}

/// A health-sector user (patient), as the annex's `Usuario` collection
/// names them (`TIPO_DOCUMENTO_IDENTIFICACION` of `salud_identificacion.gc`,
/// `NUMERO_DOCUMENTO_IDENTIFICACION`, `PRIMER_APELLIDO`, `PRIMER_NOMBRE`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct HealthUser {
    /// Letter code of `salud_identificacion.gc` (`CC`, `TI`, `RC` ...).
    pub id_type: String,
    pub id_number: String,
    pub first_name: String,
    pub last_name: String,
}

/// Cargo-transport data of one line (the API's operation type `12`), where
/// the authority's invoice annex places it for freight invoices (see
/// `ubl::sector`): item properties
/// `01` (the consignment's filing number in the national cargo registry,
/// RNDC), `02` (the carrier's consignment number) and `03` (freight value,
/// with the transported quantity in `cbc:ValueQuantity`, unit `KGM` or
/// `GLL`), and `schemeID` `1` on the line's `cbc:ID` (a line registered in
/// the RNDC; the other lines of the document carry `0`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CargoTransport {
    /// Filing number of the consignment in the RNDC.
    pub rndc_filing: String,
    /// The carrier's own consignment number (remesa).
    pub consignment: String,
    /// Freight charged for the consignment.
    #[serde(with = "crate::engine::exact")]
    pub freight: Decimal,
    /// Quantity transported.
    #[serde(with = "crate::engine::exact")]
    pub quantity: Decimal,
    /// `KGM` (kilograms) or `GLL` (gallons).
    pub unit_code: String,
}

/// Point of sale of a POS receipt (protocol.md §7.5b, `InformacionCajaVenta`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PointOfSale {
    /// `PlacaCaja`: the register (`id_caja`).
    pub register_id: String,
    /// `Cajero`: the cashier (`id_cajero`).
    pub cashier_id: String,
}

impl Default for PointOfSale {
    /// Register 1 and cashier 1 (decisions.md §5 "POS extension values").
    fn default() -> Self {
        PointOfSale {
            register_id: "1".into(),
            cashier_id: "1".into(),
        }
    }
}

/// The paper (talonario) invoice a contingency T03 transcribes
/// (`cac:AdditionalDocumentReference`, protocol.md §7.5c).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PaperReference {
    pub number: String,
    pub issue_date: NaiveDate,
}

/// A document to issue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Document {
    pub kind: DocumentKind,
    /// `cbc:CustomizationID` override (an authority operation type code);
    /// [`DocumentKind::default_operation_type`] when absent. Ignored for
    /// export invoices (always `10`) and health documents (`SS-CUFE` /
    /// `SS-CUDE`), see [`Document::customization_id`].
    pub operation_type: Option<String>,
    /// The other party: the customer, or the vendor of a support document.
    pub counterparty: Party,
    pub lines: Vec<Line>,
    pub notes: Vec<String>,
    pub payments: Vec<Payment>,
    /// ISO 4217, `COP` by default.
    pub currency: String,
    pub exchange_rate: Option<ExchangeRate>,
    /// Incoterm (`CIF`, `FOB` ...).
    pub delivery_terms: Option<String>,
    /// Document-level discounts and charges (a POS tip is a charge).
    pub allowances_charges: Vec<AllowanceCharge>,
    pub billing_reference: Option<BillingReference>,
    pub note_concept: Option<NoteConcept>,
    pub health: Option<HealthInfo>,
    /// POS receipts: register and cashier (defaults when absent).
    pub point_of_sale: Option<PointOfSale>,
    /// Contingency T03: the paper invoice transcribed; the document's own
    /// number and issue date when absent (decisions.md §5 "Contingency T03").
    pub paper_reference: Option<PaperReference>,
    /// Totals sent by the caller, checked against the computed ones.
    pub declared: Option<DeclaredTotals>,
}

impl Document {
    /// `cbc:CustomizationID` of this document: `10` for an export (rule
    /// FAD02); the health-sector operation types for a health document
    /// (`SS-CUFE` for an invoice with the user's copay, `SS-SinAporte`
    /// without, `SS-CUDE` for a note, decisions.md §5); the
    /// given operation type or the kind's default otherwise.
    pub fn customization_id(&self) -> &str {
        if self.kind == DocumentKind::ExportInvoice {
            return self.kind.default_operation_type();
        }
        if let Some(h) = &self.health {
            return match self.kind.root() {
                RootElement::Invoice if h.has_copay() => "SS-CUFE",
                RootElement::Invoice => "SS-SinAporte",
                RootElement::CreditNote | RootElement::DebitNote => "SS-CUDE",
            };
        }
        self.operation_type
            .as_deref()
            .unwrap_or_else(|| self.kind.default_operation_type())
    }

    /// A document with the given kind, counterparty and lines; everything
    /// else at its default (COP, cash payment, no notes).
    pub fn new(kind: DocumentKind, counterparty: Party, lines: Vec<Line>) -> Document {
        Document {
            kind,
            operation_type: None,
            counterparty,
            lines,
            notes: Vec::new(),
            payments: Vec::new(),
            currency: "COP".into(),
            exchange_rate: None,
            delivery_terms: None,
            allowances_charges: Vec::new(),
            billing_reference: None,
            note_concept: None,
            health: None,
            point_of_sale: None,
            paper_reference: None,
            declared: None,
        }
    }
}

/// Document totals as the caller declared them (spec 2.7
/// `legal_monetary_totals`); any may be absent.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DeclaredTotals {
    #[serde(with = "crate::engine::exact::option")]
    pub line_extension: Option<Decimal>,
    #[serde(with = "crate::engine::exact::option")]
    pub tax_exclusive: Option<Decimal>,
    #[serde(with = "crate::engine::exact::option")]
    pub tax_inclusive: Option<Decimal>,
    #[serde(with = "crate::engine::exact::option")]
    pub payable: Option<Decimal>,
}

/// Software registered at the authority. `Debug` leaves the PIN out.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Software {
    pub id: String,
    pub pin: String,
    /// NIT of the software provider (the company itself for own software).
    pub provider_nit: String,
    pub provider_check_digit: u8,
    /// Who made the software (`InformacionDelFabricanteDelSoftware` of POS
    /// receipts, protocol.md §7.5b).
    pub maker: SoftwareMaker,
}

/// The software's maker, as POS receipts name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftwareMaker {
    /// `NombreApellido`.
    pub person_name: String,
    /// `RazonSocial`.
    pub company_name: String,
    /// `NombreSoftware`.
    pub software_name: String,
}

/// The product's own name, the maker of a company that configured none
/// (decisions.md §5 "POS extension values").
pub const PRODUCT_NAME: &str = "emisor";

impl Default for SoftwareMaker {
    fn default() -> Self {
        SoftwareMaker {
            person_name: PRODUCT_NAME.into(),
            company_name: PRODUCT_NAME.into(),
            software_name: PRODUCT_NAME.into(),
        }
    }
}

impl std::fmt::Debug for Software {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Software")
            .field("id", &self.id)
            .field("pin", &"[REDACTED]")
            .field("provider_nit", &self.provider_nit)
            .field("provider_check_digit", &self.provider_check_digit)
            .finish()
    }
}

/// Numbering resolution (or, for notes, the company's own numbering range).
/// `Debug` leaves the technical key out.
#[derive(Clone, PartialEq, Eq)]
pub struct Resolution {
    /// Authority resolution number (digits).
    pub number: String,
    pub prefix: String,
    pub from: u64,
    pub to: u64,
    pub valid_from: NaiveDate,
    pub valid_to: NaiveDate,
    /// Technical key (ClTec), used by CUFE kinds.
    pub technical_key: String,
}

impl std::fmt::Debug for Resolution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolution")
            .field("number", &self.number)
            .field("prefix", &self.prefix)
            .field("from", &self.from)
            .field("to", &self.to)
            .field("valid_from", &self.valid_from)
            .field("valid_to", &self.valid_to)
            .field("technical_key", &"[REDACTED]")
            .finish()
    }
}

/// Environment (`cbc:ProfileExecutionID`): 1 production, 2 testing.
pub const ENVIRONMENT_PRODUCTION: u8 = 1;
pub const ENVIRONMENT_TESTING: u8 = 2;

/// Everything about the issuer and this issuance that is not in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerContext {
    /// Shared: the same for every document of a company.
    pub company: std::sync::Arc<Party>,
    pub software: Software,
    pub resolution: Resolution,
    /// 1 production, 2 testing.
    pub environment: u8,
    /// The number allocated to this document inside the resolution range.
    pub number: u64,
    /// Issue (and signing) instant, Colombian time -05:00.
    pub issue_instant: DateTime<FixedOffset>,
    /// Consecutive of files sent this year (file names, protocol.md §5.1);
    /// the document number when absent.
    pub file_consecutive: Option<u32>,
}

impl IssuerContext {
    /// `cbc:ID`: prefix + number.
    pub fn document_number(&self) -> String {
        format!("{}{}", self.resolution.prefix, self.number)
    }

    /// The issue instant in Colombian time (-05:00, no daylight saving),
    /// whatever offset it was given in.
    pub fn colombia_instant(&self) -> DateTime<FixedOffset> {
        self.issue_instant.with_timezone(&colombia_offset())
    }

    /// `cbc:IssueDate` text (Colombian date).
    pub fn issue_date(&self) -> super::date_text::DateText {
        super::date_text::date(self.colombia_instant().date_naive())
    }

    /// `cbc:IssueTime` text, `HH:MM:SS-05:00`.
    pub fn issue_time(&self) -> super::date_text::DateText {
        super::date_text::time(&self.colombia_instant())
    }

    /// The Colombian calendar date of issue.
    pub fn issue_naive_date(&self) -> NaiveDate {
        self.colombia_instant().date_naive()
    }
}

/// Colombia's fixed offset, -05:00.
pub fn colombia_offset() -> FixedOffset {
    // 5 h is always a valid offset; the fallback is never taken.
    FixedOffset::west_opt(5 * 3600).unwrap_or_else(|| chrono::Utc.fix())
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn debug_leaves_out_the_pin_and_the_technical_key() {
        let ctx = crate::engine::ubl::tests::context(DocumentKind::Invoice);
        let shown = format!("{ctx:?}");
        assert!(!shown.contains(&ctx.software.pin), "{shown}");
        assert!(!shown.contains(&ctx.resolution.technical_key), "{shown}");
        assert!(shown.contains(&ctx.software.id), "{shown}");
        assert!(shown.contains(&ctx.resolution.prefix), "{shown}");
    }
}
