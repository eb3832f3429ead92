//! The rules of `conformance`, each with a document built by the engine
//! that breaks only that rule (rejected with its code) and one that keeps
//! it (accepted), sent over real SOAP to a simulator.

use super::package::zip_of;
use super::*;
use crate::authority::soap::response::rule_of;
use crate::authority::{AuthorityClient, AuthorityClientConfig, NumberRange, Transmission};
use crate::engine::model::{Document, DocumentKind, IssuerContext};
use crate::engine::pipeline::document_code;
use crate::engine::ubl::tests::{context, health, sample};
use crate::engine::ubl::{self, BuildInput};
use crate::engine::{codes, totals, xades};
use crate::fixtures::{self, NIT, SOFTWARE};

/// The sample issuer, with the test set's ranges of support documents and
/// POS receipts besides its invoice range (protocol.md §7.5c).
fn issuer() -> IssuerRecord {
    let mut issuer = fixtures::issuer(NIT);
    let range = |prefix: &str, from: u64, to: u64| NumberRange {
        resolution_number: "18760000001".into(),
        resolution_date: "2019-01-19".into(),
        prefix: prefix.into(),
        from_number: from,
        to_number: to,
        valid_date_from: "2019-01-19".into(),
        valid_date_to: "2030-01-19".into(),
        technical_key: None,
    };
    issuer.ranges.push(range("SEDS", 984000000, 985000000));
    issuer.ranges.push(range("EPOS", 1, 1000000));
    issuer
}

/// The sample context of `kind`, with the simulator's software id and the
/// numbering the authority expects of its family.
fn ctx(kind: DocumentKind) -> IssuerContext {
    let mut ctx = context(kind);
    ctx.software.id = SOFTWARE.into();
    match kind {
        DocumentKind::SupportDocument => {
            ctx.resolution.prefix = "SEDS".into();
            ctx.resolution.from = 984000000;
            ctx.resolution.to = 985000000;
            ctx.number = 984000001;
        }
        DocumentKind::Pos => {
            ctx.resolution.prefix = "EPOS".into();
            ctx.resolution.from = 1;
            ctx.resolution.to = 1000000;
            ctx.number = 1;
        }
        _ => {}
    }
    ctx
}

