//! Unit tests of the events' pure parts: vector V5, the XML against the
//! XSD and signed, the order rules, the calendar, the reading of uploads.

use chrono::{DateTime, NaiveDate};

use super::application_response::{build, EventInput, EventParty, EventSoftware};
use super::calendar::{
    add_business_days, business_days_until, claim_window_last_day, easter, holidays,
    is_business_day, tacit_acceptance_allowed, tacit_acceptance_from, within_claim_window,
};
use super::order::{
    check, eligible_for_registration, registration_stage, OrderError, RegistrationStage,
};
use super::terms::{self, negotiation, NegotiationInput, RegistrationMode, SubType};
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
        customization_id: "1",
        custom_tag: None,
        validity_end: None,
        issuer_party: None,
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
    let buyer = party("800197268");
    let person = super::application_response::EventPerson {
        id_number: "1020304050".into(),
        id_type: "13".into(),
        check_digit: None,
        first_name: "Ana".into(),
        family_name: "Pérez".into(),
        job_title: Some("Almacenista".into()),
        department: Some("Bodega".into()),
    };
    let registration = terms::payment_record("168365".parse().unwrap());
    let negotiation_tag = negotiation("168365".parse().unwrap(), &NegotiationInput::default())
        .unwrap()
        .property_tag();
    for kind in super::ALL {
        let mut input = v5_input(&s, &r, &notes);
        input.kind = kind;
        if kind == Claim {
            input.claim_concept = Some("02");
        }
        let sub = SubType::of(
            kind,
            RegistrationStage::First,
            RegistrationMode::Direct,
            false,
        );
        input.customization_id = sub.customization_id();
        match kind {
            Acknowledgement | GoodsReceipt => {
                input.issuer_party = Some(super::application_response::IssuerParty::Person(&person))
            }
            Registration => {
                input.custom_tag = Some(&registration);
                input.validity_end = Some(d("2030-12-31"));
            }
            k if k.is_endorsement() => {
                input.custom_tag = Some(&negotiation_tag);
                input.issuer_party = Some(super::application_response::IssuerParty::Party(&buyer));
            }
            _ => {}
        }
        let built = build(&input).unwrap();
        assert!(built
            .unsigned_xml
            .contains(&format!(">{}</cbc:ResponseCode>", kind.authority_code())));
        assert!(built.unsigned_xml.contains(&format!(
            "<cbc:CustomizationID>{}</cbc:CustomizationID>",
            input.customization_id
        )));
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
    assert!(check(&endorsed, EndorsementGuarantee).is_err());
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
fn the_circulation_needs_the_holders_own_registration() {
    let accepted = [Acknowledgement, GoodsReceipt, ExpressAcceptance];
    assert_eq!(registration_stage(&accepted), RegistrationStage::First);
    let titled = [
        Acknowledgement,
        GoodsReceipt,
        ExpressAcceptance,
        Registration,
    ];
    assert_eq!(
        check(&titled, Registration),
        Err(OrderError::AlreadyRegistered("035"))
    );
    assert!(!eligible_for_registration(&titled));
    // The new holder after an endorsement in property: no endorsement
    // until its subsequent registration.
    let endorsed = [
        Acknowledgement,
        GoodsReceipt,
        ExpressAcceptance,
        Registration,
        EndorsementProperty,
    ];
    for k in [
        EndorsementProperty,
        EndorsementGuarantee,
        EndorsementProcuration,
    ] {
        assert_eq!(
            check(&endorsed, k),
            Err(OrderError::Unregistered {
                event: k.api_code()
            }),
            "{k:?}"
        );
    }
    assert!(check(&endorsed, Registration).is_ok());
    assert_eq!(registration_stage(&endorsed), RegistrationStage::Subsequent);
    assert!(!eligible_for_registration(&endorsed));
    let again = [&endorsed[..], &[Registration]].concat();
    assert_eq!(
        check(&again, Registration),
        Err(OrderError::AlreadyRegistered("035"))
    );
    for k in [
        EndorsementProperty,
        EndorsementGuarantee,
        EndorsementProcuration,
    ] {
        assert!(check(&again, k).is_ok(), "{k:?}");
    }
    // After a guarantee the holder keeps the title: only a property
    // endorsement may follow (a guarantee again needs its cancellation).
    let pledged = [&again[..], &[EndorsementGuarantee]].concat();
    assert!(check(&pledged, EndorsementProperty).is_ok());
    assert!(check(&pledged, EndorsementGuarantee).is_err());
    assert!(check(&pledged, Registration).is_err());
}

#[test]
fn business_days_count_as_the_validator_does() {
    // 2026-12-01 is a Tuesday; the first holiday after it is 2026-12-08.
    let tue = d("2026-12-01");
    let counts: Vec<i64> = (0..8)
        .map(|i| business_days_until(tue, tue + chrono::Days::new(i)))
        .collect();
    // Tue Wed Thu Fri Sat Sun Mon Tue (the 8th, a holiday)
    assert_eq!(counts, [0, 1, 2, 3, 3, 3, 4, 4]);
    assert!(within_claim_window(tue, d("2026-12-06")));
    assert!(!within_claim_window(tue, d("2026-12-07")));
    assert!(!tacit_acceptance_allowed(tue, d("2026-12-06")));
    assert!(tacit_acceptance_allowed(tue, d("2026-12-07")));
    assert_eq!(claim_window_last_day(tue), d("2026-12-06"));
    assert_eq!(tacit_acceptance_from(tue), d("2026-12-07"));
    // A Saturday receipt: 3 until Thursday, 4 from Friday (the audit's
    // reading of BusinessDaysUntil).
    let sat = d("2026-11-28");
    assert_eq!(business_days_until(sat, d("2026-12-03")), 3);
    assert_eq!(business_days_until(sat, d("2026-12-04")), 4);
    assert_eq!(tacit_acceptance_from(sat), d("2026-12-04"));
    // Holy week 2025: Thursday and Friday are holidays.
    let wed = d("2025-04-16");
    assert_eq!(business_days_until(wed, d("2025-04-21")), 1);
    assert_eq!(tacit_acceptance_from(wed), d("2025-04-24"));
    // The Immaculate Conception (Tuesday 2026-12-08) does not count.
    assert_eq!(tacit_acceptance_from(d("2026-12-07")), d("2026-12-14"));
    // Across a new year: 2026-12-31 Thursday, 2027-01-01 holiday.
    assert_eq!(tacit_acceptance_from(d("2026-12-31")), d("2027-01-07"));
}

#[test]
fn sub_types_are_the_authoritys() {
    use RegistrationMode::*;
    use RegistrationStage::*;
    let of = |k, stage, mode, liability| SubType::of(k, stage, mode, liability).customization_id();
    assert_eq!(of(Acknowledgement, First, General, true), "1");
    assert_eq!(of(Registration, First, General, true), "361");
    assert_eq!(of(Registration, First, Direct, true), "362");
    assert_eq!(of(Registration, Subsequent, General, true), "363");
    assert_eq!(of(Registration, Subsequent, Direct, true), "364");
    assert_eq!(of(EndorsementProperty, First, General, true), "371");
    assert_eq!(of(EndorsementProperty, First, General, false), "372");
    assert_eq!(of(EndorsementGuarantee, First, General, true), "038");
    assert_eq!(of(EndorsementProcuration, First, General, true), "039");
    assert_eq!(RegistrationMode::from_api("directa"), Some(Direct));
    assert_eq!(RegistrationMode::from_api("otra"), None);
}

#[test]
fn negotiation_values_agree_or_are_refused_naming_them() {
    let total: rust_decimal::Decimal = "168365".parse().unwrap();
    let dec = |s: &str| s.parse::<rust_decimal::Decimal>().unwrap();
    // Defaults: the whole value, no discount, bank transfer.
    let n = negotiation(total, &NegotiationInput::default()).unwrap();
    assert_eq!(
        (n.total, n.price, n.discount_rate),
        (total, total, dec("0"))
    );
    assert_eq!(n.payment_means, "42");
    let tag = n.property_tag();
    assert_eq!(
        tag.pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>(),
        [
            "ValorTotalEndoso=168365.00",
            "PrecioPagarseFEV=168365.00",
            "TasaDescuento=0.00",
            "MedioPago=42"
        ]
    );
    // 80 % advanced: rate 20.
    let eighty = NegotiationInput {
        advance_percent: Some(dec("80")),
        ..Default::default()
    };
    let n = negotiation(total, &eighty).unwrap();
    assert_eq!((n.price, n.discount_rate), (dec("134692"), dec("20")));
    // A disbursement a two-decimal rate reproduces.
    let paid = NegotiationInput {
        nominal_value: Some(dec("100000")),
        disbursed: Some(dec("97650")),
        payment_means: Some("10".into()),
        ..Default::default()
    };
    let n = negotiation(total, &paid).unwrap();
    assert_eq!(n.discount_rate, dec("2.35"));
    assert_eq!(
        n.total * (dec("100") - n.discount_rate) / dec("100"),
        n.price
    );
    // Contradictions, each naming its field.
    let field = |input: NegotiationInput| negotiation(total, &input).unwrap_err()[0].field;
    assert_eq!(
        field(NegotiationInput {
            advance_percent: Some(dec("80")),
            disbursed: Some(dec("130000.50")),
            ..Default::default()
        }),
        "valor_desembolsado"
    );
    assert_eq!(
        field(NegotiationInput {
            disbursed: Some(dec("130000.50")),
            ..Default::default()
        }),
        "valor_desembolsado",
        "no two-decimal rate gives it"
    );
    assert_eq!(
        field(NegotiationInput {
            nominal_value: Some(dec("200000")),
            ..Default::default()
        }),
        "valor_nominal_factura"
    );
    assert_eq!(
        field(NegotiationInput {
            advance_percent: Some(dec("120")),
            ..Default::default()
        }),
        "porcentaje_anticipo"
    );
    assert_eq!(
        field(NegotiationInput {
            disbursed: Some(dec("200000")),
            ..Default::default()
        }),
        "valor_desembolsado"
    );
    assert_eq!(
        field(NegotiationInput {
            payment_means: Some("4 2".into()),
            ..Default::default()
        }),
        "medio_pago"
    );
}

#[test]
fn an_invoices_payment_terms_are_read_from_its_xml() {
    let (xml, _) = crate::fixtures::signed_invoice("900000001", "SETP990000001", "fc8e");
    let t = terms::invoice_terms(&xml).unwrap();
    assert_eq!(t.seller_id, "900000001");
    assert!(t.payable.is_some());
    assert!(!t.buyer_id.is_empty());
    assert!(terms::invoice_terms("<Invoice").is_none());
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
