//! The testing environment (`cbc:ProfileExecutionID` 2) as the authority
//! validates it: every test document is checked against the authority's
//! test sets, whatever the issuer registered (protocol.md 7.5c).
//!
//! * Types 01, 02 and 04 carry a CUFE computed with the fixed test
//!   technical key (`ValidateCufe` reads `TestHabTechnicalKey` for every
//!   code that is not a CUDE; rule FAD06 otherwise).
//! * Their `sts:InvoiceControl` names the test set and their number falls
//!   in it (`ValidateNumberingRange`): invoices 01, 02, 04 SETP, support
//!   documents 05 SEDS, POS receipts 20 EPOS. Each field compared is a rule
//!   of its own, and the authority answers every one that fails.

use roxmltree::{Document, Node};

use super::document::{child, text, DocumentFacts, Family};

/// The authority's habilitación technical key (protocol.md §1.1).
pub const TEST_TECHNICAL_KEY: &str = "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c";

/// One test-set range as the authority publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestSet {
    pub resolution_number: &'static str,
    pub prefix: &'static str,
    pub from: u64,
    pub to: u64,
    pub valid_from: &'static str,
    pub valid_to: &'static str,
}

/// Invoices 01, 02 and 04 (protocol.md §1.1: resolution 18760000001,
/// SETP 990000000–995000000, 2019-01-19 to 2030-01-19).
pub const INVOICES: TestSet = TestSet {
    resolution_number: "18760000001",
    prefix: "SETP",
    from: 990_000_000,
    to: 995_000_000,
    valid_from: "2019-01-19",
    valid_to: "2030-01-19",
};

/// Support documents 05 (SEDS 984000000–985000000; protocol.md 7.5c,
/// medium confidence). Public request collections disagree on the
/// resolution number and validity of the SEDS and EPOS sets; the invoices'
/// are used for both, and our numbering (`emisor_store::test_set`) writes
/// the same.
pub const SUPPORT_DOCUMENTS: TestSet = TestSet {
    prefix: "SEDS",
    from: 984_000_000,
    to: 985_000_000,
    ..INVOICES
};

/// POS receipts 20 (EPOS 1–1000000; protocol.md 7.5c, medium confidence).
pub const POS: TestSet = TestSet {
    prefix: "EPOS",
    from: 1,
    to: 1_000_000,
    ..INVOICES
};

/// Whether an invoice-rooted document (the only ones a test set numbers or
/// codes) is one of the testing environment. Other families are not read.
pub fn is_testing(xml: &str, facts: &DocumentFacts) -> bool {
    facts.family == Family::Invoice
        && Document::parse(xml).is_ok_and(|doc| {
            text(child(doc.root_element(), "ProfileExecutionID")).as_deref() == Some("2")
        })
}

/// The test set a document of the testing environment is numbered from;
/// `None` for the documents that keep their issuer's ranges there (notes,
/// T03) and for every document of production.
pub fn serving(testing: bool, facts: &DocumentFacts) -> Option<&'static TestSet> {
    if !testing || facts.family != Family::Invoice {
        return None;
    }
    match facts.type_code.as_str() {
        "01" | "02" | "04" => Some(&INVOICES),
        "05" => Some(&SUPPORT_DOCUMENTS),
        "20" => Some(&POS),
        _ => None,
    }
}

/// The rule codes of one numbering check: support documents have rules of
/// their own; every other type is checked with the invoice's (the
/// validator's `ValidateNumberingRange` picks the DS codes for document
/// type 05 only, so POS receipts answer FAB rules there too).
struct Rules {
    authorization: (&'static str, &'static str),
    start: (&'static str, &'static str),
    end: (&'static str, &'static str),
    prefix: (&'static str, &'static str),
    from: (&'static str, &'static str),
    to: (&'static str, &'static str),
    number: (&'static str, &'static str),
}

