//! The rules of `events` and `event_rules` on received-invoice events and
//! the registry, each with an event built and signed by the engine that
//! breaks only that rule (rejected with its code) and one that keeps it
//! (accepted), sent over real SOAP to a simulator that accepted their
//! invoice first.

use chrono::{DateTime, FixedOffset, NaiveDate};

use super::package::zip_of;
use super::*;
use crate::authority::soap::response::rule_of;
use crate::authority::{AuthorityClient, AuthorityClientConfig, Transmission};
use crate::engine::codes::{self, nit_check_digit};
use crate::engine::events::application_response::{
    self as ar, EventInput, EventParty, EventSoftware, IssuerParty,
};
use crate::engine::events::terms::{self, CustomTag, NegotiationInput};
use crate::engine::events::EventKind::{self, *};
use crate::engine::model::{DocumentKind, Payment};
use crate::engine::pipeline::document_code;
use crate::engine::ubl::common::AUTHORITY_NIT;
use crate::engine::ubl::tests::{context, sample};
use crate::engine::ubl::{self, BuildInput};
use crate::engine::{totals, xades};
use crate::fixtures::{self, NIT, PIN, SOFTWARE};

const BUYER: &str = "860002964";
const FACTOR: &str = "901234567";
const BANK: &str = "860034313";

fn party(nit: &str, name: &str) -> EventParty {
    EventParty {
        name: name.into(),
        id_number: nit.into(),
        id_type: "31".into(),
        check_digit: nit_check_digit(nit),
        tax_level: "O-13".into(),
    }
}

fn at(s: &str) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(s).expect("time")
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("date")
}

/// An invoice the simulator accepted, as its events name it.
#[derive(Clone)]
struct Title {
    cufe: String,
    number: String,
    seller: EventParty,
    buyer: EventParty,
    total: rust_decimal::Decimal,
    due: NaiveDate,
}

/// One event as sent: everything its XML carries.
#[derive(Clone)]
struct Spec {
    kind: EventKind,
    sender: EventParty,
    receiver: EventParty,
    at: DateTime<FixedOffset>,
    customization: String,
    tag: Option<CustomTag>,
    validity_end: Option<NaiveDate>,
    issuer: Option<EventParty>,
}

struct Flow {
    server: fixtures::Sim,
    client: AuthorityClient,
    numbers: std::cell::Cell<u64>,
}

impl Flow {
    async fn start() -> Flow {
        let opts = SimOptions {
            workers: 1,
            // The sample invoices carry the sample context's date.
            today: || context(DocumentKind::Invoice).issue_naive_date(),
            ..SimOptions::default()
        };
        let issuers = [NIT, BUYER, FACTOR, BANK].map(fixtures::issuer);
        let server = fixtures::Sim::start(issuers, opts).await;
        let client = AuthorityClient::new(
            AuthorityClientConfig::new(service_url(server.addr)),
            fixtures::signer(),
        );
        Flow {
            server,
            client,
            numbers: std::cell::Cell::new(0),
        }
    }

    async fn send(&self, xml: &str) -> Transmission {
        let zip = zip_of(&[("doc.xml", xml.as_bytes())]);
        self.client
            .send_bill_sync("doc.zip", &zip)
            .await
            .expect("send")
    }

    /// The rules of `xml`'s rejection (empty when accepted).
    async fn rules(&self, xml: &str) -> Vec<String> {
        let t = self.send(xml).await;
        assert!(!t.duplicate, "a code sent twice: {t:?}");
        if t.is_valid {
            return Vec::new();
        }
        t.errors
            .iter()
            .map(|e| rule_of(e).unwrap_or("?").to_string())
            .collect()
    }

    /// Sends `spec`, which must be accepted.
    async fn accept(&self, title: &Title, spec: &Spec) {
        let rules = self.rules(&self.signed(title, spec)).await;
        assert!(rules.is_empty(), "{:?}: {rules:?}", spec.kind);
    }

