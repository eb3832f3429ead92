//! The customer object of spec 2.6 as it is sent: inside every unified
//! request and to `POST /clientes`.

use emisor_store::CustomerInput;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::mapping::codes::department_name;
use crate::engine::codes::nit_check_digit;
use crate::engine::limits;
use crate::engine::validate::text_problem;
use crate::http::error::FieldError;
use crate::http::json::object;
use crate::issuing::buyers::BuyerId;

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema, Default)]
pub struct Code {
    pub code: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema, Default)]
pub struct Municipality {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 10)]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100)]
    pub name: Option<String>,
}

/// Customer as sent (`POST /clientes` and inside documents).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CustomerRequest {
    #[schema(max_length = 20)]
    pub identification_number: String,
    /// Required unless `completar_adquiriente` is true.
    #[serde(default)]
    #[schema(max_length = 450)]
    pub name: String,
    /// Required unless `completar_adquiriente` is true.
    #[serde(default)]
    #[schema(max_length = 254)]
    pub email: String,
    /// Documents only, never POS receipts: the buyer's name and email, when
    /// left out, are filled from the authority's register
    /// (`GetAcquirer`, Res. 000202/2025) by `type_document_identification`
    /// (then required) and `identification_number`, before anything is
    /// issued; an unknown buyer is a 404 `NOT_FOUND`, the authority out of
    /// reach a 503 `TAX_UNAVAILABLE`, and nothing is issued.
    #[serde(default)]
    pub completar_adquiriente: bool,
    /// `13` CC, `31` NIT, `22` CE, `41` Passport (and the authority's other codes).
    #[serde(default, deserialize_with = "object::option")]
    pub type_document_identification: Option<Code>,
    /// `1` legal entity, `2` natural person.
    #[serde(default, deserialize_with = "object::option")]
    pub type_organization: Option<Code>,
    #[serde(default)]
    #[schema(max_length = 450)]
    pub address: Option<String>,
    #[serde(default, deserialize_with = "object::option")]
    pub municipality: Option<Municipality>,
    #[serde(default)]
    pub country_code: Option<String>,
    #[serde(default)]
    #[schema(max_length = 50)]
    pub phone: Option<String>,
}

/// Identification types of the authority (protocol.md §7.6).
const ID_TYPES: &[&str] = &[
    "11", "12", "13", "21", "22", "31", "41", "42", "47", "48", "50", "91",
];

fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Five digits whose first two name a department (DIVIPOLA).
fn is_municipality_code(code: &str) -> bool {
    code.len() == 5
        && code.bytes().all(|b| b.is_ascii_digit())
        && department_name(&code[..2]).is_some()
}

