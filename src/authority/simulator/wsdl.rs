//! The service description served at `/WcfDianCustomerServices.svc?wsdl`:
//! WSDL 1.1, document/literal, SOAP 1.2 binding, a WS-Addressing action on
//! every operation, the simulator's own address, and the authority's types
//! ([`super::schema`]). As WCF does, `?wsdl` imports the schema documents
//! from `?xsd=xsdN` and `?singleWsdl` carries them inline.

use super::schema;
use crate::authority::operation::{Operation, WCF_NS};
use crate::authority::soap::escape_attr;

/// Where the WSDL's types come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Types {
    /// Imported from `<address>?xsd=xsdN` (`?wsdl`).
    Imported,
    /// Inline (`?singleWsdl`).
    Inline,
}

/// The URL of schema document `n` of the service at `address`.
pub fn xsd_location(address: &str, n: u8) -> String {
    format!("{address}?xsd=xsd{n}")
}

fn types_section(address: &str, types: Types) -> String {
    let docs = schema::documents();
    match types {
        Types::Imported => {
            let imports: String = docs
                .iter()
                .map(|d| {
                    format!(
                        "<xs:import schemaLocation=\"{}\" namespace=\"{}\"/>",
                        escape_attr(&xsd_location(address, d.number)),
                        d.namespace
                    )
                })
                .collect();
            format!("<xs:schema targetNamespace=\"{WCF_NS}/Imports\">{imports}</xs:schema>")
        }
        Types::Inline => docs.iter().map(|d| d.schema_element(&|_| None)).collect(),
    }
}

/// The WSDL with `address` (the service URL) as the endpoint.
pub fn wsdl(address: &str, types: Types) -> String {
    let types = types_section(address, types);
    let address = escape_attr(address);
    let mut messages = String::new();
    let mut port_ops = String::new();
    let mut binding_ops = String::new();
    for op in Operation::ALL {
        let name = op.name();
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
            "<wsdl:types>{types}</wsdl:types>",
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
mod tests {
    use super::*;

    const ADDRESS: &str = "http://127.0.0.1:9/WcfDianCustomerServices.svc";
    const XS: &str = "http://www.w3.org/2001/XMLSchema";

    #[test]
    fn every_operation_is_bound_with_its_action() {
        for types in [Types::Imported, Types::Inline] {
            let x = wsdl(ADDRESS, types);
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
            assert_eq!(address, Some(ADDRESS));
        }
    }

    #[test]
    fn types_are_imported_from_the_service_or_inline() {
        let imported = wsdl(ADDRESS, Types::Imported);
        let doc = roxmltree::Document::parse(&imported).expect("xml");
        let locations: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name((XS, "import")))
            .filter_map(|n| n.attribute("schemaLocation"))
            .collect();
        let expected: Vec<String> = schema::documents()
            .iter()
            .map(|d| xsd_location(ADDRESS, d.number))
            .collect();
        assert_eq!(locations, expected);

        let inline = wsdl(ADDRESS, Types::Inline);
        let doc = roxmltree::Document::parse(&inline).expect("xml");
        let namespaces: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name((XS, "schema")))
            .filter_map(|n| n.attribute("targetNamespace"))
            .collect();
        let expected: Vec<&str> = schema::documents().iter().map(|d| d.namespace).collect();
        assert_eq!(namespaces, expected);
        // Inline schemas import each other by namespace alone.
        assert!(!doc
            .descendants()
            .any(|n| n.has_tag_name((XS, "import")) && n.attribute("schemaLocation").is_some()));
    }
}