    /// Issues invoice `n` to the buyer (credit with a due date, or cash),
    /// accepted by the simulator.
    async fn invoice(&self, n: u64, credit: bool) -> Title {
        let mut doc = sample(DocumentKind::Invoice);
        doc.counterparty.id_number = BUYER.into();
        doc.counterparty.check_digit = nit_check_digit(BUYER);
        let due = day("2030-12-31");
        doc.payments = vec![Payment {
            form: if credit { "2" } else { "1" }.into(),
            method: if credit { "42" } else { "10" }.into(),
            due_date: Some(due),
        }];
        let mut ctx = context(DocumentKind::Invoice);
        ctx.software.id = SOFTWARE.into();
        ctx.number = 990000000 + n;
        let t = totals::compute(&doc).expect("totals");
        let code = document_code(&doc, &ctx, &t);
        let number = ctx.document_number();
        let unsigned = ubl::build(&BuildInput {
            doc: &doc,
            ctx: &ctx,
            totals: &t,
            code: &code,
            qr_url: &codes::qr_url(ctx.environment, &code),
            software_security_code: &codes::software_security_code(
                &ctx.software.id,
                &ctx.software.pin,
                &number,
            ),
        })
        .expect("build");
        let xml =
            xades::sign(&unsigned, &fixtures::signing_key(), ctx.colombia_instant()).expect("sign");
        let rules = self.rules(&xml).await;
        assert!(rules.is_empty(), "the invoice: {rules:?}");
        let read = terms::invoice_terms(&xml).expect("terms");
        Title {
            cufe: code,
            number,
            seller: party(NIT, "Emisor Demo S.A.S."),
            buyer: party(BUYER, &read.buyer_name),
            total: read.payable.expect("payable"),
            due,
        }
    }

    /// `kind` as the service writes it, from `from` to `to` (the receiver
    /// of an endorsement; ignored otherwise), signed at `when`.
    fn spec(&self, title: &Title, kind: EventKind, from: &EventParty, when: &str) -> Spec {
        let authority = party(AUTHORITY_NIT, "DIAN");
        let receiver = match kind {
            k if k.is_buyer_event() => title.seller.clone(),
            TacitAcceptance | Registration => authority,
            _ => party(FACTOR, "Factoring S.A.S."),
        };
        let (customization, tag, validity_end, issuer) = match kind {
            Registration => (
                "361",
                Some(terms::payment_record(title.total)),
                Some(title.due),
                None,
            ),
            EndorsementProperty => (
                "371",
                Some(
                    terms::negotiation(title.total, &NegotiationInput::default())
                        .expect("terms")
                        .property_tag(),
                ),
                None,
                Some(title.buyer.clone()),
            ),
            EndorsementGuarantee | EndorsementProcuration => (
                kind.authority_code(),
                Some(
                    terms::negotiation(title.total, &NegotiationInput::default())
                        .expect("terms")
                        .value_tag(),
                ),
                None,
                Some(title.buyer.clone()),
            ),
            _ => ("1", None, None, None),
        };
        Spec {
            kind,
            sender: from.clone(),
            receiver,
            at: at(when),
            customization: customization.into(),
            tag,
            validity_end,
            issuer,
        }
    }

    /// `spec` built by the engine and signed (a new event number each).
    fn signed(&self, title: &Title, spec: &Spec) -> String {
        let n = self.numbers.get() + 1;
        self.numbers.set(n);
        let number = format!("EV{n}");
        let notes = Vec::new();
        let input = EventInput {
            kind: spec.kind,
            number: &number,
            environment: 2,
            issued_at: spec.at,
            sender: &spec.sender,
            receiver: &spec.receiver,
            invoice_number: &title.number,
            invoice_cufe: &title.cufe,
            software: EventSoftware {
                id: SOFTWARE,
                pin: PIN,
                provider_nit: NIT,
                provider_check_digit: 2,
            },
            claim_concept: (spec.kind == Claim).then_some("01"),
            notes: &notes,
            customization_id: &spec.customization,
            custom_tag: spec.tag.as_ref(),
            validity_end: spec.validity_end,
            issuer_party: spec.issuer.as_ref().map(IssuerParty::Party),
        };
        let built = ar::build(&input).expect("build");
        xades::sign(&built.unsigned_xml, &fixtures::signing_key(), spec.at).expect("sign")
    }

    /// 030 and 032 of the buyer, signed on Tuesday 2026-12-01.
    async fn received(&self, title: &Title) {
        for kind in [Acknowledgement, GoodsReceipt] {
            let s = self.spec(title, kind, &title.buyer, "2026-12-01T10:00:00-05:00");
            self.accept(title, &s).await;
        }
    }

    /// Received, accepted and registered by the seller.
    async fn registered(&self, title: &Title) {
        self.received(title).await;
        let accept = self.spec(
            title,
            ExpressAcceptance,
            &title.buyer,
            "2026-12-02T10:00:00-05:00",
        );
        self.accept(title, &accept).await;
        let reg = self.spec(
            title,
            Registration,
            &title.seller,
            "2026-12-02T11:00:00-05:00",
        );
        self.accept(title, &reg).await;
    }

    async fn stop(self) {
        self.server.stop().await;
    }
}