const INVOICE_RULES: Rules = Rules {
    authorization: ("FAB05b", "Número de la resolución que autoriza la numeración no corresponde a un número de resolución de este contribuyente emisor para este Proveedor de Autorización."),
    start: ("FAB07b", "Fecha inicial del rango de numeración informado no corresponde a la fecha inicial de los rangos vigente para el contribuyente."),
    end: ("FAB08b", "Fecha final del rango de numeración informado no corresponde a la fecha final de los rangos vigente para el contribuyente."),
    prefix: ("FAB10b", "El prefijo no corresponde al prefijo de la autorización de numeración"),
    from: ("FAB11b", "Valor inicial del rango de numeración informado no corresponde a un valor inicial de los rangos vigente para el contribuyente emisor."),
    to: ("FAB12b", "Valor final del rango de numeración informado no corresponde a un valor final de los rangos vigentes para el contribuyente emisor."),
    number: ("FAD05d", "Número de factura no se encuentra dentro del rango autorizado."),
};

/// Support documents: the authorization that is not the test set's is not
/// found at all (DSAB05a).
const SUPPORT_RULES: Rules = Rules {
    authorization: ("DSAB05a", "No se encuentra el número de autorización del rango de numeración otorgado."),
    start: ("DSAB07b", "Fecha inicial del rango de numeración informado NO corresponde a la fecha inicial del rango vigente para el ABS."),
    end: ("DSAB08b", "Fecha final del rango de numeración informado no corresponde a la fecha final del rango vigente para el ABS"),
    prefix: ("DSAB10b", "El prefijo no corresponde al prefijo de la autorización de numeración"),
    from: ("DSAB11b", "Valor inicial del rango de numeración informado no corresponde a la autorización vigente para el ABS"),
    to: ("DSAB12b", "Valor final del rango de numeración informado no corresponde a la autorización vigente para el ABS."),
    number: ("DSAD05d", "Número de documento soporte en adquisiciones efectuadas a sujetos no obligados a expedir factura o documento equivalente no está contenido en el rango de numeración autorizado."),
};

fn rule((code, reason): (&str, &str)) -> String {
    format!("Regla: {code}, Rechazo: {reason}")
}

fn element<'a, 'i>(n: Option<Node<'a, 'i>>, name: &str) -> Option<Node<'a, 'i>> {
    n.and_then(|n| child(n, name))
}

/// The `sts:InvoiceControl` of a document (in its first extension).
fn invoice_control<'a, 'i>(root: Node<'a, 'i>) -> Option<Node<'a, 'i>> {
    root.descendants()
        .find(|n| n.is_element() && n.tag_name().name() == "InvoiceControl")
}

impl TestSet {
    /// Every numbering rule the document fails against this test set.
    pub fn numbering_errors(&self, xml: &str, facts: &DocumentFacts) -> Vec<String> {
        let rules = if facts.type_code == "05" {
            &SUPPORT_RULES
        } else {
            &INVOICE_RULES
        };
        let Ok(doc) = Document::parse(xml) else {
            return vec![rule(rules.authorization)];
        };
        let control = invoice_control(doc.root_element());
        let period = element(control, "AuthorizationPeriod");
        let invoices = element(control, "AuthorizedInvoices");
        let value = |n: Option<Node<'_, '_>>| text(n).unwrap_or_default();
        let number = |n: Option<Node<'_, '_>>| value(n).parse::<u64>().ok();
        let mut errors = Vec::new();
        let mut check = |ok: bool, r: (&'static str, &'static str)| {
            if !ok {
                errors.push(rule(r));
            }
        };
        check(
            value(element(control, "InvoiceAuthorization")) == self.resolution_number,
            rules.authorization,
        );
        check(
            value(element(period, "StartDate")) == self.valid_from,
            rules.start,
        );
        check(
            value(element(period, "EndDate")) == self.valid_to,
            rules.end,
        );
        check(
            value(element(invoices, "Prefix")) == self.prefix,
            rules.prefix,
        );
        check(
            number(element(invoices, "From")) == Some(self.from),
            rules.from,
        );
        check(number(element(invoices, "To")) == Some(self.to), rules.to);
        check(self.holds(&facts.number), rules.number);
        errors
    }

    /// Whether a full number (`SETP990000001`) is inside the test set.
    pub fn holds(&self, full_number: &str) -> bool {
        full_number
            .strip_prefix(self.prefix)
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| (self.from..=self.to).contains(&n))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use chrono::{DateTime, FixedOffset, Utc};