/// `doc` built by the engine, `edit`ed before signing (the code stays the
/// engine's: no edit touches what it is computed from), signed.
fn signed(doc: &Document, edit: impl Fn(String) -> String) -> String {
    let ctx = ctx(doc.kind);
    let t = totals::compute(doc).expect("totals");
    let code = document_code(doc, &ctx, &t);
    let number = ctx.document_number();
    let unsigned = ubl::build(&BuildInput {
        doc,
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
    let unsigned = edit(unsigned);
    xades::sign(&unsigned, &fixtures::signing_key(), ctx.colombia_instant()).expect("sign")
}

struct Sim {
    server: fixtures::Sim,
    client: AuthorityClient,
}

impl Sim {
    async fn start() -> Sim {
        let opts = SimOptions {
            workers: 1,
            // The day the sample documents are dated.
            today: || context(DocumentKind::Invoice).issue_naive_date(),
            ..SimOptions::default()
        };
        let server = fixtures::Sim::start([issuer()], opts).await;
        let client = AuthorityClient::new(
            AuthorityClientConfig::new(service_url(server.addr)),
            fixtures::signer(),
        );
        Sim { server, client }
    }

    async fn send(&self, xml: &str) -> Transmission {
        let zip = zip_of(&[("doc.xml", xml.as_bytes())]);
        self.client
            .send_bill_sync("doc.zip", &zip)
            .await
            .expect("send")
    }

    /// Sends `xml` and returns the rules of its rejection (empty when accepted).
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

    async fn stop(self) {
        self.server.stop().await;
    }
}

fn unchanged(xml: String) -> String {
    xml
}

/// FAD02 / CAD02 / DAD02: the operation type must be one of the document
/// type's. The export as it was built before (04) is refused; as built now
/// (10 with type 02) accepted; notes likewise.
#[actix_web::test]
async fn operation_type_of_the_document_type() {
    let sim = Sim::start().await;
    let export = sample(DocumentKind::ExportInvoice);
    let as_04 = |x: String| {
        x.replacen(
            "<cbc:CustomizationID>10</cbc:CustomizationID>",
            "<cbc:CustomizationID>04</cbc:CustomizationID>",
            1,
        )
    };
    assert_eq!(sim.rules(&signed(&export, as_04)).await, ["FAD02"]);
    assert!(sim.rules(&signed(&export, unchanged)).await.is_empty());

    let mut invoice = sample(DocumentKind::Invoice);
    invoice.operation_type = Some("12".into()); // the authority's transport: valid
    let as_11_api = |x: String| {
        x.replacen(
            "<cbc:CustomizationID>12</cbc:CustomizationID>",
            "<cbc:CustomizationID>SS-Nada</cbc:CustomizationID>",
            1,
        )
    };
    assert_eq!(sim.rules(&signed(&invoice, as_11_api)).await, ["FAD02"]);
    assert!(sim.rules(&signed(&invoice, unchanged)).await.is_empty());

    // A health invoice (SS-CUFE) and a health credit note (SS-CUDE).
    // (Fewer lines than the export: another code.)
    let mut t04 = sample(DocumentKind::ContingencyT04);
    t04.health = Some(health());
    t04.lines.truncate(2);
    assert!(sim.rules(&signed(&t04, unchanged)).await.is_empty());

    let credit = sample(DocumentKind::CreditNote);
    let as_30 = |x: String| {
        x.replacen(
            "<cbc:CustomizationID>20</cbc:CustomizationID>",
            "<cbc:CustomizationID>30</cbc:CustomizationID>",
            1,
        )
    };
    assert_eq!(sim.rules(&signed(&credit, as_30)).await, ["CAD02"]);
    assert!(sim.rules(&signed(&credit, unchanged)).await.is_empty());
    let mut health_note = sample(DocumentKind::CreditNote);
    health_note.health = Some(health());
    health_note.lines.truncate(2);
    assert!(sim.rules(&signed(&health_note, unchanged)).await.is_empty());

    let debit = sample(DocumentKind::DebitNote);
    let as_20 = |x: String| {
        x.replacen(
            "<cbc:CustomizationID>30</cbc:CustomizationID>",
            "<cbc:CustomizationID>20</cbc:CustomizationID>",
            1,
        )
    };
    assert_eq!(sim.rules(&signed(&debit, as_20)).await, ["DAD02"]);
    assert!(sim.rules(&signed(&debit, unchanged)).await.is_empty());
    sim.stop().await;
}

/// The `PartyTaxScheme/CompanyID` of the vendor, as the engine wrote it.
fn vendor_tax_id(xml: &str) -> String {
    let start = xml.find("<cac:AccountingSupplierParty>").expect("supplier");
    let from = xml[start..]
        .find("<cac:PartyTaxScheme>")
        .expect("tax scheme")
        + start;
    let open = xml[from..].find("<cbc:CompanyID").expect("company id") + from;
    let close = xml[open..].find("</cbc:CompanyID>").expect("end") + open;
    xml[open..close + "</cbc:CompanyID>".len()].to_string()
}

/// DSAJ25a / DSAJ24b: a resident vendor (a person with a cédula here) is
/// scheme 31 with its check digit in the support document and its
/// adjustment note. Written with its cédula's scheme (as before) it is
/// DSAJ25a; with a wrong check digit DSAJ24b.
#[actix_web::test]
async fn support_document_vendor_is_a_nit() {
    let sim = Sim::start().await;
    let dv = codes::nit_check_digit("1020304050").expect("dv");
    let wrong = (dv + 1) % 10;
    for kind in [
        DocumentKind::SupportDocument,
        DocumentKind::SupportAdjustment,
    ] {
        let doc = sample(kind);
        let good = signed(&doc, unchanged);
        let id = vendor_tax_id(&good);
        assert!(id.contains("schemeName=\"31\""), "{id}");
        let as_cedula = |x: String| {
            let id = vendor_tax_id(&x);
            let cedula = id
                .replace("schemeName=\"31\"", "schemeName=\"13\"")
                .replace(&format!(" schemeID=\"{dv}\""), "");
            x.replacen(&id, &cedula, 1)
        };
        assert_eq!(
            sim.rules(&signed(&doc, as_cedula)).await,
            ["DSAJ25a"],
            "{kind:?}"
        );
        let wrong_dv = |x: String| {
            let id = vendor_tax_id(&x);
            let bad = id.replace(
                &format!("schemeID=\"{dv}\""),
                &format!("schemeID=\"{wrong}\""),
            );
            x.replacen(&id, &bad, 1)
        };
        assert_eq!(
            sim.rules(&signed(&doc, wrong_dv)).await,
            ["DSAJ24b"],
            "{kind:?}"
        );
        assert!(sim.rules(&good).await.is_empty(), "{kind:?}");
    }
    // A non-resident vendor (operation 11) keeps its own document.
    let mut foreign = sample(DocumentKind::SupportDocument);
    foreign.operation_type = Some("11".into());
    foreign.lines.truncate(2);
    let xml = signed(&foreign, unchanged);
    assert!(vendor_tax_id(&xml).contains("schemeName=\"13\""));
    assert!(sim.rules(&xml).await.is_empty());
    sim.stop().await;
}

/// The XML without the extension holding `wrapper`.
fn without_extension(xml: String, wrapper: &str) -> String {
    let marker = format!("<ext:UBLExtension><ext:ExtensionContent><{wrapper}>");
    let start = xml.find(&marker).expect("extension");
    let end = xml[start..].find("</ext:UBLExtension>").expect("end") + start;
    format!(
        "{}{}",
        &xml[..start],
        &xml[end + "</ext:UBLExtension>".len()..]
    )
}

/// DEPD11 / DEPD21: a POS receipt carries the three extensions, each
/// complete with its literal names.
#[actix_web::test]
async fn pos_receipt_extensions() {
    let sim = Sim::start().await;
    let doc = sample(DocumentKind::Pos);
    let none = |x: String| {
        ["FabricanteSoftware", "BeneficiosComprador", "PuntoVenta"]
            .iter()
            .fold(x, |x, w| without_extension(x, w))
    };
    assert_eq!(
        sim.rules(&signed(&doc, none)).await,
        ["DEPD11", "DEPD11", "DEPD11"]
    );
    let no_maker = |x: String| without_extension(x, "FabricanteSoftware");
    assert_eq!(sim.rules(&signed(&doc, no_maker)).await, ["DEPD11"]);
    // Without the accent the authority does not find the name.
    let unaccented = |x: String| {
        x.replacen(
            "<Name>UbicaciónCaja</Name>",
            "<Name>UbicacionCaja</Name>",
            1,
        )
    };
    assert_eq!(sim.rules(&signed(&doc, unaccented)).await, ["DEPD21"]);
    let t = sim.send(&signed(&doc, unchanged)).await;
    assert!(t.is_valid && t.notifications.is_empty(), "{t:?}");
    sim.stop().await;
}

/// ZB01: `sts:DianExtensions` follows the authority's
/// `DIAN_UBL_Structures.xsd`. A POS adjustment note naming its source
/// `sts:CreditNoteSource` (a name the schema does not know) is rejected; the
/// same note with `sts:InvoiceSource`, as the engine writes it, is accepted.
/// So are extensions out of order or missing a required element.
#[actix_web::test]
async fn dian_extensions_follow_the_authoritys_schema() {
    let sim = Sim::start().await;
    let doc = sample(DocumentKind::PosAdjustment);
    let credit_note_source = |x: String| {
        x.replacen("<sts:InvoiceSource>", "<sts:CreditNoteSource>", 1)
            .replacen("</sts:InvoiceSource>", "</sts:CreditNoteSource>", 1)
    };
    let t = sim.send(&signed(&doc, credit_note_source)).await;
    assert!(!t.is_valid, "{t:?}");
    assert_eq!(t.errors.len(), 1, "{t:?}");
    assert_eq!(rule_of(&t.errors[0]), Some("ZB01"));
    assert!(t.errors[0].contains("CreditNoteSource"), "{t:?}");

    // Another document: the QR code before the software security code.
    let invoice = sample(DocumentKind::Invoice);
    let reordered = |x: String| {
        let start = x.find("<sts:SoftwareSecurityCode").expect("ssc");
        let end = x.find("</sts:SoftwareSecurityCode>").expect("ssc end")
            + "</sts:SoftwareSecurityCode>".len();
        let ssc = x[start..end].to_string();
        let without = format!("{}{}", &x[..start], &x[end..]);
        without.replacen(
            "</sts:DianExtensions>",
            &format!("{ssc}</sts:DianExtensions>"),
            1,
        )
    };
    assert_eq!(sim.rules(&signed(&invoice, reordered)).await, ["ZB01"]);
    let no_provider = |x: String| {
        let start = x.find("<sts:SoftwareProvider>").expect("provider");
        let end = x.find("</sts:SoftwareProvider>").expect("provider end")
            + "</sts:SoftwareProvider>".len();
        format!("{}{}", &x[..start], &x[end..])
    };
    assert_eq!(sim.rules(&signed(&invoice, no_provider)).await, ["ZB01"]);
    sim.stop().await;

    let sim = Sim::start().await;
    let t = sim.send(&signed(&doc, unchanged)).await;
    assert!(t.is_valid && t.notifications.is_empty(), "{t:?}");
    let t = sim.send(&signed(&invoice, unchanged)).await;
    assert!(t.is_valid && t.notifications.is_empty(), "{t:?}");
    sim.stop().await;
}

/// A payroll document of `kind` (the engine's sample) built with the
/// simulator's software, `edit`ed before signing, signed.
fn signed_payroll(
    kind: crate::engine::payroll::model::PayrollKind,
    edit: impl Fn(String) -> String,
) -> String {
    use crate::engine::payroll::{self, xml::PayrollBuildInput};
    let mut ctx = payroll::tests::context();
    ctx.software.id = SOFTWARE.into();
    let doc = payroll::tests::sample(kind);
    let totals = payroll::totals::validate_and_total(&doc).expect("totals");
    let (gen_date, gen_time) = payroll::generation(&doc, &ctx);
    let code = payroll::cune(&doc, &ctx, &totals, &gen_date, &gen_time);
    let number = ctx.document_number();
    let unsigned = payroll::xml::build(&PayrollBuildInput {
        doc: &doc,
        ctx: &ctx,
        totals: &totals,
        cune: &code,
        qr_url: &codes::qr_url(ctx.environment, &code),
        software_security_code: &codes::software_security_code(
            &ctx.software.id,
            &ctx.software.pin,
            &number,
        ),
        gen_date: &gen_date,
        gen_time: &gen_time,
    })
    .expect("build");
    xades::sign(
        &edit(unsigned),
        &fixtures::signing_key(),
        ctx.colombia_instant(),
    )
    .expect("sign")
}

/// NIE021 (102), NIAE021 (103 replacing), NIAE234 (103 deleting): the
/// payroll's `CodigoQR` is the verification URL alone. The annex §13.1
/// multi-line text there is rejected; the URL, as the engine writes it,
/// accepted.
#[actix_web::test]
async fn payroll_qr_code_is_the_url_alone() {
    use crate::engine::payroll::model::PayrollKind;
    let sim = Sim::start().await;
    let printed_text = |x: String| {
        let start = x.find("<CodigoQR>").expect("CodigoQR") + "<CodigoQR>".len();
        let url = x[start..].split('<').next().unwrap_or_default().to_string();
        x.replacen(
            &format!("<CodigoQR>{url}</CodigoQR>"),
            &format!("<CodigoQR>NumNIE: NOM12\nCUNE: x\nQRCode: {url}</CodigoQR>"),
            1,
        )
    };
    for (kind, rule) in [
        (PayrollKind::Individual, "NIE021"),
        (PayrollKind::Replace, "NIAE021"),
        (PayrollKind::Delete, "NIAE234"),
    ] {
        assert_eq!(
            sim.rules(&signed_payroll(kind, printed_text)).await,
            [rule],
            "{kind:?}"
        );
        let other_host = |x: String| x.replacen("catalogo-vpfe-hab.", "catalogo-vpfe.", 1);
        assert_eq!(
            sim.rules(&signed_payroll(kind, other_host)).await,
            [rule],
            "{kind:?}"
        );
        let t = sim.send(&signed_payroll(kind, unchanged)).await;
        assert!(t.is_valid, "{kind:?}: {t:?}");
    }
    sim.stop().await;
}

/// The rules read the document, not the signature: `check` alone on an
/// engine document of every kind finds nothing.
#[test]
fn every_engine_document_keeps_the_rules() {
    for kind in DocumentKind::ALL {
        let xml = signed(&sample(kind), unchanged);
        let facts = super::document::DocumentFacts::read(&xml).expect("facts");
        let verdict = super::conformance::check(&xml, &facts);
        assert_eq!(verdict, super::conformance::Verdict::default(), "{kind:?}");
    }
}