const MONDAY: &str = "2026-12-07T09:00:00-05:00";
const SUNDAY: &str = "2026-12-06T18:00:00-05:00";
const LATER: &str = "2026-12-09T10:00:00-05:00";

/// AAG01e: a tacit acceptance is received by the authority, not the buyer.
#[actix_web::test]
async fn tacit_acceptance_is_received_by_the_authority() {
    let f = Flow::start().await;
    let t = f.invoice(1, true).await;
    f.received(&t).await;
    let mut to_buyer = f.spec(&t, TacitAcceptance, &t.seller, MONDAY);
    to_buyer.receiver = t.buyer.clone();
    assert_eq!(f.rules(&f.signed(&t, &to_buyer)).await, ["AAG01e"]);
    f.accept(&t, &f.spec(&t, TacitAcceptance, &t.seller, MONDAY))
        .await;
    f.stop().await;
}

/// DC24c, DC24z: an express acceptance or a claim within 3 business days
/// of the goods' receipt (032 on a Tuesday: through the Sunday).
#[actix_web::test]
async fn acceptance_and_claim_only_inside_the_window() {
    let f = Flow::start().await;
    for (n, kind, rule) in [(1, ExpressAcceptance, "DC24c"), (2, Claim, "DC24z")] {
        let t = f.invoice(n, true).await;
        f.received(&t).await;
        let late = f.spec(&t, kind, &t.buyer, MONDAY);
        assert_eq!(f.rules(&f.signed(&t, &late)).await, [rule], "{kind:?}");
        f.accept(&t, &f.spec(&t, kind, &t.buyer, SUNDAY)).await;
    }
    f.stop().await;
}

/// DC24e: a tacit acceptance only once the window is over (from the Monday).
#[actix_web::test]
async fn tacit_acceptance_only_after_the_window() {
    let f = Flow::start().await;
    let t = f.invoice(1, true).await;
    f.received(&t).await;
    let early = f.spec(&t, TacitAcceptance, &t.seller, SUNDAY);
    assert_eq!(f.rules(&f.signed(&t, &early)).await, ["DC24e"]);
    f.accept(&t, &f.spec(&t, TacitAcceptance, &t.seller, MONDAY))
        .await;
    f.stop().await;
}

/// The registration up to its own content.
async fn accepted_title(f: &Flow, n: u64, credit: bool) -> Title {
    let t = f.invoice(n, credit).await;
    f.received(&t).await;
    let accept = f.spec(&t, ExpressAcceptance, &t.buyer, "2026-12-02T10:00:00-05:00");
    f.accept(&t, &accept).await;
    t
}

/// LGC57: the registration carries `ConstanciadePagos` with the title's
/// original value; another value is only a notification.
#[actix_web::test]
async fn registration_carries_the_titles_value() {
    let f = Flow::start().await;
    let t = accepted_title(&f, 1, true).await;
    let mut bare = f.spec(&t, Registration, &t.seller, LATER);
    bare.tag = None;
    assert_eq!(f.rules(&f.signed(&t, &bare)).await, ["LGC57"]);
    let mut other = f.spec(&t, Registration, &t.seller, LATER);
    other.tag = Some(terms::payment_record(t.total + rust_decimal::Decimal::ONE));
    let answer = f.send(&f.signed(&t, &other)).await;
    assert!(answer.is_valid, "{answer:?}");
    assert_eq!(answer.notifications.len(), 1, "{answer:?}");
    assert_eq!(rule_of(&answer.notifications[0]), Some("LGC57"));

    let t = accepted_title(&f, 2, true).await;
    let answer = f
        .send(&f.signed(&t, &f.spec(&t, Registration, &t.seller, LATER)))
        .await;
    assert!(
        answer.is_valid && answer.notifications.is_empty(),
        "{answer:?}"
    );
    f.stop().await;
}

/// AAH59: the registration's validity end date is the invoice's
/// `PaymentDueDate`.
#[actix_web::test]
async fn registration_ends_on_the_invoices_due_date() {
    let f = Flow::start().await;
    let t = accepted_title(&f, 1, true).await;
    let mut none = f.spec(&t, Registration, &t.seller, LATER);
    none.validity_end = None;
    assert_eq!(f.rules(&f.signed(&t, &none)).await, ["AAH59"]);
    let mut other = f.spec(&t, Registration, &t.seller, LATER);
    other.validity_end = Some(day("2030-12-30"));
    assert_eq!(f.rules(&f.signed(&t, &other)).await, ["AAH59"]);
    f.accept(&t, &f.spec(&t, Registration, &t.seller, LATER))
        .await;
    f.stop().await;
}