    use super::super::checks::EngineChecks;
    use super::super::contingency::ContingencyPeriods;
    use super::super::intake::Intake;
    use super::super::package::XmlEntry;
    use super::super::state::{IssuerRecord, SimRegistry, SimState, SoftwareRecord};
    use super::*;
    use crate::authority::operation::Operation;
    use crate::authority::NumberRange;
    use crate::engine::model::{
        colombia_offset, DocumentKind, IssuerContext, ENVIRONMENT_PRODUCTION,
    };
    use crate::engine::ubl::{build_document, tests::sample};
    use crate::engine::{pipeline, validate, xades};
    use crate::fixtures;

    /// The technical key of the issuer's own invoice range (production).
    pub const OWN_KEY: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567";

    fn own_range(prefix: &str, key: Option<&str>) -> NumberRange {
        NumberRange {
            resolution_number: "18764000001".into(),
            resolution_date: "2024-01-01".into(),
            prefix: prefix.into(),
            from_number: 1,
            to_number: 1000,
            valid_date_from: "2024-01-01".into(),
            valid_date_to: "2030-12-31".into(),
            technical_key: key.map(str::to_string),
        }
    }

    /// The sample company as the authority knows it: its software and its
    /// own ranges (FE invoices, CONT paper contingency), no test set.
    pub fn registry() -> SimRegistry {
        let ctx = context(DocumentKind::Invoice);
        let registry = SimRegistry::new();
        registry.register(IssuerRecord {
            nit: fixtures::NIT.into(),
            software: vec![SoftwareRecord {
                id: ctx.software.id.clone(),
                pin: ctx.software.pin.clone(),
            }],
            ranges: vec![own_range("FE", Some(OWN_KEY)), own_range("CONT", None)],
            test_set_ids: Vec::new(),
            ..IssuerRecord::default()
        });
        registry
    }

    pub fn now() -> DateTime<FixedOffset> {
        Utc::now().with_timezone(&colombia_offset())
    }

    /// The sample company's testing context for `kind`, numbered from the
    /// test set the authority expects for it (T03 from the own CONT range).
    pub fn context(kind: DocumentKind) -> IssuerContext {
        let mut ctx = fixtures::context(kind, now());
        let r = &mut ctx.resolution;
        match kind {
            DocumentKind::SupportDocument => {
                (r.prefix, r.from, r.to) = ("SEDS".into(), 984_000_000, 985_000_000);
                ctx.number = 984_000_001;
            }
            DocumentKind::Pos => {
                (r.prefix, r.from, r.to) = ("EPOS".into(), 1, 1_000_000);
                ctx.number = 1;
            }
            DocumentKind::ContingencyT03 => {
                r.number = "18764000001".into();
                (r.prefix, r.from, r.to) = ("CONT".into(), 1, 1000);
                ctx.number = 1;
            }
            _ => {}
        }
        ctx
    }

    /// The production context of an invoice numbered from the own FE range.
    pub fn production(kind: DocumentKind) -> IssuerContext {
        let mut ctx = context(kind);
        ctx.environment = ENVIRONMENT_PRODUCTION;
        let r = &mut ctx.resolution;
        r.number = "18764000001".into();
        (r.prefix, r.from, r.to) = ("FE".into(), 1, 1000);
        r.valid_from = chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap();
        r.valid_to = chrono::NaiveDate::from_ymd_opt(2030, 12, 31).unwrap();
        r.technical_key = OWN_KEY.into();
        ctx.number = 1;
        ctx
    }

    /// The sample document of `kind` built for `ctx` (its code computed as
    /// the engine does), `edit`ed before it is signed.
    pub fn signed(
        kind: DocumentKind,
        ctx: &IssuerContext,
        edit: impl Fn(String) -> String,
    ) -> String {
        let mut doc = sample(kind);
        for p in &mut doc.payments {
            p.due_date = p.due_date.map(|_| ctx.issue_naive_date());
        }
        let totals = validate::validate_and_total(&doc, ctx, None).expect("valid sample");
        let code = pipeline::document_code(&doc, ctx, &totals);
        let unsigned = build_document(&doc, ctx, &code, "", "").expect("built");
        xades::sign(
            &edit(unsigned),
            &fixtures::signing_key(),
            ctx.colombia_instant(),
        )
        .expect("signed")
    }

