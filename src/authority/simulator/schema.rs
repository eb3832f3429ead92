//! The XML Schema of the service's messages, as the authority's WCF service
//! publishes it (protocol.md §4.4): the operations' wrapper elements in the
//! service namespace and the data contracts their results are typed with
//! (`DianResponse`, `ArrayOfstring`, `UploadDocumentResponse`,
//! `NumberRangeResponseList`, `EventResponse`…).
//!
//! WCF serves one schema document per namespace at `?xsd=xsdN`; the numbers
//! here are the authority's (its xsd1, xsd2 and xsd10 hold contracts of
//! operations the simulator does not implement), except `EventResponse`'s
//! (xsd9 here) and `AdquirienteResponse`'s (xsd11 here), which no source we
//! have gives.

use crate::authority::operation::{Operation, WCF_NS};
use crate::authority::soap::{escape_attr, ns};

const XS: &str = "http://www.w3.org/2001/XMLSchema";

/// Prefixes every schema document declares, for the types it refers to.
const PREFIXES: [(&str, &str); 9] = [
    ("wcf", WCF_NS),
    ("dr", ns::DIAN_RESPONSE),
    ("arr", ns::ARRAYS),
    ("ud", ns::UPLOAD_RESPONSE),
    ("tr", ns::TRACK_ID),
    ("nrl", ns::NUMBER_RANGE_LIST),
    ("nr", ns::NUMBER_RANGE),
    ("ev", ns::EVENT_RESPONSE),
    ("ac", ns::ACQUIRER_RESPONSE),
];

/// One schema document: its `?xsd=xsdN` number, target namespace, the
/// namespaces it imports and its declarations.
#[derive(Debug, Clone)]
pub struct SchemaDoc {
    pub number: u8,
    pub namespace: &'static str,
    imports: &'static [&'static str],
    body: String,
}

/// The data contract an operation's `…Result` is typed with (a qualified
/// name with the prefixes of [`PREFIXES`]).
pub fn result_type(op: Operation) -> &'static str {
    match op {
        Operation::SendBillSync
        | Operation::GetStatus
        | Operation::SendNominaSync
        | Operation::SendEventUpdateStatus
        | Operation::GetStatusEvent => "dr:DianResponse",
        Operation::GetStatusZip => "dr:ArrayOfDianResponse",
        Operation::SendBillAsync | Operation::SendTestSetAsync => "ud:UploadDocumentResponse",
        Operation::GetNumberingRange => "nrl:NumberRangeResponseList",
        Operation::GetXmlByDocumentKey => "ev:EventResponse",
        Operation::GetAcquirer => "ac:AdquirienteResponse",
    }
}

/// A data-contract member: optional, and nillable unless a value type.
fn member(name: &str, ty: &str) -> String {
    let nillable = if matches!(ty, "xs:boolean" | "xs:long") {
        ""
    } else {
        " nillable=\"true\""
    };
    format!("<xs:element minOccurs=\"0\" name=\"{name}\"{nillable} type=\"{ty}\"/>")
}

/// A complex type and, as WCF publishes every contract, a global element of it.
fn contract(name: &str, members: &[(&str, &str)]) -> String {
    let members: String = members.iter().map(|(n, t)| member(n, t)).collect();
    format!(
        "<xs:complexType name=\"{name}\"><xs:sequence>{members}</xs:sequence></xs:complexType>\
         <xs:element name=\"{name}\" nillable=\"true\" type=\"tns:{name}\"/>"
    )
}

/// WCF's collection contract `ArrayOf<item>`: repeated `<item>` elements.
fn array_of(item: &str, item_type: &str) -> String {
    format!(
        "<xs:complexType name=\"ArrayOf{item}\"><xs:sequence>\
         <xs:element minOccurs=\"0\" maxOccurs=\"unbounded\" name=\"{item}\" nillable=\"true\" type=\"{item_type}\"/>\
         </xs:sequence></xs:complexType>\
         <xs:element name=\"ArrayOf{item}\" nillable=\"true\" type=\"tns:ArrayOf{item}\"/>"
    )
}

/// The operations' request and response elements.
fn service_body() -> String {
    let mut out = String::new();
    for op in Operation::ALL {
        let name = op.name();
        let params: Vec<(&str, &str)> = op
            .parameters()
            .iter()
            .map(|p| {
                let ty = if *p == "contentFile" {
                    "xs:base64Binary"
                } else {
                    "xs:string"
                };
                (*p, ty)
            })
            .collect();
        let params: String = params.iter().map(|(n, t)| member(n, t)).collect();
        out.push_str(&format!(
            "<xs:element name=\"{name}\"><xs:complexType><xs:sequence>{params}</xs:sequence></xs:complexType></xs:element>\
             <xs:element name=\"{name}Response\"><xs:complexType><xs:sequence>{}</xs:sequence></xs:complexType></xs:element>",
            member(&format!("{name}Result"), result_type(op))
        ));
    }
    out
}