/// LGC62: a cash invoice (PaymentMeans ID 1) cannot become a title.
#[actix_web::test]
async fn a_cash_invoice_is_no_title() {
    let f = Flow::start().await;
    let cash = accepted_title(&f, 1, false).await;
    let reg = f.spec(&cash, Registration, &cash.seller, LATER);
    assert_eq!(f.rules(&f.signed(&cash, &reg)).await, ["LGC62"]);
    let credit = accepted_title(&f, 2, true).await;
    f.accept(
        &credit,
        &f.spec(&credit, Registration, &credit.seller, LATER),
    )
    .await;
    f.stop().await;
}

/// AAH26b, AAH25b: an endorsement names the invoice's buyer, by
/// identification and by name, in `DocumentResponse/cac:IssuerParty`.
#[actix_web::test]
async fn an_endorsement_names_the_invoices_buyer() {
    let f = Flow::start().await;
    let t = f.invoice(1, true).await;
    f.registered(&t).await;
    for kind in [
        EndorsementProperty,
        EndorsementGuarantee,
        EndorsementProcuration,
    ] {
        let mut none = f.spec(&t, kind, &t.seller, LATER);
        none.issuer = None;
        assert_eq!(
            f.rules(&f.signed(&t, &none)).await,
            ["AAH26b", "AAH25b"],
            "{kind:?}"
        );
        let mut other_id = f.spec(&t, kind, &t.seller, LATER);
        other_id.issuer = Some(party(BANK, &t.buyer.name));
        assert_eq!(f.rules(&f.signed(&t, &other_id)).await, ["AAH26b"]);
        let mut other_name = f.spec(&t, kind, &t.seller, LATER);
        other_name.issuer = Some(party(BUYER, "Otro nombre S.A.S."));
        assert_eq!(f.rules(&f.signed(&t, &other_name)).await, ["AAH25b"]);
    }
    f.accept(&t, &f.spec(&t, EndorsementGuarantee, &t.seller, LATER))
        .await;
    f.stop().await;
}