    /// The simulator's verdict on one document: its errors, none when
    /// accepted.
    pub fn verdict(registry: &SimRegistry, periods: &ContingencyPeriods, xml: &str) -> Vec<String> {
        let state = SimState::new();
        let intake = Intake {
            registry,
            state: &state,
            checks: &EngineChecks,
            op: Operation::SendBillSync,
            reject_all: false,
            now: Utc::now(),
            today: now().date_naive(),
            contingency: periods,
        };
        let answer = intake.receive_document(&XmlEntry {
            name: "fv.xml".into(),
            bytes: xml.as_bytes().to_vec(),
        });
        assert_eq!(
            answer.is_valid,
            answer.error_messages.is_empty(),
            "{answer:?}"
        );
        answer.error_messages
    }

    fn check(
        kind: DocumentKind,
        ctx: &IssuerContext,
        edit: impl Fn(String) -> String,
    ) -> Vec<String> {
        let periods = ContingencyPeriods::default();
        verdict(&registry(), &periods, &signed(kind, ctx, edit))
    }

    fn rules(errors: &[String]) -> Vec<&str> {
        errors
            .iter()
            .map(|e| {
                e.strip_prefix("Regla: ")
                    .and_then(|r| r.split(',').next())
                    .unwrap_or(e)
            })
            .collect()
    }

    fn same(x: String) -> String {
        x
    }

    #[test]
    fn test_documents_numbered_from_the_test_sets_are_accepted() {
        for kind in [
            DocumentKind::Invoice,
            DocumentKind::ExportInvoice,
            DocumentKind::ContingencyT04,
            DocumentKind::SupportDocument,
            DocumentKind::Pos,
            // No test set: the issuer's own range, in testing too.
            DocumentKind::ContingencyT03,
        ] {
            assert_eq!(
                check(kind, &context(kind), same),
                Vec::<String>::new(),
                "{kind:?}"
            );
        }
        // Production: the issuer's own range and technical key.
        let invoice = DocumentKind::Invoice;
        assert_eq!(
            check(invoice, &production(invoice), same),
            Vec::<String>::new()
        );
    }

    #[test]
    fn fad06_a_test_cufe_is_computed_with_the_test_technical_key() {
        for kind in [
            DocumentKind::Invoice,
            DocumentKind::ExportInvoice,
            DocumentKind::ContingencyT04,
        ] {
            // Numbered from the test set, coded with the issuer's own key.
            let mut ctx = context(kind);
            ctx.resolution.technical_key = OWN_KEY.into();
            let errors = check(kind, &ctx, same);
            assert_eq!(
                errors,
                ["Regla: FAD06, Rechazo: Valor del CUFE no está calculado correctamente."],
                "{kind:?}"
            );
        }
        // The key the production document is coded with is right there.
        let own = production(DocumentKind::Invoice);
        let mut testing = own.clone();
        testing.environment = 2;
        assert!(check(DocumentKind::Invoice, &own, same).is_empty());
        assert_eq!(
            rules(&check(DocumentKind::Invoice, &testing, same)),
            ["FAD06"]
        );
    }

    /// `edit` replacing `from` (which must be in the document) by `to`.
    fn replacing(from: &'static str, to: &'static str) -> impl Fn(String) -> String {
        move |xml: String| {
            assert!(xml.contains(from), "{from} not in the document");
            xml.replacen(from, to, 1)
        }
    }

