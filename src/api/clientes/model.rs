//! The customer object of spec 2.6 as `/clientes` answers it; as it is
//! sent, it is part of the unified request
//! ([`CustomerRequest`](crate::api::invoice_request::customer::CustomerRequest)).

use emisor_store::Customer;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::invoice_request::customer::{Code, Municipality};
use crate::engine::codes::nit_check_digit;

/// Customer as answered: the request's shape plus id, check digit and times.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CustomerResponse {
    pub id: u64,
    pub identification_number: String,
    /// NIT check digit, when the identification is a NIT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dv: Option<u8>,
    pub name: String,
    pub email: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_document_identification: Option<Code>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_organization: Option<Code>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub municipality: Option<Municipality>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Customer> for CustomerResponse {
    fn from(c: Customer) -> Self {
        let dv = match c.id_type_code.as_deref() {
            Some("31") => nit_check_digit(&c.identification_number),
            _ => None,
        };
        let municipality =
            (c.municipality_code.is_some() || c.municipality_name.is_some()).then(|| {
                Municipality {
                    code: c.municipality_code.clone(),
                    name: c.municipality_name.clone(),
                }
            });
        CustomerResponse {
            id: c.id,
            dv,
            identification_number: c.identification_number,
            name: c.name,
            email: c.email,
            type_document_identification: c.id_type_code.map(|code| Code { code }),
            type_organization: c.organization_type_code.map(|code| Code { code }),
            address: c.address,
            municipality,
            country_code: c.country_code,
            phone: c.phone,
            created_at: c
                .created_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            updated_at: c
                .updated_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }
}
