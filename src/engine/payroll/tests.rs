//! Payroll engine tests: each kind built, validated by `xmllint` against
//! the authority's 1.0.6 schemas, signed and verified by `xmlsec1`, and its
//! CUNE recomputed from the XML by the simulator's reading of it.

use std::process::Command;
use std::sync::OnceLock;

use chrono::{DateTime, NaiveDate};
use rust_decimal_macros::dec;

use super::model::*;
use super::*;
use crate::engine::model::{DocumentKind, IssuerContext};
use crate::engine::signing_key::SigningKey;
use crate::engine::ubl::tests::{have_xmllint, schemas_dir};

fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(crate::fixtures::company_key)
}

fn date(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

pub(crate) fn context() -> IssuerContext {
    let at = DateTime::parse_from_rfc3339("2025-03-31T18:20:30-05:00").unwrap();
    let mut ctx = crate::fixtures::context(DocumentKind::Invoice, at);
    ctx.resolution.prefix = "NOM".into();
    ctx.resolution.from = 1;
    ctx.number = 12;
    ctx
}

/// A month of salary, transport aid and overtime; health and pension.
pub(crate) fn sample(kind: PayrollKind) -> PayrollDocument {
    let earning = |kind, amount, quantity| Earning {
        kind,
        description: None,
        amount,
        quantity,
        percent: None,
    };
    let deduction = |kind, amount| Deduction {
        kind,
        description: None,
        percent: Some(dec!(4)),
        base: Some(dec!(1300000)),
        amount,
    };
    PayrollDocument {
        kind,
        employee: Employee {
            id_type: "13".into(),
            id_number: "1020304050".into(),
            first_name: "Ana".into(),
            other_names: Some("María".into()),
            first_surname: "Gómez & <Hijos>".into(),
            second_surname: Some("Ñandú".into()),
            worker_type: "01".into(),
            worker_subtype: "00".into(),
            contract_type: "2".into(),
            code: Some("E-7".into()),
            ..Employee::default()
        },
        period: Period {
            hired: Some(date("2024-02-01")),
            retired: None,
            settlement_start: date("2025-03-01"),
            settlement_end: date("2025-03-31"),
            days_worked: 30,
        },
        earnings: vec![
            earning(EarningKind::Basic, dec!(1300000), Some(dec!(30))),
            earning(EarningKind::Transport, dec!(162000), None),
            earning(EarningKind::OvertimeDay, dec!(54166.666), Some(dec!(8))),
        ],
        deductions: vec![
            deduction(DeductionKind::Health, dec!(52000)),
            deduction(DeductionKind::Pension, dec!(52000)),
        ],
        declared: DeclaredTotals::default(),
        notes: vec!["Nómina de marzo".into()],
        novelty: None,
        generation_date: None,
        generation_time: None,
        payroll_period: "1".into(),
        currency: "COP".into(),
        exchange_rate: None,
        place: Place::default(),
        employer: EmployerOverride::default(),
        payment: Payment::default(),
        payment_dates: vec![date("2025-03-31")],
        rounding: None,
        predecessor: kind.is_adjustment().then(|| Predecessor {
            number: "NOM11".into(),
            cune: "a".repeat(96),
            generated: date("2025-03-30"),
        }),
    }
}

fn schema_of(kind: PayrollKind) -> std::path::PathBuf {
    let file = if kind == PayrollKind::Individual {
        "NominaIndividualElectronicaXSDV1.0.6.xsd"
    } else {
        "NominaIndividualDeAjusteElectronicaXSDV1.0.6.xsd"
    };
    schemas_dir().join("maindoc").join(file)
}

/// `xmllint --schema` errors, ignoring the README's X.509 serial quirk.
pub(crate) fn xmllint_payroll(kind: PayrollKind, xml: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nomina.xml");
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema_of(kind))
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.ends_with(" validates") && !l.ends_with(" fails to validate"))
        .filter(|l| !l.contains("X509SerialNumber"))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn xmlsec1_verifies(xml: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let file = dir.path().join("signed.xml");
    std::fs::write(&cert, key().certificate_pem().unwrap()).unwrap();
    std::fs::write(&file, xml).unwrap();
    Command::new("xmlsec1")
        .args(["--verify", "--pubkey-cert-pem"])
        .arg(&cert)
        .args(["--enabled-reference-uris", "empty,same-doc"])
        .arg(&file)
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn every_kind_is_valid_signed_and_its_cune_recomputes() {
    use crate::authority::simulator::checks::{DocumentChecks, EngineChecks};
    use crate::authority::simulator::document::DocumentFacts;
    let ctx = context();
    for kind in [
        PayrollKind::Individual,
        PayrollKind::Replace,
        PayrollKind::Delete,
    ] {
        let mut doc = sample(kind);
        if kind == PayrollKind::Individual {
            doc.novelty = Some("b".repeat(96));
        }
        let issued = issue(&doc, &ctx, key()).unwrap();
        assert_eq!(issued.number, "NOM12");
        let facts = DocumentFacts::read(&issued.xml).unwrap();
        assert_eq!(facts.code, issued.code, "{kind:?}");
        let recomputed = EngineChecks
            .recompute_code(&issued.xml, &facts, &ctx.software.pin)
            .unwrap();
        assert_eq!(recomputed, issued.code, "{kind:?}");
        EngineChecks.verify_signature(&issued.xml).unwrap();
        if kind == PayrollKind::Delete {
            assert!(issued.xml.contains("<Eliminar>"));
            assert!(!issued.xml.contains("<Trabajador"));
            assert_eq!(issued.totals.payable, rust_decimal::Decimal::ZERO);
        } else {
            assert!(issued
                .xml
                .contains("<DevengadosTotal>1516166.67</DevengadosTotal>"));
            assert!(issued
                .xml
                .contains("<ComprobanteTotal>1412166.67</ComprobanteTotal>"));
        }
        if have_xmllint() {
            xmllint_payroll(kind, &issued.xml).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            // The check is live: an element the schema does not know fails.
            let broken = issued
                .xml
                .replacen("<CodigoQR>", "<CodigoQRx></CodigoQRx><CodigoQR>", 1);
            assert!(xmllint_payroll(kind, &broken).is_err(), "{kind:?}");
        }
        if crate::testing::tool("xmlsec1") {
            assert!(xmlsec1_verifies(&issued.xml), "{kind:?}");
            let tampered = issued.xml.replacen("1020304050", "1020304051", 1);
            if kind != PayrollKind::Delete {
                assert!(!xmlsec1_verifies(&tampered));
            }
        }
    }
}

#[test]
fn cune_follows_the_formula_with_tipo_xml() {
    let ctx = context();
    let doc = sample(PayrollKind::Individual);
    let t = totals::totals(&doc);
    let got = cune(&doc, &ctx, &t, "2025-03-31", "18:20:30-05:00");
    let input = format!(
        "NOM122025-03-3118:20:30-05:001516166.67104000.001412166.67{}1020304050102{}2",
        ctx.company.id_number, ctx.software.pin
    );
    assert_eq!(got, codes::sha384_hex(&input));
}

#[test]
fn file_names_follow_the_payroll_annex() {
    let (xml, zip) = file_names(PayrollKind::Individual, "800197268", 2020, 12);
    assert_eq!(xml, "nie0800197268200000000c.xml");
    assert_eq!(zip, "z0800197268200000000c.zip");
    let (xml, _) = file_names(PayrollKind::Replace, "800197268", 2020, 12);
    assert!(xml.starts_with("niae0800197268"));
}

/// `PeriodoNomina` is the periodicity of the pay period (annex table
/// 5.5.1), read from the settlement dates.
#[test]
fn the_payroll_period_code_is_the_periodicity_of_the_settlement_dates() {
    let period = |from: &str, to: &str| Period {
        hired: None,
        retired: None,
        settlement_start: date(from),
        settlement_end: date(to),
        days_worked: 30,
    };
    for (from, to, code) in [
        ("2025-03-01", "2025-03-31", "5"),
        ("2024-02-01", "2024-02-29", "5"),
        ("2025-03-01", "2025-03-15", "4"),
        ("2025-03-16", "2025-03-31", "4"),
        ("2025-02-16", "2025-02-28", "4"),
        ("2025-03-01", "2025-03-10", "2"),
        ("2025-03-11", "2025-03-20", "2"),
        ("2025-03-21", "2025-03-31", "2"),
        ("2025-03-03", "2025-03-09", "1"),
        ("2025-03-03", "2025-03-16", "3"),
        ("2025-03-05", "2025-04-04", "5"),
        ("2025-03-05", "2025-03-19", "4"),
        ("2025-03-05", "2025-03-07", "6"),
        ("2025-01-01", "2025-03-31", "6"),
    ] {
        assert_eq!(period(from, to).periodicity(), code, "{from} to {to}");
    }
    // Written as such, whatever the spec's `periodo_nomina` (regular or
    // extraordinary) says.
    let mut doc = sample(PayrollKind::Individual);
    doc.payroll_period = "2".into();
    doc.period = period("2025-03-16", "2025-03-31");
    let issued = issue(&doc, &context(), key()).unwrap();
    assert!(issued.xml.contains("PeriodoNomina=\"4\""), "{}", issued.xml);
}