/// Every schema document the simulator serves, in number order.
pub fn documents() -> Vec<SchemaDoc> {
    vec![
        SchemaDoc {
            number: 0,
            namespace: WCF_NS,
            imports: &[
                ns::DIAN_RESPONSE,
                ns::UPLOAD_RESPONSE,
                ns::NUMBER_RANGE_LIST,
                ns::EVENT_RESPONSE,
                ns::ACQUIRER_RESPONSE,
            ],
            body: service_body(),
        },
        SchemaDoc {
            number: 3,
            namespace: ns::DIAN_RESPONSE,
            imports: &[ns::ARRAYS],
            body: contract(
                "DianResponse",
                &[
                    ("ErrorMessage", "arr:ArrayOfstring"),
                    ("IsValid", "xs:boolean"),
                    ("StatusCode", "xs:string"),
                    ("StatusDescription", "xs:string"),
                    ("StatusMessage", "xs:string"),
                    ("XmlBase64Bytes", "xs:base64Binary"),
                    ("XmlBytes", "xs:base64Binary"),
                    ("XmlDocumentKey", "xs:string"),
                    ("XmlFileName", "xs:string"),
                ],
            ) + &array_of("DianResponse", "tns:DianResponse"),
        },
        SchemaDoc {
            number: 4,
            namespace: ns::ARRAYS,
            imports: &[],
            body: array_of("string", "xs:string"),
        },
        SchemaDoc {
            number: 5,
            namespace: ns::UPLOAD_RESPONSE,
            imports: &[ns::TRACK_ID],
            body: contract(
                "UploadDocumentResponse",
                &[
                    ("ErrorMessageList", "tr:ArrayOfXmlParamsResponseTrackId"),
                    ("ZipKey", "xs:string"),
                ],
            ),
        },
        SchemaDoc {
            number: 6,
            namespace: ns::TRACK_ID,
            imports: &[],
            body: contract(
                "XmlParamsResponseTrackId",
                &[
                    ("DocumentKey", "xs:string"),
                    ("ProcessedMessage", "xs:string"),
                    ("SenderCode", "xs:string"),
                    ("Success", "xs:boolean"),
                    ("XmlFileName", "xs:string"),
                ],
            ) + &array_of("XmlParamsResponseTrackId", "tns:XmlParamsResponseTrackId"),
        },
        SchemaDoc {
            number: 7,
            namespace: ns::NUMBER_RANGE_LIST,
            imports: &[ns::NUMBER_RANGE],
            body: contract(
                "NumberRangeResponseList",
                &[
                    ("OperationCode", "xs:string"),
                    ("OperationDescription", "xs:string"),
                    ("ResponseList", "nr:ArrayOfNumberRangeResponse"),
                ],
            ),
        },
        SchemaDoc {
            number: 8,
            namespace: ns::NUMBER_RANGE,
            imports: &[],
            body: contract(
                "NumberRangeResponse",
                &[
                    ("ResolutionNumber", "xs:string"),
                    ("ResolutionDate", "xs:string"),
                    ("Prefix", "xs:string"),
                    ("FromNumber", "xs:long"),
                    ("ToNumber", "xs:long"),
                    ("ValidDateFrom", "xs:string"),
                    ("ValidDateTo", "xs:string"),
                    ("TechnicalKey", "xs:string"),
                ],
            ) + &array_of("NumberRangeResponse", "tns:NumberRangeResponse"),
        },
        SchemaDoc {
            number: 9,
            namespace: ns::EVENT_RESPONSE,
            imports: &[],
            // The authority's `Gosocket.Dian.Services.Utils.EventResponse`.
            body: contract(
                "EventResponse",
                &[
                    ("Code", "xs:string"),
                    ("Message", "xs:string"),
                    ("XmlBytesBase64", "xs:string"),
                ],
            ),
        },
        SchemaDoc {
            number: 11,
            namespace: ns::ACQUIRER_RESPONSE,
            imports: &[],
            // The authority's `Gosocket.Dian.Services.Utils.Common.AdquirienteResponse`.
            body: contract(
                "AdquirienteResponse",
                &[
                    ("Message", "xs:string"),
                    ("ReceiverEmail", "xs:string"),
                    ("ReceiverName", "xs:string"),
                    ("StatusCode", "xs:string"),
                ],
            ),
        },
    ]
}

/// The schema document `xsdN`, if the simulator serves it.
pub fn document(number: u8) -> Option<SchemaDoc> {
    documents().into_iter().find(|d| d.number == number)
}

/// The number of the document whose target namespace is `namespace`.
fn number_of(namespace: &str) -> Option<u8> {
    documents()
        .iter()
        .find(|d| d.namespace == namespace)
        .map(|d| d.number)
}

impl SchemaDoc {
    /// The `xs:schema` element; each import carries the `schemaLocation`
    /// that `location` gives for its document number, or none.
    pub fn schema_element(&self, location: &dyn Fn(u8) -> Option<String>) -> String {
        let mut out = format!(
            "<xs:schema elementFormDefault=\"qualified\" targetNamespace=\"{}\" xmlns:xs=\"{XS}\" xmlns:tns=\"{}\"",
            self.namespace, self.namespace
        );
        for (prefix, uri) in PREFIXES {
            out.push_str(&format!(" xmlns:{prefix}=\"{uri}\""));
        }
        out.push('>');
        for import in self.imports {
            let at = number_of(import)
                .and_then(location)
                .map(|l| format!(" schemaLocation=\"{}\"", escape_attr(&l)))
                .unwrap_or_default();
            out.push_str(&format!("<xs:import{at} namespace=\"{import}\"/>"));
        }
        out.push_str(&self.body);
        out.push_str("</xs:schema>");
        out
    }

    /// The document served at `?xsd=xsdN`.
    pub fn standalone(&self, location: &dyn Fn(u8) -> Option<String>) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n{}",
            self.schema_element(location)
        )
    }
}
