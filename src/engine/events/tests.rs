//! Unit tests of the events' pure parts: vector V5, the XML against the
//! XSD and signed, the order rules, the calendar, the reading of uploads.

use chrono::{DateTime, NaiveDate};

use super::application_response::{build, EventInput, EventParty, EventSoftware};
use super::calendar::{
    add_business_days, easter, holidays, is_business_day, tacit_acceptance_from,
};
use super::order::{check, eligible_for_registration, OrderError};
use super::EventKind::{self, *};
use crate::engine::ubl::tests::{have_xmllint, xmllint_validate, xmllint_validate_unsigned};

const CUFE: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn party(nit: &str) -> EventParty {
    EventParty {
        name: format!("Empresa {nit}"),
        id_number: nit.into(),
        id_type: "31".into(),
        check_digit: Some(4),
        tax_level: "O-13".into(),
    }
}

fn v5_input<'a>(
    sender: &'a EventParty,
    receiver: &'a EventParty,
    notes: &'a [String],
) -> EventInput<'a> {
    EventInput {
        kind: Acknowledgement,
        number: "1",
        environment: 2,
        issued_at: DateTime::parse_from_rfc3339("2019-04-30T19:48:50-05:00").unwrap(),
        sender,
        receiver,
        invoice_number: "FE123",
        invoice_cufe: CUFE,
        software: EventSoftware {
            id: "software-1",
            pin: "11111",
            provider_nit: "900000001",
            provider_check_digit: 3,
        },
        claim_concept: None,
        notes,
    }
}

#[test]
fn the_cude_reproduces_vector_v5() {
    let (s, r) = (party("99998888"), party("800197268"));
    let built = build(&v5_input(&s, &r, &[])).unwrap();
    assert_eq!(
        built.cude,
        "0d91ba25b01f5e7dbda870a11b274501d3a62a73e91932c473c86c93f12a142a2ac45876efcde3e679024a01c0be41f9"
    );
    assert!(built.unsigned_xml.contains(&format!(
        "<cbc:UUID schemeID=\"2\" schemeName=\"CUDE-SHA384\">{}</cbc:UUID>",
        built.cude
    )));
}

#[test]
fn every_event_is_valid_ubl_and_signs() {
    let (s, r) = (party("900000001"), party("800197268"));
    let notes = vec!["Nota & <prueba>".to_string()];
    let key = crate::fixtures::signing_key();
    for kind in super::ALL {
        let mut input = v5_input(&s, &r, &notes);
        input.kind = kind;
        if kind == Claim {
            input.claim_concept = Some("02");
        }
        let built = build(&input).unwrap();
        assert!(built
            .unsigned_xml
            .contains(&format!(">{}</cbc:ResponseCode>", kind.authority_code())));
        let signed =
            crate::engine::xades::sign(&built.unsigned_xml, &key, input.issued_at).unwrap();
        let verified = crate::engine::xades::verify(&signed).unwrap();
        assert!(verified.policy_ok && verified.signing_certificate_ok);
        if have_xmllint() {
            xmllint_validate_unsigned(&built.unsigned_xml)
                .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            xmllint_validate(&signed).unwrap_or_else(|e| panic!("{kind:?} signed: {e}"));
        }
    }
}

#[test]
fn registry_codes_map_to_the_authority_list() {
    let pairs: Vec<(&str, &str)> = [
        Registration,
        EndorsementProperty,
        EndorsementGuarantee,
        EndorsementProcuration,
    ]
    .iter()
    .map(|k| (k.api_code(), k.authority_code()))
    .collect();
    assert_eq!(
        pairs,
        [
            ("035", "036"),
            ("036", "037"),
            ("037", "038"),
            ("038", "039")
        ]
    );
    assert_eq!(
        EventKind::registry_from_api("endoso_garantia"),
        Some(EndorsementGuarantee)
    );
    assert_eq!(EventKind::registry_from_api("030"), None);
    assert_eq!(
        EventKind::from_authority_code("037"),
        Some(EndorsementProperty)
    );
    assert_eq!(super::claim_concept("2").map(|c| c.0), Some("02"));
    assert!(super::claim_concept("05").is_none());
}

#[test]
fn the_receipt_events_follow_their_order() {
    assert!(check(&[], Acknowledgement).is_ok());
    assert_eq!(
        check(&[], GoodsReceipt),
        Err(OrderError::Missing {
            event: "032",
            missing: "030"
        })
    );
    assert_eq!(
        check(&[Acknowledgement], Acknowledgement),
        Err(OrderError::AlreadyRegistered("030"))
    );
    assert!(check(&[Acknowledgement], ExpressAcceptance).is_err());
    let received = [Acknowledgement, GoodsReceipt];
    for k in [Claim, ExpressAcceptance, TacitAcceptance] {
        assert!(check(&received, k).is_ok(), "{k:?}");
    }
    let accepted = [Acknowledgement, GoodsReceipt, ExpressAcceptance];
    assert_eq!(
        check(&accepted, ExpressAcceptance),
        Err(OrderError::AlreadyRegistered("033"))
    );
    assert_eq!(
        check(&accepted, Claim),
        Err(OrderError::Closed {
            event: "031",
            after: "033"
        })
    );
    assert!(eligible_for_registration(&accepted));
    assert!(!eligible_for_registration(&[
        Acknowledgement,
        GoodsReceipt,
        Claim
    ]));
    assert!(check(&accepted, EndorsementProperty).is_err());
    let titled = [Acknowledgement, GoodsReceipt, TacitAcceptance, Registration];
    assert!(check(&titled, Registration).is_err());
    assert!(check(&titled, EndorsementProperty).is_ok());
    let endorsed = [
        Acknowledgement,
        GoodsReceipt,
        TacitAcceptance,
        Registration,
        EndorsementProperty,
    ];
    assert!(check(&endorsed, EndorsementGuarantee).is_ok());
}

