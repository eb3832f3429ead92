//! Sample certificates, issuers and documents for the tests and the
//! benchmarks; the server never uses them. The module is public because the
//! benchmarks are separate crates linking the library.
//!
//! A fixture that cannot be built is a broken test, so these helpers panic
//! (`expect`) rather than return errors.
#![allow(clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::dev::ServerHandle;
use chrono::{DateTime, FixedOffset, NaiveDate};
use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::{X509Builder, X509NameBuilder, X509};

use crate::authority::simulator::{self, IssuerRecord, SimOptions, SimRegistry, SoftwareRecord};
use crate::authority::{NumberRange, WsSigner};
use crate::engine::model::{
    Address, DocumentKind, IssuerContext, OrganizationType, Party, Resolution, RootElement,
    Software, SoftwareMaker, TaxSchemeRef, ENVIRONMENT_TESTING,
};
use crate::engine::signing_key::{generate_self_signed, SigningKey};
use crate::engine::{codes, package, xades};

/// The sample company's NIT.
pub const NIT: &str = "900000001";
/// The customer's NIT in [`unsigned_invoice`].
pub const CUSTOMER: &str = "800000002";
/// The sample company's software id at the simulator.
pub const SOFTWARE: &str = "soft-1";
/// The PIN of [`SOFTWARE`].
pub const PIN: &str = "12345";
/// The technical key of the sample numbering range.
pub const TECH_KEY: &str = "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c";
/// The namespace declarations of a UBL invoice's root element.
pub const UBL_NS: &str = concat!(
    " xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\"",
    " xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\"",
    " xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\"",
    " xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"",
    " xmlns:ext=\"urn:oasis:names:specification:ubl:schema:xsd:CommonExtensionComponents-2\"",
    " xmlns:sts=\"dian:gov:co:facturaelectronica:Structures-2-1\"",
    " xmlns:xades=\"http://uri.etsi.org/01903/v1.3.2#\"",
    " xmlns:xades141=\"http://uri.etsi.org/01903/v1.4.1#\""
);

// --- certificates ----------------------------------------------------------

/// A fresh self-signed RSA-2048 certificate (DER) of [`NIT`] and its key.
pub fn self_signed() -> (PKey<Private>, Vec<u8>) {
    let rsa = Rsa::generate(2048).expect("rsa");
    let key = PKey::from_rsa(rsa).expect("pkey");
    let mut name = X509NameBuilder::new().expect("name");
    name.append_entry_by_text("C", "CO").expect("C");
    name.append_entry_by_text("O", "Emisor Pruebas").expect("O");
    name.append_entry_by_text("CN", NIT).expect("CN");
    let name = name.build();
    let mut b = X509Builder::new().expect("builder");
    b.set_version(2).expect("version");
    let serial = BigNum::from_u32(4242)
        .and_then(|n| n.to_asn1_integer())
        .expect("serial");
    b.set_serial_number(&serial).expect("serial");
    b.set_subject_name(&name).expect("subject");
    b.set_issuer_name(&name).expect("issuer");
    b.set_pubkey(&key).expect("pubkey");
    b.set_not_before(&Asn1Time::days_from_now(0).expect("t"))
        .expect("nb");
    b.set_not_after(&Asn1Time::days_from_now(365).expect("t"))
        .expect("na");
    b.sign(&key, MessageDigest::sha256()).expect("sign");
    let der = b.build().to_der().expect("der");
    (key, der)
}

/// One [`self_signed`] pair shared by a whole process (RSA generation is slow).
pub fn shared() -> (PKey<Private>, Vec<u8>) {
    static CELL: std::sync::OnceLock<(PKey<Private>, Vec<u8>)> = std::sync::OnceLock::new();
    CELL.get_or_init(self_signed).clone()
}

/// The [`shared`] pair as a document signing key.
pub fn signing_key() -> SigningKey {
    let (key, der) = shared();
    let cert = X509::from_der(&der).expect("cert");
    SigningKey::from_parts(key, cert).expect("signing key")
}

/// The [`shared`] pair as a WS-Security signer.
pub fn signer() -> WsSigner {
    let (key, der) = shared();
    WsSigner::new(key, der).expect("signer")
}

/// The signing instant of the sample documents.
pub fn signing_time() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2024-02-15T07:43:48.123-05:00").expect("time")
}

/// The day of [`signing_time`]: a simulator receiving the sample documents
/// takes it for today (`SimOptions::today`), as the send-day rule wants.
pub fn signing_day() -> NaiveDate {
    signing_time().date_naive()
}

/// A fresh PKCS#12 key of the sample company, valid 30 days, as imported.
pub fn company_key() -> SigningKey {
    let (p12, pw) = generate_self_signed("Emisor Demo S.A.S.", NIT, 30).expect("p12");
    SigningKey::from_pkcs12(&p12, &pw).expect("signing key")
}

// --- the simulator's side --------------------------------------------------