    #[test]
    fn each_numbering_field_of_the_test_set_is_a_rule_of_its_own() {
        let cases = [
            (
                "<sts:InvoiceAuthorization>18760000001<",
                "<sts:InvoiceAuthorization>18760000002<",
                "FAB05b",
                "DSAB05a",
            ),
            (
                "<cbc:StartDate>2019-01-19<",
                "<cbc:StartDate>2019-01-20<",
                "FAB07b",
                "DSAB07b",
            ),
            (
                "<cbc:EndDate>2030-01-19<",
                "<cbc:EndDate>2030-01-18<",
                "FAB08b",
                "DSAB08b",
            ),
            ("<sts:Prefix>", "<sts:Prefix>X", "FAB10b", "DSAB10b"),
            ("<sts:From>", "<sts:From>1", "FAB11b", "DSAB11b"),
            ("<sts:To>", "<sts:To>1", "FAB12b", "DSAB12b"),
        ];
        for (from, to, invoice_rule, support_rule) in cases {
            for kind in [
                DocumentKind::Invoice,
                DocumentKind::ExportInvoice,
                DocumentKind::ContingencyT04,
                DocumentKind::Pos,
            ] {
                let errors = check(kind, &context(kind), replacing(from, to));
                assert_eq!(rules(&errors), [invoice_rule], "{kind:?} {errors:?}");
            }
            let ds = DocumentKind::SupportDocument;
            let errors = check(ds, &context(ds), replacing(from, to));
            assert_eq!(rules(&errors), [support_rule], "{errors:?}");
        }
    }

    #[test]
    fn a_number_outside_the_test_set_is_fad05d_or_dsad05d() {
        for (kind, set, rule) in [
            (DocumentKind::Invoice, INVOICES, "FAD05d"),
            (DocumentKind::SupportDocument, SUPPORT_DOCUMENTS, "DSAD05d"),
            (DocumentKind::Pos, POS, "FAD05d"),
        ] {
            // The engine refuses a number outside its resolution: it is
            // built with a longer range, then the test set's is declared.
            let mut ctx = context(kind);
            let beyond = set.to + 1;
            ctx.resolution.to = beyond;
            ctx.number = beyond;
            let declared = move |xml: String| {
                xml.replacen(
                    &format!("<sts:To>{beyond}<"),
                    &format!("<sts:To>{}<", set.to),
                    1,
                )
            };
            let errors = check(kind, &ctx, declared);
            assert_eq!(rules(&errors), [rule], "{kind:?} {errors:?}");
        }
    }

    #[test]
    fn own_numbering_in_the_testing_environment_is_outside_the_test_set() {
        // An invoice numbered from the issuer's own resolution, coded with
        // the test key: the authority's test set is not what it names.
        let mut ctx = production(DocumentKind::Invoice);
        ctx.environment = 2;
        ctx.resolution.technical_key = TEST_TECHNICAL_KEY.into();
        let errors = check(DocumentKind::Invoice, &ctx, same);
        assert_eq!(
            rules(&errors),
            ["FAB05b", "FAB07b", "FAB08b", "FAB10b", "FAB11b", "FAB12b", "FAD05d"]
        );
        // A support document from its own DS range.
        let mut ctx = production(DocumentKind::SupportDocument);
        ctx.environment = 2;
        ctx.resolution.prefix = "DS".into();
        let errors = check(DocumentKind::SupportDocument, &ctx, same);
        assert_eq!(rules(&errors).first(), Some(&"DSAB05a"), "{errors:?}");
        assert!(rules(&errors).contains(&"DSAD05d"), "{errors:?}");
    }

    #[test]
    fn the_store_numbers_from_the_ranges_the_authority_checks() {
        // The two sides of one published fact: our numbering in the testing
        // environment and the simulator's check of it.
        for (t, set) in [
            (1, INVOICES),
            (6, INVOICES),
            (8, INVOICES),
            (4, SUPPORT_DOCUMENTS),
            (9, POS),
        ] {
            let ours = emisor_store::test_set::for_document_type(t)
                .unwrap()
                .resolution(1);
            assert_eq!(
                (
                    ours.prefix.as_str(),
                    ours.from,
                    ours.to,
                    ours.resolution_number.as_str()
                ),
                (set.prefix, set.from, set.to, set.resolution_number),
                "type {t}"
            );
            assert_eq!(ours.valid_from.to_string(), set.valid_from);
            assert_eq!(ours.valid_to.to_string(), set.valid_to);
        }
        assert_eq!(
            emisor_store::test_set::TEST_TECHNICAL_KEY,
            TEST_TECHNICAL_KEY
        );
    }
}