fn d(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

#[test]
fn colombian_holidays() {
    assert_eq!(easter(2024), Some(d("2024-03-31")));
    assert_eq!(easter(2025), Some(d("2025-04-20")));
    // 2025 as published: 18 holidays on 17 days (Sacred Heart and
    // Saint Peter both fall on June 30).
    let h = holidays(2025);
    assert_eq!(h.len(), 17, "{h:?}");
    for day in [
        "2025-01-01",
        "2025-01-06",
        "2025-03-24",
        "2025-04-17",
        "2025-04-18",
        "2025-05-01",
        "2025-06-02",
        "2025-06-23",
        "2025-06-30",
        "2025-07-20",
        "2025-08-07",
        "2025-08-18",
        "2025-10-13",
        "2025-11-03",
        "2025-11-17",
        "2025-12-08",
        "2025-12-25",
    ] {
        assert!(h.contains(&d(day)), "{day}");
    }
    assert!(!is_business_day(d("2025-04-18")));
    assert!(!is_business_day(d("2025-04-19")));
    assert!(is_business_day(d("2025-04-21")));
}

#[test]
fn three_business_days_skip_weekends_and_holidays() {
    // Wednesday before Easter 2025: Thursday and Friday are holidays.
    assert_eq!(add_business_days(d("2025-04-16"), 3), d("2025-04-23"));
    assert_eq!(tacit_acceptance_from(d("2025-04-16")), d("2025-04-24"));
    // A plain Monday.
    assert_eq!(tacit_acceptance_from(d("2025-09-01")), d("2025-09-05"));
    // Friday before the Emiliani Monday of 2025-11-17.
    assert_eq!(add_business_days(d("2025-11-14"), 3), d("2025-11-20"));
}

#[test]
fn uploads_are_read_or_refused_with_a_reason() {
    use super::received::{read, ReceivedError};
    let (xml, cufe) = crate::fixtures::signed_invoice("900000001", "SETP990000001", "fc8e");
    let facts = read(&xml).unwrap();
    assert_eq!(facts.cufe, cufe);
    assert_eq!(facts.vendor_nit, "900000001");
    assert!(matches!(read("<Invoice"), Err(ReceivedError::Malformed(_))));
    assert!(matches!(
        read("<Other xmlns=\"x\"/>"),
        Err(ReceivedError::NotAnInvoice(_))
    ));
    assert!(matches!(
        read("<!DOCTYPE x [<!ENTITY a 'b'>]><Invoice/>"),
        Err(ReceivedError::Malformed(_))
    ));
}

#[test]
fn the_same_document_is_the_same_however_it_is_written() {
    use super::received::{read, same_document, ReceivedError};
    use crate::engine::xml_limits::LimitError;
    let (xml, _) = crate::fixtures::signed_invoice("900000001", "SETP990000001", "fc8e");
    let same = |a: &str, b: &str| same_document(a, b.as_bytes()).unwrap();
    assert!(same(&xml, &xml));
    // Written differently: no declaration, a BOM, CRLF and white space
    // outside the root, a comment, single quotes, a character reference.
    let root = &xml[xml.find("?>").unwrap() + 2..];
    let rewritten = format!(
        "\u{feff}<!-- a copy -->\r\n{}\r\n",
        root.replacen("schemeName=\"CUFE-SHA384\"", "schemeName='CUFE-SHA384'", 1)
            .replacen("<cbc:UBLVersionID>UBL", "<cbc:UBLVersionID>&#85;BL", 1)
    );
    assert!(same(&xml, &rewritten));
    assert!(same(&rewritten, &xml));
    // Any change of content, signature included, is another document.
    assert!(!same(&xml, &xml.replacen("1190.00", "1.00", 1)));
    let sig_at = xml.find("<ds:SignatureValue").unwrap() + 40;
    let mut other_sig = xml.clone();
    other_sig.replace_range(sig_at..sig_at + 1, "Q");
    assert_ne!(other_sig, xml);
    assert!(!same(&xml, &other_sig));
    assert!(!same(
        &xml,
        &xml.replacen("<cbc:UBLVersionID>", "<cbc:UBLVersionID> ", 1)
    ));
    // An upload unwrapped from its container is compared as the invoice.
    let facts = read(&xml).unwrap();
    assert!(same(&facts.invoice_xml, &xml));
    // What is not a bounded invoice is no comparison.
    assert!(matches!(
        same_document(&xml, &[0xff, 0xfe]),
        Err(ReceivedError::Malformed(_))
    ));
    let deep = format!("{}{}", "<a>".repeat(200), "</a>".repeat(200));
    assert_eq!(
        same_document(&xml, deep.as_bytes()),
        Err(ReceivedError::Limits(LimitError::TooDeep(100)))
    );
}