/// Issuer `nit` as the simulator knows it: software [`SOFTWARE`], range
/// SETP990000000–995000000 keyed [`TECH_KEY`], no test sets.
pub fn issuer(nit: &str) -> IssuerRecord {
    IssuerRecord {
        nit: nit.into(),
        software: vec![SoftwareRecord {
            id: SOFTWARE.into(),
            pin: PIN.into(),
        }],
        ranges: vec![NumberRange {
            resolution_number: "18760000001".into(),
            resolution_date: "2019-01-19".into(),
            prefix: "SETP".into(),
            from_number: 990000000,
            to_number: 995000000,
            valid_date_from: "2019-01-19".into(),
            valid_date_to: "2030-01-19".into(),
            technical_key: Some(TECH_KEY.into()),
        }],
        test_set_ids: Vec::new(),
        ..IssuerRecord::default()
    }
}

/// A simulator on a free local port, driven through its `/__sim` control API.
pub struct Sim {
    /// Where it listens.
    pub addr: SocketAddr,
    handle: ServerHandle,
}

impl Sim {
    /// Starts a simulator that knows `issuers`.
    pub async fn start(issuers: impl IntoIterator<Item = IssuerRecord>, opts: SimOptions) -> Sim {
        let registry = Arc::new(SimRegistry::new());
        for issuer in issuers {
            registry.register(issuer);
        }
        let (addr, handle) = simulator::start("127.0.0.1:0", registry, opts)
            .await
            .expect("start");
        Sim { addr, handle }
    }

    /// The URL of `path` on the simulator.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sets its mode (`body` as `POST /__sim/mode` takes it).
    pub async fn mode(&self, body: serde_json::Value) {
        let resp = awc::Client::default()
            .post(self.url("/__sim/mode"))
            .send_json(&body)
            .await
            .expect("mode");
        assert!(resp.status().is_success());
    }

    /// Its counters (`GET /__sim/stats`).
    pub async fn stats(&self) -> serde_json::Value {
        awc::Client::default()
            .get(self.url("/__sim/stats"))
            .send()
            .await
            .expect("stats")
            .json::<serde_json::Value>()
            .await
            .expect("json")
    }

    /// Forgets statistics, documents and batches, back to mode `up` (`POST /__sim/reset`).
    pub async fn reset(&self) {
        let resp = awc::Client::default()
            .post(self.url("/__sim/reset"))
            .send()
            .await
            .expect("reset");
        assert!(resp.status().is_success());
    }

    /// Stops it.
    pub async fn stop(self) {
        self.handle.stop(false).await;
    }
}

/// The `sts:InvoiceControl` of the authority's SETP test set, which a
/// document of the testing environment names (protocol.md 7.5c).
pub const TEST_SET_CONTROL: &str = concat!(
    "<sts:InvoiceControl><sts:InvoiceAuthorization>18760000001</sts:InvoiceAuthorization>",
    "<sts:AuthorizationPeriod><cbc:StartDate>2019-01-19</cbc:StartDate><cbc:EndDate>2030-01-19</cbc:EndDate></sts:AuthorizationPeriod>",
    "<sts:AuthorizedInvoices><sts:Prefix>SETP</sts:Prefix><sts:From>990000000</sts:From><sts:To>995000000</sts:To></sts:AuthorizedInvoices>",
    "</sts:InvoiceControl>"
);

/// A small unsigned invoice of `nit` numbered `number`, in canonical form
/// (the engine's signing contract), its CUFE computed with `tech_key`.
pub fn unsigned_invoice(nit: &str, number: &str, tech_key: &str) -> String {
    let with_code = |code: &str| {
        [
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>",
            "<Invoice",
            UBL_NS,
            "><ext:UBLExtensions><ext:UBLExtension><ext:ExtensionContent><sts:DianExtensions>",
            TEST_SET_CONTROL,
            "<sts:InvoiceSource><cbc:IdentificationCode>CO</cbc:IdentificationCode></sts:InvoiceSource>",
            "<sts:SoftwareProvider><sts:ProviderID>",
            nit,
            "</sts:ProviderID><sts:SoftwareID>",
            SOFTWARE,
            "</sts:SoftwareID></sts:SoftwareProvider>",
            "<sts:SoftwareSecurityCode>0</sts:SoftwareSecurityCode>",
            "<sts:AuthorizationProvider><sts:AuthorizationProviderID>800197268</sts:AuthorizationProviderID></sts:AuthorizationProvider>",
            "<sts:QRCode>https://catalogo-vpfe-hab.dian.gov.co/document/searchqr?documentkey=</sts:QRCode>",
            "</sts:DianExtensions></ext:ExtensionContent></ext:UBLExtension>",
            "<ext:UBLExtension><ext:ExtensionContent></ext:ExtensionContent></ext:UBLExtension>",
            "</ext:UBLExtensions><cbc:UBLVersionID>UBL 2.1</cbc:UBLVersionID>",
            "<cbc:CustomizationID>10</cbc:CustomizationID>",
            "<cbc:ProfileExecutionID>2</cbc:ProfileExecutionID><cbc:ID>",
            number,
            "</cbc:ID><cbc:UUID schemeID=\"2\" schemeName=\"CUFE-SHA384\">",
            code,
            "</cbc:UUID><cbc:IssueDate>2024-02-15</cbc:IssueDate><cbc:IssueTime>07:43:48-05:00</cbc:IssueTime>",
            "<cbc:InvoiceTypeCode>01</cbc:InvoiceTypeCode>",
            "<cac:AccountingSupplierParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>",
            nit,
            "</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingSupplierParty>",
            "<cac:AccountingCustomerParty><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>",
            CUSTOMER,
            "</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:AccountingCustomerParty>",
            "<cac:TaxTotal><cbc:TaxAmount currencyID=\"COP\">190.00</cbc:TaxAmount><cac:TaxSubtotal>",
            "<cbc:TaxAmount currencyID=\"COP\">190.00</cbc:TaxAmount><cac:TaxCategory><cac:TaxScheme>",
            "<cbc:ID>01</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:TaxSubtotal></cac:TaxTotal>",
            "<cac:LegalMonetaryTotal><cbc:LineExtensionAmount currencyID=\"COP\">1000.00</cbc:LineExtensionAmount>",
            "<cbc:PayableAmount currencyID=\"COP\">1190.00</cbc:PayableAmount></cac:LegalMonetaryTotal>",
            "</Invoice>",
        ]
        .concat()
    };
    let draft = with_code("0");
    let input = codes::extract_code_input(&draft).expect("code input");
    with_code(&codes::invoice_code(&input.invoice_input(tech_key)))
}