impl CustomerRequest {
    /// Checks the fields; `prefix` is where the object sits (`customer.`).
    pub fn validate(&self, prefix: &str) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let f = |name: &str| format!("{prefix}{name}");
        let id = self.identification_number.trim();
        if id.is_empty() {
            errors.push(FieldError::new(f("identification_number"), "is required"));
        } else if id.len() > 20 || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            errors.push(FieldError::new(
                f("identification_number"),
                "up to 20 letters, digits or dashes",
            ));
        }
        let completing = self.completar_adquiriente;
        if self.name.trim().is_empty() {
            if !completing {
                errors.push(FieldError::new(f("name"), "is required"));
            }
        } else if self.name.chars().count() > limits::NAME {
            errors.push(FieldError::new(
                f("name"),
                format!("at most {} characters", limits::NAME),
            ));
        }
        if self.email.trim().is_empty() {
            if !completing {
                errors.push(FieldError::new(f("email"), "is required"));
            }
        } else if !looks_like_email(self.email.trim()) {
            errors.push(FieldError::new(f("email"), "is not an email address"));
        }
        if let Some(t) = &self.type_document_identification {
            if !ID_TYPES.contains(&t.code.as_str()) {
                errors.push(FieldError::new(
                    f("type_document_identification.code"),
                    format!("unknown identification type `{}`", t.code),
                ));
            } else if t.code == "31" && nit_check_digit(id).is_none() {
                errors.push(FieldError::new(
                    f("identification_number"),
                    "a NIT has digits only, without check digit",
                ));
            }
        }
        if completing
            && !errors.iter().any(|e| {
                e.field.starts_with(&f("identification_number"))
                    || e.field.starts_with(&f("type_document_identification"))
            })
        {
            match &self.type_document_identification {
                None => errors.push(FieldError::new(
                    f("type_document_identification"),
                    "is required with completar_adquiriente",
                )),
                Some(t) => {
                    if let Err(e) = BuyerId::parse(&t.code, id) {
                        errors.push(FieldError::new(f("identification_number"), e.to_string()));
                    }
                }
            }
        }
        if let Some(o) = &self.type_organization {
            if !matches!(o.code.as_str(), "1" | "2") {
                errors.push(FieldError::new(
                    f("type_organization.code"),
                    "must be `1` or `2`",
                ));
            }
        }
        if let Some(c) = &self.country_code {
            if c.len() != 2 || !c.chars().all(|ch| ch.is_ascii_uppercase()) {
                errors.push(FieldError::new(
                    f("country_code"),
                    "ISO 3166-1 alpha-2, e.g. `CO`",
                ));
            }
        }
        let municipality = self.municipality.as_ref();
        let municipality_code = municipality.and_then(|m| m.code.as_deref()).map(str::trim);
        let colombian = self.country_code.as_deref().is_none_or(|c| c == "CO");
        if let Some(code) = municipality_code.filter(|c| colombian && !c.is_empty()) {
            if !is_municipality_code(code) {
                errors.push(FieldError::new(
                    f("municipality.code"),
                    "must be the 5-digit DIVIPOLA municipality code (e.g. 11001)",
                ));
            }
        }
        // Everything here can end up in a document's XML.
        let texts = [
            (
                "identification_number",
                Some(self.identification_number.as_str()),
                20,
            ),
            ("name", Some(self.name.as_str()), limits::NAME),
            ("email", Some(self.email.as_str()), 254),
            ("address", self.address.as_deref(), limits::NAME),
            ("phone", self.phone.as_deref(), 50),
            ("municipality.code", municipality_code, 10),
            (
                "municipality.name",
                municipality.and_then(|m| m.name.as_deref()),
                100,
            ),
        ];
        for (name, value, max) in texts {
            let Some(value) = value else { continue };
            // The field's name is only made for a problem (the usual
            // customer has none).
            let Some(problem) = text_problem(value, max) else {
                continue;
            };
            let field = f(name);
            if !errors.iter().any(|e| e.field == field) {
                errors.push(FieldError::new(field, problem));
            }
        }
        errors
    }

    pub fn to_input(&self) -> CustomerInput {
        CustomerInput {
            identification_number: self.identification_number.trim().to_string(),
            name: self.name.trim().to_string(),
            email: self.email.trim().to_string(),
            id_type_code: self
                .type_document_identification
                .as_ref()
                .map(|c| c.code.clone()),
            organization_type_code: self.type_organization.as_ref().map(|c| c.code.clone()),
            address: self.address.clone(),
            municipality_code: self.municipality.as_ref().and_then(|m| m.code.clone()),
            municipality_name: self.municipality.as_ref().and_then(|m| m.name.clone()),
            country_code: self.country_code.clone(),
            phone: self.phone.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn customer() -> CustomerRequest {
        serde_json::from_value(serde_json::json!({
            "identification_number": "900123456", "name": "Cliente S.A.S.",
            "email": "c@example.com", "type_document_identification": {"code": "31"},
            "address": "Calle 1", "phone": "3001234567",
            "municipality": {"code": "11001", "name": "Bogotá"}
        }))
        .unwrap()
    }

    fn fields(c: &CustomerRequest) -> Vec<String> {
        c.validate("").into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn text_that_would_go_into_a_document_is_checked_like_a_documents() {
        assert!(fields(&customer()).is_empty());
        let mut c = customer();
        c.address = Some("Calle \u{FFFE}".into());
        c.phone = Some("3".repeat(100_000));
        c.municipality = Some(Municipality {
            code: Some("abc".into()),
            name: Some("nul \u{0}".into()),
        });
        assert_eq!(
            fields(&c),
            ["municipality.code", "address", "phone", "municipality.name"]
        );
        // Outside Colombia the municipality code is the other country's own.
        c = customer();
        c.country_code = Some("US".into());
        c.type_document_identification = Some(Code { code: "50".into() });
        c.municipality = Some(Municipality {
            code: Some("NY".into()),
            name: None,
        });
        assert!(fields(&c).is_empty(), "{:?}", fields(&c));
    }

    /// `completar_adquiriente`: name and email may be left out, the
    /// identification type is required and checked as the look-up checks it.
    #[test]
    fn completing_the_buyer_needs_an_identification_the_authority_takes() {
        let mut c = customer();
        c.name = String::new();
        c.email = String::new();
        assert_eq!(fields(&c), ["name", "email"]);
        c.completar_adquiriente = true;
        assert!(fields(&c).is_empty(), "{:?}", fields(&c));
        c.type_document_identification = None;
        assert_eq!(fields(&c), ["type_document_identification"]);
        c.type_document_identification = Some(Code { code: "13".into() });
        c.identification_number = "AB-12".into();
        assert_eq!(fields(&c), ["identification_number"]);
    }
}
