//! What the circulation events carry besides their parties (decisions.md
//! "Registry terms", "Events"): each event's sub-type (`cbc:CustomizationID`),
//! the registration's `ConstanciadePagos` and the endorsements'
//! `InformacionNegociacion` (the `CustomTagGeneral` extension the
//! authority reads by `Name`/`Value` pairs), and the payment terms of the
//! invoice they are about.

use chrono::NaiveDate;
use roxmltree::{Document, Node, ParsingOptions};
use rust_decimal::{Decimal, RoundingStrategy};

use super::order::RegistrationStage;
use super::EventKind;

/// `cbc:CustomizationID` of the receipt events (030-034): the one the
/// authority accepts of them today (audit 2026-11-28, "Checked and found
/// correct").
pub const RECEIPT_CUSTOMIZATION: &str = "1";

/// The payment means of a cash invoice (`cac:PaymentMeans/cbc:ID`).
pub const CASH_PAYMENT_MEANS: &str = "1";

/// The payment means code written when a caller names none: a bank
/// transfer ("Consignación bancaria", the authority's list).
pub const DEFAULT_PAYMENT_MEANS: &str = "42";

/// How a title is offered when registered (`tipo_inscripcion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RegistrationMode {
    /// General negotiation (361, 363).
    #[default]
    General,
    /// Prior direct negotiation (362, 364).
    Direct,
}

impl RegistrationMode {
    /// `general` or `directa`.
    pub fn from_api(value: &str) -> Option<RegistrationMode> {
        match value.trim() {
            "general" => Some(RegistrationMode::General),
            "directa" => Some(RegistrationMode::Direct),
            _ => None,
        }
    }
}

/// The sub-type of one event, as `EnumHelper.cs` lists them
/// (`EventCustomization` 361-364, `SubEventStatus` 371/372). The list has
/// none for the endorsements in guarantee and procuration: they carry
/// their event code, as the annex does for every event with one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubType {
    Receipt,
    Registration {
        stage: RegistrationStage,
        mode: RegistrationMode,
    },
    Property {
        with_liability: bool,
    },
    Guarantee,
    Procuration,
}

impl SubType {
    /// The sub-type of `kind` with the caller's choices.
    pub fn of(
        kind: EventKind,
        stage: RegistrationStage,
        mode: RegistrationMode,
        with_liability: bool,
    ) -> SubType {
        match kind {
            EventKind::Registration => SubType::Registration { stage, mode },
            EventKind::EndorsementProperty => SubType::Property { with_liability },
            EventKind::EndorsementGuarantee => SubType::Guarantee,
            EventKind::EndorsementProcuration => SubType::Procuration,
            _ => SubType::Receipt,
        }
    }

    /// `cbc:CustomizationID`.
    pub fn customization_id(self) -> &'static str {
        use RegistrationMode::*;
        use RegistrationStage::*;
        match self {
            SubType::Receipt => RECEIPT_CUSTOMIZATION,
            SubType::Registration { stage, mode } => match (stage, mode) {
                (First, General) => "361",
                (First, Direct) => "362",
                (Subsequent, General) => "363",
                (Subsequent, Direct) => "364",
            },
            SubType::Property {
                with_liability: true,
            } => "371",
            SubType::Property {
                with_liability: false,
            } => "372",
            SubType::Guarantee => EventKind::EndorsementGuarantee.authority_code(),
            SubType::Procuration => EventKind::EndorsementProcuration.authority_code(),
        }
    }
}

/// A `CustomTagGeneral` group: its name and `Name`/`Value` pairs in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomTag {
    pub group: &'static str,
    pub pairs: Vec<(&'static str, String)>,
}

/// An amount as the extension writes it: at least two decimals, never
/// rounded (the authority compares the products exactly, rule AAI07b).
pub fn amount_text(value: Decimal) -> String {
    let v = value.normalize();
    if v.scale() < 2 {
        let mut r = v;
        r.rescale(2);
        r.to_string()
    } else {
        v.to_string()
    }
}