/// [`unsigned_invoice`] signed with [`signing_key`] at [`signing_time`], and
/// its CUFE.
pub fn signed_invoice(nit: &str, number: &str, tech_key: &str) -> (String, String) {
    let unsigned = unsigned_invoice(nit, number, tech_key);
    let code = codes::extract_code_input(&unsigned).expect("input").uuid;
    let signed = xades::sign(&unsigned, &signing_key(), signing_time()).expect("sign");
    (signed, code)
}

/// Invoice `SETP<n>` of `nit` (CUFE keyed [`TECH_KEY`]), signed and zipped
/// as `fv<n>.xml`, and its CUFE.
pub fn signed_zip(nit: &str, n: u64) -> (Vec<u8>, String) {
    let (signed, code) = signed_invoice(nit, &format!("SETP{n}"), TECH_KEY);
    let zip =
        package::zip_single(&format!("fv{n}.xml"), signed.as_bytes(), signing_time()).expect("zip");
    (zip, code)
}

// --- the engine's side -----------------------------------------------------

/// An address in Bogotá.
pub fn address() -> Address {
    Address {
        line: "Calle 1 # 2-3".into(),
        municipality_code: "11001".into(),
        municipality_name: "Bogotá, D.C.".into(),
        department_name: "Bogotá".into(),
        department_code: "11".into(),
        postal_zone: Some("110111".into()),
        country_code: "CO".into(),
        country_name: "Colombia".into(),
    }
}

/// The sample company, NIT [`NIT`], as the issuing party.
pub fn company() -> Party {
    Party {
        id_type: "31".into(),
        id_number: NIT.into(),
        check_digit: Some(2),
        name: "Emisor Demo S.A.S.".into(),
        trade_name: Some("Emisor Demo".into()),
        email: Some("facturacion@emisor.test".into()),
        phone: Some("6015550000".into()),
        address: Some(address()),
        organization_type: OrganizationType::LegalEntity,
        tax_responsibilities: "O-13".into(),
        tax_scheme: TaxSchemeRef {
            id: "01".into(),
            name: "IVA".into(),
        },
    }
}

/// A customer company named `name` (NIT 800197268).
pub fn customer(name: &str) -> Party {
    Party {
        id_type: "31".into(),
        id_number: "800197268".into(),
        check_digit: Some(4),
        name: name.into(),
        email: Some("cliente@example.test".into()),
        address: Some(address()),
        organization_type: OrganizationType::LegalEntity,
        tax_responsibilities: "R-99-PN".into(),
        ..Party::default()
    }
}

/// The sample company's context for document 990000001 of `kind` issued at
/// `at`: testing environment, a resolution valid 2019-01-19 to 2030-01-19.
pub fn context(kind: DocumentKind, at: DateTime<FixedOffset>) -> IssuerContext {
    let prefix = match kind.root() {
        RootElement::Invoice => "SETP",
        RootElement::CreditNote => "NC",
        RootElement::DebitNote => "ND",
    };
    let date = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
    IssuerContext {
        company: company().into(),
        software: Software {
            id: "56f2ae4e-9812-4fad-9255-643fc6b2d5a4".into(),
            pin: PIN.into(),
            provider_nit: NIT.into(),
            provider_check_digit: 2,
            maker: SoftwareMaker::default(),
        },
        resolution: Resolution {
            number: "18760000001".into(),
            prefix: prefix.into(),
            from: 990000000,
            to: 995000000,
            valid_from: date(2019, 1, 19),
            valid_to: date(2030, 1, 19),
            technical_key: TECH_KEY.into(),
        },
        environment: ENVIRONMENT_TESTING,
        number: 990000001,
        issue_instant: at,
        file_consecutive: None,
    }
}
