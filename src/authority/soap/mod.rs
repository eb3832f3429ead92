//! SOAP 1.2 messages of the authority's service: signed requests
//! ([`envelope`], [`wssec`]) and the parsing of answers ([`response`]).

pub mod envelope;
pub mod response;
pub mod wssec;

/// Namespaces used on the wire.
pub mod ns {
    pub const SOAP12: &str = "http://www.w3.org/2003/05/soap-envelope";
    pub const WSA: &str = "http://www.w3.org/2005/08/addressing";
    pub const WSSE: &str =
        "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
    pub const WSU: &str =
        "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
    pub const DS: &str = "http://www.w3.org/2000/09/xmldsig#";
    pub const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
    pub const RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
    pub const SHA256: &str = "http://www.w3.org/2001/04/xmlenc#sha256";
    pub const BASE64_BINARY: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary";
    pub const X509V3: &str =
        "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3";
    pub const DIAN_RESPONSE: &str = "http://schemas.datacontract.org/2004/07/DianResponse";
    pub const UPLOAD_RESPONSE: &str =
        "http://schemas.datacontract.org/2004/07/UploadDocumentResponse";
    pub const TRACK_ID: &str = "http://schemas.datacontract.org/2004/07/XmlParamsResponseTrackId";
    pub const NUMBER_RANGE_LIST: &str =
        "http://schemas.datacontract.org/2004/07/NumberRangeResponseList";
    pub const NUMBER_RANGE: &str = "http://schemas.datacontract.org/2004/07/NumberRangeResponse";
    pub const EVENT_RESPONSE: &str = "http://schemas.datacontract.org/2004/07/EventResponse";
    /// `AdquirienteResponse` of GetAcquirer.
    pub const ACQUIRER_RESPONSE: &str =
        "http://schemas.datacontract.org/2004/07/Gosocket.Dian.Services.Utils.Common";
    pub const ARRAYS: &str = "http://schemas.microsoft.com/2003/10/Serialization/Arrays";
    pub const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";
}

/// SOAP 1.2 content type with the action parameter (protocol.md §4.1).
pub fn content_type(action: &str) -> String {
    format!("application/soap+xml;charset=UTF-8;action=\"{action}\"")
}

/// Escapes text content the way canonical XML writes it (`&`, `<`, `>`, CR).
pub fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes an attribute value the way canonical XML writes it.
pub fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_c14n() {
        assert_eq!(escape_text("a&b<c>d\"e\r"), "a&amp;b&lt;c&gt;d\"e&#xD;");
        assert_eq!(
            escape_attr("a&b<c>d\"e\t\n"),
            "a&amp;b&lt;c>d&quot;e&#x9;&#xA;"
        );
        assert!(content_type("urn:x").starts_with("application/soap+xml;charset=UTF-8;action="));
    }
}