/// The registration's `ConstanciadePagos` (rule LGC57): the title's
/// original value (`ValorFEV-TV`, the invoice's payable amount), nothing
/// paid yet and its current value, as public implementations write it.
pub fn payment_record(invoice_total: Decimal) -> CustomTag {
    let total = amount_text(invoice_total);
    CustomTag {
        group: "ConstanciadePagos",
        pairs: vec![
            ("ValorFEV-TV", total.clone()),
            ("ValorPagado", amount_text(Decimal::ZERO)),
            ("NuevoValorTV", total),
        ],
    }
}

/// `condiciones_financieras` as a caller gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NegotiationInput {
    pub nominal_value: Option<Decimal>,
    pub advance_percent: Option<Decimal>,
    pub disbursed: Option<Decimal>,
    pub payment_means: Option<String>,
}

/// An endorsement's `InformacionNegociacion` values (rules AAI05, AAI07a,
/// AAI09, AAI07b): `price` = `total` × (100 − `discount_rate`) / 100
/// exactly, with a rate of two decimals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiation {
    pub total: Decimal,
    pub price: Decimal,
    pub discount_rate: Decimal,
    pub payment_means: String,
}

impl Negotiation {
    /// The extension of an endorsement in property: the four values.
    pub fn property_tag(&self) -> CustomTag {
        CustomTag {
            group: "InformacionNegociacion",
            pairs: vec![
                ("ValorTotalEndoso", amount_text(self.total)),
                ("PrecioPagarseFEV", amount_text(self.price)),
                ("TasaDescuento", amount_text(self.discount_rate)),
                ("MedioPago", self.payment_means.clone()),
            ],
        }
    }

    /// The extension of an endorsement in guarantee or procuration: the
    /// value endorsed.
    pub fn value_tag(&self) -> CustomTag {
        CustomTag {
            group: "InformacionNegociacion",
            pairs: vec![("ValorTotalEndoso", amount_text(self.total))],
        }
    }
}

/// A value of `condiciones_financieras` that does not fit the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermsProblem {
    /// The field under `condiciones_financieras`.
    pub field: &'static str,
    pub message: String,
}

fn problem(field: &'static str, message: String) -> TermsProblem {
    TermsProblem { field, message }
}

const HUNDRED: Decimal = Decimal::ONE_HUNDRED;