/// AAI05, AAI07a, AAI09, AAI07b: an endorsement in property carries its
/// negotiation, PrecioPagarseFEV = ValorTotalEndoso × (100 − TasaDescuento) / 100.
#[actix_web::test]
async fn an_endorsement_in_property_carries_its_negotiation() {
    let f = Flow::start().await;
    let t = f.invoice(1, true).await;
    f.registered(&t).await;
    let good = f.spec(&t, EndorsementProperty, &t.seller, LATER);
    let pairs = good.tag.clone().expect("tag").pairs;
    for (missing, rule) in [
        ("ValorTotalEndoso", "AAI05"),
        ("PrecioPagarseFEV", "AAI07a"),
        ("TasaDescuento", "AAI09"),
    ] {
        let mut s = good.clone();
        s.tag = Some(CustomTag {
            group: "InformacionNegociacion",
            pairs: pairs
                .iter()
                .map(|(n, v)| {
                    (
                        *n,
                        if *n == missing {
                            String::new()
                        } else {
                            v.clone()
                        },
                    )
                })
                .collect(),
        });
        assert_eq!(f.rules(&f.signed(&t, &s)).await, [rule], "{missing}");
    }
    let mut s = good.clone();
    s.tag = Some(CustomTag {
        group: "InformacionNegociacion",
        pairs: pairs
            .iter()
            .map(|(n, v)| {
                (
                    *n,
                    if *n == "TasaDescuento" {
                        "5.00".into()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect(),
    });
    assert_eq!(f.rules(&f.signed(&t, &s)).await, ["AAI07b"]);
    let mut discounted = good.clone();
    discounted.tag = Some(
        terms::negotiation(
            t.total,
            &NegotiationInput {
                advance_percent: Some(rust_decimal::Decimal::from(80)),
                ..Default::default()
            },
        )
        .expect("terms")
        .property_tag(),
    );
    f.accept(&t, &discounted).await;
    f.stop().await;
}

/// LGC24, LGC27, LGC30: the new holder files its subsequent registration
/// (363/364) before endorsing; the holder who registered endorses.
#[actix_web::test]
async fn the_new_holder_registers_before_endorsing() {
    let f = Flow::start().await;
    let factor = party(FACTOR, "Factoring S.A.S.");
    let t = f.invoice(1, true).await;
    f.registered(&t).await;
    // The seller registered: it endorses in property (keeps LGC24).
    f.accept(&t, &f.spec(&t, EndorsementProperty, &t.seller, LATER))
        .await;
    let to_bank = |kind| {
        let mut s = f.spec(&t, kind, &factor, "2026-12-10T10:00:00-05:00");
        s.receiver = party(BANK, "Banco S.A.");
        s
    };
    for (kind, rule) in [
        (EndorsementProperty, "LGC24"),
        (EndorsementGuarantee, "LGC27"),
        (EndorsementProcuration, "LGC30"),
    ] {
        assert_eq!(
            f.rules(&f.signed(&t, &to_bank(kind))).await,
            [rule],
            "{kind:?}"
        );
    }
    let mut subsequent = f.spec(&t, Registration, &factor, "2026-12-10T11:00:00-05:00");
    subsequent.customization = "363".into();
    f.accept(&t, &subsequent).await;
    // Registered again: the factor endorses in guarantee (keeps LGC27).
    f.accept(&t, &to_bank(EndorsementGuarantee)).await;

    // A procuration by the seller who registered (keeps LGC30).
    let u = f.invoice(2, true).await;
    f.registered(&u).await;
    f.accept(&u, &f.spec(&u, EndorsementProcuration, &u.seller, LATER))
        .await;
    f.stop().await;
}

/// Every circulation event carries its sub-type in `cbc:CustomizationID`
/// (the validator gives no code: the generic schema rejection ZB01), a
/// first registration once (LGC23) and a subsequent one only after an
/// endorsement in property (LGC37).
#[actix_web::test]
async fn circulation_events_carry_their_sub_type() {
    let f = Flow::start().await;
    let t = accepted_title(&f, 1, true).await;
    let with = |kind, c: &str| {
        let mut s = f.spec(&t, kind, &t.seller, LATER);
        s.customization = c.into();
        s
    };
    assert_eq!(
        f.rules(&f.signed(&t, &with(Registration, "1"))).await,
        ["ZB01"]
    );
    assert_eq!(
        f.rules(&f.signed(&t, &with(Registration, "363"))).await,
        ["LGC37"]
    );
    f.accept(&t, &with(Registration, "362")).await;
    assert_eq!(
        f.rules(&f.signed(&t, &with(Registration, "361"))).await,
        ["LGC23"]
    );
    for kind in [
        EndorsementProperty,
        EndorsementGuarantee,
        EndorsementProcuration,
    ] {
        assert_eq!(
            f.rules(&f.signed(&t, &with(kind, "1"))).await,
            ["ZB01"],
            "{kind:?}"
        );
    }
    f.accept(&t, &with(EndorsementProperty, "372")).await;
    f.stop().await;
}

/// GetStatusEvent over SOAP: an invoice without events (67, its
/// ApplicationResponse lists none), then with the buyer's 030 and 032
/// (00, each with its code, CUDE, number, signing date and parties, in
/// order); an unknown code (66), an event's own CUDE (68, not an invoice),
/// an unreadable track id (89).
#[actix_web::test]
async fn the_events_of_an_invoice_are_listed_by_its_cufe() {
    let f = Flow::start().await;
    let t = f.invoice(1, true).await;
    let none = f.client.get_status_event(&t.cufe).await.expect("answer");
    assert_eq!(
        (none.status_code.as_str(), none.is_valid, none.events.len()),
        ("67", false, 0),
        "{none:?}"
    );
    assert!(none
        .status_description
        .contains("no tiene a la fecha eventos"));

    f.received(&t).await;
    let listed = f
        .client
        .get_status_event(&t.cufe.to_ascii_uppercase())
        .await
        .expect("answer");
    assert_eq!((listed.status_code.as_str(), listed.is_valid), ("00", true));
    let codes: Vec<&str> = listed.events.iter().map(|e| e.code.as_str()).collect();
    assert_eq!(codes, ["030", "032"]);
    let first = &listed.events[0];
    assert_eq!(first.number, "EV1");
    assert_eq!(first.cude.len(), 96);
    assert_ne!(first.cude, t.cufe);
    assert_eq!(first.date, "2026-12-01");
    assert_eq!(first.time, "10-00-00-05:00");
    assert_eq!(first.issuer_nit.as_deref(), Some(BUYER));
    assert_eq!(first.recipient_nit.as_deref(), Some(NIT));
    assert!(first.description.starts_with("Acuse de recibo"));

    let unknown = f
        .client
        .get_status_event(&"ab".repeat(48))
        .await
        .expect("answer");
    assert_eq!(unknown.status_code, "66");
    assert!(unknown.events.is_empty());
    let event = f
        .client
        .get_status_event(&first.cude)
        .await
        .expect("answer");
    assert_eq!(event.status_code, "68");
    let short = f.client.get_status_event("abc").await.expect("answer");
    assert_eq!(short.status_code, "89");
    f.stop().await;
}
