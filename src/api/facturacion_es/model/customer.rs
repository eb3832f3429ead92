//! `cliente` (`proveedor` on a support document): the customer read into
//! the unified request's, identification type and NIT check digit checked.

use serde_json::{Map, Value};

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use super::route::is_support;
use crate::api::invoice_request::customer::{Code, CustomerRequest, Municipality};
use crate::engine::codes::nit_check_digit;
use crate::engine::model::DocumentKind;

/// The document's customer (or vendor); a POS receipt without one is for
/// the final consumer.
pub(super) fn read_party(
    top: &Obj<'_>,
    kind: DocumentKind,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<CustomerRequest> {
    let customer_names: &[&'static str] = if is_support(kind) {
        &["cliente", "proveedor"]
    } else {
        &["cliente"]
    };
    Ok(match top.object(customer_names, p)? {
        Some((name, map)) => {
            names.set("customer", name);
            read_customer(map, name, names, p)?
        }
        None if kind == DocumentKind::Pos => final_consumer(),
        None => {
            p.push("cliente", "es obligatorio");
            empty_customer()
        }
    })
}

/// The customer (or vendor) at `path`.
fn read_customer(
    map: &Map<String, Value>,
    path: &'static str,
    names: &mut Names,
    p: &mut Problems,
) -> TypeResult<CustomerRequest> {
    let c = Obj { map, path };
    // With `completar_adquiriente`, name and email may be left out: the
    // authority's register fills them.
    let completing = c
        .boolean(&["completar_adquiriente"], p)?
        .is_some_and(|(_, b)| b);
    names.set(
        "customer.completar_adquiriente",
        c.at("completar_adquiriente"),
    );
    let mut required = |found: Option<(&'static str, String)>,
                        main: &'static str,
                        unified: &str,
                        optional: bool,
                        p: &mut Problems| {
        match found {
            Some((name, v)) => {
                names.set(format!("customer.{unified}"), c.at(name));
                if v.trim().is_empty() && !optional {
                    p.push(c.at(name), "es obligatorio");
                }
                v
            }
            None => {
                names.set(format!("customer.{unified}"), c.at(main));
                if !optional {
                    p.push(c.at(main), "es obligatorio");
                }
                String::new()
            }
        }
    };
    let name = c
        .text(&["nombre", "razon_social"], p)?
        .map(|(n, v)| (n, v.to_string()));
    let name = required(name, "nombre", "name", completing, p);
    let email = c
        .text(&["correo", "correo_electronico", "email"], p)?
        .map(|(n, v)| (n, v.to_string()));
    let email = required(email, "correo", "email", completing, p);
    let number = c.code(&["numero_identificacion", "nit", "cedula"], p)?;
    let used_number_name = number.as_ref().map(|(n, _)| *n);
    let number = required(
        number,
        "numero_identificacion",
        "identification_number",
        false,
        p,
    );

    let id_type = match c.code(&["tipo_documento"], p)? {
        Some((name, t)) => match id_type_code(&t) {
            Some(code) => Some(code.to_string()),
            None => {
                p.push(
                    c.at(name),
                    "tipo de identificación desconocido: use el código (13, 31, 22, 41 ...) o el nombre (CC, NIT, CE, PASAPORTE, TI, RC, TE, DIE, PEP, PPT, NIT_EXTRANJERO, NUIP)",
                );
                None
            }
        },
        None => match used_number_name {
            Some("nit") => Some("31".to_string()),
            Some("cedula") => Some("13".to_string()),
            _ => None,
        },
    };
    names.set(
        "customer.type_document_identification.code",
        c.at("tipo_documento"),
    );

    // A NIT: dots and spaces out, a check digit after a dash checked.
    let mut number = number.trim().to_string();
    if id_type.as_deref() == Some("31") {
        number.retain(|ch| ch != '.' && ch != ' ');
        let field = c.at(used_number_name.unwrap_or("numero_identificacion"));
        let mut given_dv = None;
        if let Some((n, dv)) = number.split_once('-') {
            given_dv = Some((field.clone(), dv.to_string()));
            number = n.to_string();
        }
        if let Some((name, dv)) = c.code(&["dv", "digito_verificacion"], p)? {
            given_dv = Some((c.at(name), dv));
        }
        if let Some((field, dv)) = given_dv {
            match nit_check_digit(&number) {
                Some(computed) if dv.trim() == computed.to_string() => {}
                Some(computed) => p.push(
                    field,
                    format!("el dígito de verificación {dv} no corresponde al NIT {number} (es {computed})"),
                ),
                None => {}
            }
        }
    }

    let organization = match c.code(&["tipo_organizacion"], p)? {
        Some((name, o)) => {
            let code = match o.to_ascii_lowercase().as_str() {
                "1" | "juridica" | "persona_juridica" => Some("1"),
                "2" | "natural" | "persona_natural" => Some("2"),
                _ => None,
            };
            if code.is_none() {
                p.push(
                    c.at(name),
                    "debe ser 1 (persona jurídica) o 2 (persona natural)",
                );
            }
            code.map(|c| Code { code: c.into() })
        }
        None => None,
    };
    names.set("customer.type_organization.code", c.at("tipo_organizacion"));
    let address = c.text(&["direccion"], p)?.map(|(_, v)| v.to_string());
    names.set("customer.address", c.at("direccion"));
    let phone = c.code(&["telefono"], p)?.map(|(_, v)| v);
    names.set("customer.phone", c.at("telefono"));
    let country = c
        .text(&["pais"], p)?
        .map(|(_, v)| v.trim().to_ascii_uppercase());
    names.set("customer.country_code", c.at("pais"));
    let municipality = c.code(&["municipio"], p)?.map(|(_, m)| {
        if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) {
            Municipality {
                code: Some(m),
                name: None,
            }
        } else {
            Municipality {
                code: None,
                name: Some(m),
            }
        }
    });
    names.set("customer.municipality", c.at("municipio"));
    Ok(CustomerRequest {
        identification_number: number,
        name,
        email,
        type_document_identification: id_type.map(|code| Code { code }),
        type_organization: organization,
        address,
        municipality,
        country_code: country,
        phone,
        completar_adquiriente: completing,
    })
}

/// Identification type by code or name.
fn id_type_code(t: &str) -> Option<&'static str> {
    let t = t.trim().to_ascii_uppercase().replace([' ', '-'], "_");
    Some(match t.as_str() {
        "11" | "RC" | "REGISTRO_CIVIL" => "11",
        "12" | "TI" | "TARJETA_IDENTIDAD" | "TARJETA_DE_IDENTIDAD" => "12",
        "13" | "CC" | "CEDULA" | "CEDULA_CIUDADANIA" | "CÉDULA" => "13",
        "21" | "TE" | "TARJETA_EXTRANJERIA" => "21",
        "22" | "CE" | "CEDULA_EXTRANJERIA" => "22",
        "31" | "NIT" => "31",
        "41" | "PASAPORTE" | "PA" | "PP" => "41",
        "42" | "DIE" | "DOCUMENTO_EXTRANJERO" => "42",
        "47" | "PEP" => "47",
        "48" | "PPT" => "48",
        "50" | "NIT_EXTRANJERO" | "NIT_OTRO_PAIS" => "50",
        "91" | "NUIP" => "91",
        _ => return None,
    })
}

/// The final consumer of a POS receipt without `cliente`; the mapping
/// writes the authority's final consumer in its place.
fn final_consumer() -> CustomerRequest {
    CustomerRequest {
        identification_number: "222222222222".into(),
        name: "Consumidor final".into(),
        email: FINAL_CONSUMER_EMAIL.into(),
        type_document_identification: Some(Code { code: "13".into() }),
        type_organization: Some(Code { code: "2".into() }),
        address: None,
        municipality: None,
        country_code: None,
        phone: None,
        completar_adquiriente: false,
    }
}

/// Stands in for the final consumer's missing address while the shared
/// mapping checks the customer; never written (see `mapping`).
pub const FINAL_CONSUMER_EMAIL: &str = "consumidor.final@consumidor-final.invalid";

fn empty_customer() -> CustomerRequest {
    CustomerRequest {
        identification_number: String::new(),
        name: String::new(),
        email: String::new(),
        type_document_identification: None,
        type_organization: None,
        address: None,
        municipality: None,
        country_code: None,
        phone: None,
        completar_adquiriente: false,
    }
}
