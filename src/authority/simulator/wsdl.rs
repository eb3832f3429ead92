//! The service description served at `/WcfDianCustomerServices.svc?wsdl`:
//! WSDL 1.1, document/literal, SOAP 1.2 binding, a WS-Addressing action on
//! every operation, and the simulator's own address.

use crate::authority::operation::{Operation, WCF_NS};
use crate::authority::soap::escape_attr;

fn param_type(name: &str) -> &'static str {
    if name == "contentFile" {
        "xs:base64Binary"
    } else {
        "xs:string"
    }
}

/// The WSDL with `address` (the service URL) as the endpoint.
pub fn wsdl(address: &str) -> String {
    let address = escape_attr(address);
    let mut types = String::new();
    let mut messages = String::new();
    let mut port_ops = String::new();
    let mut binding_ops = String::new();
    for op in Operation::ALL {
        let name = op.name();
        types.push_str(&format!(
            "<xs:element name=\"{name}\"><xs:complexType><xs:sequence>"
        ));
        for p in op.parameters() {
            types.push_str(&format!(
                "<xs:element minOccurs=\"0\" name=\"{p}\" nillable=\"true\" type=\"{}\"/>",
                param_type(p)
            ));
        }
        types.push_str("</xs:sequence></xs:complexType></xs:element>");
        types.push_str(&format!(
            "<xs:element name=\"{name}Response\"><xs:complexType><xs:sequence><xs:element minOccurs=\"0\" name=\"{name}Result\" nillable=\"true\" type=\"xs:anyType\"/></xs:sequence></xs:complexType></xs:element>"
        ));
        messages.push_str(&format!(
            "<wsdl:message name=\"IWcfDianCustomerServices_{name}_InputMessage\"><wsdl:part name=\"parameters\" element=\"tns:{name}\"/></wsdl:message>\
             <wsdl:message name=\"IWcfDianCustomerServices_{name}_OutputMessage\"><wsdl:part name=\"parameters\" element=\"tns:{name}Response\"/></wsdl:message>"
        ));
        port_ops.push_str(&format!(
            "<wsdl:operation name=\"{name}\">\
             <wsdl:input wsam:Action=\"{a}\" wsaw:Action=\"{a}\" message=\"tns:IWcfDianCustomerServices_{name}_InputMessage\"/>\
             <wsdl:output wsam:Action=\"{r}\" wsaw:Action=\"{r}\" message=\"tns:IWcfDianCustomerServices_{name}_OutputMessage\"/>\
             </wsdl:operation>",
            a = op.action(),
            r = op.response_action()
        ));
        binding_ops.push_str(&format!(
            "<wsdl:operation name=\"{name}\"><soap12:operation soapAction=\"{a}\" style=\"document\"/>\
             <wsdl:input><soap12:body use=\"literal\"/></wsdl:input><wsdl:output><soap12:body use=\"literal\"/></wsdl:output></wsdl:operation>",
            a = op.action()
        ));
    }
    format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n",
            "<wsdl:definitions name=\"WcfDianCustomerServices\" targetNamespace=\"{wcf}\"",
            " xmlns:wsdl=\"http://schemas.xmlsoap.org/wsdl/\"",
            " xmlns:soap12=\"http://schemas.xmlsoap.org/wsdl/soap12/\"",
            " xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"",
            " xmlns:wsam=\"http://www.w3.org/2007/05/addressing/metadata\"",
            " xmlns:wsaw=\"http://www.w3.org/2006/05/addressing/wsdl\"",
            " xmlns:wsa10=\"http://www.w3.org/2005/08/addressing\"",
            " xmlns:tns=\"{wcf}\">",
            "<wsdl:types><xs:schema elementFormDefault=\"qualified\" targetNamespace=\"{wcf}\">{types}</xs:schema></wsdl:types>",
            "{messages}",
            "<wsdl:portType name=\"IWcfDianCustomerServices\">{port_ops}</wsdl:portType>",
            "<wsdl:binding name=\"WSHttpBinding_IWcfDianCustomerServices\" type=\"tns:IWcfDianCustomerServices\">",
            "<soap12:binding transport=\"http://schemas.xmlsoap.org/soap/http\"/>",
            "<wsaw:UsingAddressing/>",
            "{binding_ops}</wsdl:binding>",
            "<wsdl:service name=\"WcfDianCustomerServices\">",
            "<wsdl:port name=\"WSHttpBinding_IWcfDianCustomerServices\" binding=\"tns:WSHttpBinding_IWcfDianCustomerServices\">",
            "<soap12:address location=\"{address}\"/>",
            "<wsa10:EndpointReference><wsa10:Address>{address}</wsa10:Address></wsa10:EndpointReference>",
            "</wsdl:port></wsdl:service></wsdl:definitions>"
        ),
        wcf = WCF_NS,
        types = types,
        messages = messages,
        port_ops = port_ops,
        binding_ops = binding_ops,
        address = address,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_bound_with_its_action() {
        let x = wsdl("http://127.0.0.1:9/WcfDianCustomerServices.svc");
        let doc = roxmltree::Document::parse(&x).expect("xml");
        const SOAP12: &str = "http://schemas.xmlsoap.org/wsdl/soap12/";
        for op in Operation::ALL {
            assert!(doc
                .descendants()
                .any(|n| n.has_tag_name((SOAP12, "operation"))
                    && n.attribute("soapAction") == Some(op.action().as_str())));
        }
        let address = doc
            .descendants()
            .find(|n| n.has_tag_name((SOAP12, "address")))
            .and_then(|n| n.attribute("location"));
        assert_eq!(
            address,
            Some("http://127.0.0.1:9/WcfDianCustomerServices.svc")
        );
    }
}