/// The negotiation values of `input` for an invoice of `invoice_total`
/// (decisions.md "Registry terms"): ValorTotalEndoso = `valor_nominal_factura`
/// (default the invoice's payable amount); PrecioPagarseFEV =
/// `valor_desembolsado` (default ValorTotalEndoso × `porcentaje_anticipo` /
/// 100, the percentage 100 by default); TasaDescuento = 100 × (1 −
/// PrecioPagarseFEV / ValorTotalEndoso) to two decimals; MedioPago =
/// `medio_pago` (default 42). Values that contradict each other, or that
/// no two-decimal rate reproduces exactly, are refused naming them.
pub fn negotiation(
    invoice_total: Decimal,
    input: &NegotiationInput,
) -> Result<Negotiation, Vec<TermsProblem>> {
    let mut problems = Vec::new();
    let total = input.nominal_value.unwrap_or(invoice_total);
    if total <= Decimal::ZERO || total > invoice_total {
        problems.push(problem(
            "valor_nominal_factura",
            format!(
                "must be more than 0 and at most the invoice's payable amount ({})",
                amount_text(invoice_total)
            ),
        ));
    }
    let percent = input.advance_percent.unwrap_or(HUNDRED);
    if percent <= Decimal::ZERO || percent > HUNDRED {
        problems.push(problem(
            "porcentaje_anticipo",
            "must be more than 0 and at most 100".into(),
        ));
    }
    let means = input
        .payment_means
        .as_deref()
        .map(str::trim)
        .unwrap_or(DEFAULT_PAYMENT_MEANS)
        .to_string();
    if means.is_empty() || means.len() > 3 || !means.bytes().all(|b| b.is_ascii_alphanumeric()) {
        problems.push(problem(
            "medio_pago",
            "must be a payment means code of the authority's list (1 to 3 letters or digits, e.g. 42)"
                .into(),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let from_percent = total * percent / HUNDRED;
    let price = match input.disbursed {
        Some(given) => {
            if input.advance_percent.is_some()
                && given
                    != from_percent
                        .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
            {
                return Err(vec![problem(
                    "valor_desembolsado",
                    format!(
                        "contradicts porcentaje_anticipo: valor_nominal_factura × porcentaje_anticipo / 100 = {}",
                        amount_text(from_percent)
                    ),
                )]);
            }
            given
        }
        None => from_percent,
    };
    if price <= Decimal::ZERO || price > total {
        return Err(vec![problem(
            "valor_desembolsado",
            format!(
                "must be more than 0 and at most valor_nominal_factura ({})",
                amount_text(total)
            ),
        )]);
    }
    let rate = (HUNDRED - price * HUNDRED / total)
        .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
    let reproduced = total * (HUNDRED - rate) / HUNDRED;
    if reproduced != price {
        let field = if input.disbursed.is_some() {
            "valor_desembolsado"
        } else {
            "porcentaje_anticipo"
        };
        return Err(vec![problem(
            field,
            format!(
                "no discount rate of two decimals gives it from valor_nominal_factura {}: the authority requires PrecioPagarseFEV = ValorTotalEndoso × (100 − TasaDescuento) / 100 exactly; with TasaDescuento {} that is {}",
                amount_text(total),
                amount_text(rate),
                amount_text(reproduced)
            ),
        )]);
    }
    Ok(Negotiation {
        total,
        price,
        discount_rate: rate.normalize(),
        payment_means: means,
    })
}

/// What the events need of the invoice they are about, read from its XML.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvoiceTerms {
    /// `cac:PaymentMeans/cbc:ID` (1 cash, 2 credit).
    pub payment_means: Option<String>,
    /// `cac:PaymentMeans/cbc:PaymentDueDate`.
    pub payment_due_date: Option<NaiveDate>,
    /// `cac:LegalMonetaryTotal/cbc:PayableAmount`.
    pub payable: Option<Decimal>,
    /// The buyer's `PartyTaxScheme` identification and name.
    pub buyer_id: String,
    pub buyer_name: String,
    /// The seller's identification.
    pub seller_id: String,
}

impl InvoiceTerms {
    pub fn is_cash(&self) -> bool {
        self.payment_means.as_deref() == Some(CASH_PAYMENT_MEANS)
    }
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn path<'a, 'i>(n: Node<'a, 'i>, steps: &[&str]) -> Option<Node<'a, 'i>> {
    steps.iter().try_fold(n, |cur, s| child(cur, s))
}

fn text(n: Option<Node<'_, '_>>) -> Option<String> {
    let t = n?.text()?.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Reads an invoice's terms; `None` when the XML is not well formed.
pub fn invoice_terms(xml: &str) -> Option<InvoiceTerms> {
    let opts = ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(xml.trim_start_matches('\u{feff}'), opts).ok()?;
    let root = doc.root_element();
    let party = |role: &str, leaf: &str| {
        text(path(root, &[role, "Party", "PartyTaxScheme", leaf])).unwrap_or_default()
    };
    Some(InvoiceTerms {
        payment_means: text(path(root, &["PaymentMeans", "ID"])),
        payment_due_date: text(path(root, &["PaymentMeans", "PaymentDueDate"]))
            .and_then(|d| NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()),
        payable: text(path(root, &["LegalMonetaryTotal", "PayableAmount"]))
            .and_then(|v| v.parse().ok()),
        buyer_id: party("AccountingCustomerParty", "CompanyID"),
        buyer_name: party("AccountingCustomerParty", "RegistrationName"),
        seller_id: party("AccountingSupplierParty", "CompanyID"),
    })
}

/// The sworn statement of a tacit acceptance (034), in its `cbc:Note`: the
/// legal basis of the event (Decreto 1154 de 2020), as peers send it.
pub fn tacit_acceptance_statement(buyer_name: &str, buyer_id: &str) -> String {
    format!(
        "Manifiesto bajo la gravedad de juramento que transcurridos 3 días hábiles contados desde la creación del Recibo de bienes y servicios, el adquirente {buyer_name} identificado con NIT {buyer_id} no manifestó expresamente la aceptación o rechazo de la referida factura, ni reclamó en contra de su contenido."
    )
}
