//! SOAP 1.2 request envelopes of the authority's operations (protocol.md
//! §4.2), signed with WS-Security by [`super::wssec`].
//!
//! Layout: `soap:Envelope` declares `soap` and `wcf`; `soap:Header` declares
//! `wsa` and holds `wsse:Security`, `wsa:Action` and `wsa:To`; `soap:Body`
//! holds `wcf:<Op>` with one `wcf:<param>` child per parameter, in order.

use super::wssec::{WsSecError, WsSigner};
use super::{escape_text, ns};
use crate::authority::operation::{Operation, WCF_NS};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use chrono::{DateTime, Utc};

/// One request: an operation and its parameters (text values, in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    op: Operation,
    params: Vec<(&'static str, String)>,
}

impl Request {
    pub fn send_bill_sync(file_name: &str, zip: &[u8]) -> Self {
        Self::with_zip(Operation::SendBillSync, file_name, zip)
    }

    pub fn send_bill_async(file_name: &str, zip: &[u8]) -> Self {
        Self::with_zip(Operation::SendBillAsync, file_name, zip)
    }

    pub fn send_test_set_async(file_name: &str, zip: &[u8], test_set_id: &str) -> Self {
        let mut r = Self::with_zip(Operation::SendTestSetAsync, file_name, zip);
        r.params.push(("testSetId", test_set_id.to_string()));
        r
    }

    pub fn send_nomina_sync(zip: &[u8]) -> Self {
        Request {
            op: Operation::SendNominaSync,
            params: vec![("contentFile", B64.encode(zip))],
        }
    }

    pub fn send_event_update_status(zip: &[u8]) -> Self {
        Request {
            op: Operation::SendEventUpdateStatus,
            params: vec![("contentFile", B64.encode(zip))],
        }
    }

    pub fn get_status(track_id: &str) -> Self {
        Request {
            op: Operation::GetStatus,
            params: vec![("trackId", track_id.to_string())],
        }
    }

    pub fn get_status_zip(track_id: &str) -> Self {
        Request {
            op: Operation::GetStatusZip,
            params: vec![("trackId", track_id.to_string())],
        }
    }

    /// The events registered on the invoice of `cufe`.
    pub fn get_status_event(cufe: &str) -> Self {
        Request {
            op: Operation::GetStatusEvent,
            params: vec![("trackId", cufe.to_string())],
        }
    }

    /// The signed XML the authority keeps of an accepted document.
    pub fn get_xml_by_document_key(track_id: &str) -> Self {
        Request {
            op: Operation::GetXmlByDocumentKey,
            params: vec![("trackId", track_id.to_string())],
        }
    }

    /// A buyer's registered name and email: `identification_type` is the
    /// authority's code of the identification (13 cédula, 31 NIT…).
    pub fn get_acquirer(identification_type: &str, identification_number: &str) -> Self {
        Request {
            op: Operation::GetAcquirer,
            params: vec![
                ("identificationType", identification_type.to_string()),
                ("identificationNumber", identification_number.to_string()),
            ],
        }
    }

    /// `account_code`: issuer NIT; `account_code_t`: software provider NIT.
    pub fn get_numbering_range(
        account_code: &str,
        account_code_t: &str,
        software_code: &str,
    ) -> Self {
        Request {
            op: Operation::GetNumberingRange,
            params: vec![
                ("accountCode", account_code.to_string()),
                ("accountCodeT", account_code_t.to_string()),
                ("softwareCode", software_code.to_string()),
            ],
        }
    }

    fn with_zip(op: Operation, file_name: &str, zip: &[u8]) -> Self {
        Request {
            op,
            params: vec![
                ("fileName", file_name.to_string()),
                ("contentFile", B64.encode(zip)),
            ],
        }
    }

    pub fn operation(&self) -> Operation {
        self.op
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `soap:Body` element.
    pub fn body(&self) -> String {
        let mut body = format!("<soap:Body><wcf:{}>", self.op.name());
        for (name, value) in &self.params {
            body.push_str(&format!("<wcf:{name}>{}</wcf:{name}>", escape_text(value)));
        }
        body.push_str(&format!("</wcf:{}></soap:Body>", self.op.name()));
        body
    }

    /// The complete signed envelope addressed to `to` (the service URL).
    pub fn to_envelope(
        &self,
        to: &str,
        signer: &WsSigner,
        now: DateTime<Utc>,
    ) -> Result<String, WsSecError> {
        let header = signer.header(&self.op.action(), to, now)?;
        Ok(format!(
            "<soap:Envelope xmlns:soap=\"{soap}\" xmlns:wcf=\"{wcf}\">{header}{body}</soap:Envelope>",
            soap = ns::SOAP12,
            wcf = WCF_NS,
            body = self.body()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_carry_parameters_in_order() {
        let r = Request::send_test_set_async("z.zip", b"PK", "set-1");
        assert_eq!(
            r.body(),
            "<soap:Body><wcf:SendTestSetAsync><wcf:fileName>z.zip</wcf:fileName><wcf:contentFile>UEs=</wcf:contentFile><wcf:testSetId>set-1</wcf:testSetId></wcf:SendTestSetAsync></soap:Body>"
        );
        let r = Request::get_numbering_range("900", "800", "s&w");
        assert!(r
            .body()
            .contains("<wcf:softwareCode>s&amp;w</wcf:softwareCode>"));
        assert_eq!(Request::send_nomina_sync(b"x").param("fileName"), None);
        assert_eq!(
            Request::get_acquirer("31", "900373076").body(),
            "<soap:Body><wcf:GetAcquirer><wcf:identificationType>31</wcf:identificationType><wcf:identificationNumber>900373076</wcf:identificationNumber></wcf:GetAcquirer></soap:Body>"
        );
    }

    #[test]
    fn envelope_is_well_formed_and_addressed() {
        let signer = crate::fixtures::signer();
        for req in [
            Request::send_bill_sync("a.zip", b"1"),
            Request::send_bill_async("a.zip", b"1"),
            Request::send_event_update_status(b"1"),
            Request::get_status_zip("k"),
        ] {
            let xml = req
                .to_envelope("http://h/svc", &signer, Utc::now())
                .expect("env");
            let doc = roxmltree::Document::parse(&xml).expect("well formed");
            let action = doc
                .descendants()
                .find(|n| n.has_tag_name((ns::WSA, "Action")))
                .and_then(|n| n.text());
            assert_eq!(action, Some(req.operation().action().as_str()));
            let op = doc
                .descendants()
                .find(|n| n.has_tag_name((WCF_NS, req.operation().name())));
            assert!(op.is_some());
        }
    }
}
