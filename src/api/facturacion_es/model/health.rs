//! The health sector's data: `salud` and each line's `paciente` (the
//! annex's users).

use serde_json::{Map, Value};

use super::super::reader::{Obj, Problems, TypeResult};
use super::Extras;
use crate::api::invoice_request::request::HealthRequest;
use crate::engine::model::HealthUser;
use crate::engine::ubl::sector::HEALTH_ID_TYPES;

pub(super) fn read_health(m: &Map<String, Value>, p: &mut Problems) -> TypeResult<HealthRequest> {
    let h = Obj {
        map: m,
        path: "salud",
    };
    Ok(HealthRequest {
        codigo_prestador: h.code(&["codigo_prestador"], p)?.map(|(_, v)| v),
        modalidad_pago: h.code(&["modalidad_pago"], p)?.map(|(_, v)| v),
        cobertura: h.code(&["cobertura"], p)?.map(|(_, v)| v),
        numero_contrato: h.code(&["numero_contrato"], p)?.map(|(_, v)| v),
        numero_poliza: h.code(&["numero_poliza"], p)?.map(|(_, v)| v),
        fecha_inicio: h.date(&["fecha_inicio"], p)?.map(|(_, d)| d),
        fecha_fin: h.date(&["fecha_fin"], p)?.map(|(_, d)| d),
    })
}

/// The patient of line `l`, kept once among the annex's users: required
/// on a health invoice (`required`), accepted on a health document
/// (`allowed`).
pub(super) fn read_patient(
    l: &Obj<'_>,
    required: bool,
    allowed: bool,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<()> {
    match l.object(&["paciente"], p)? {
        Some((name, pm)) if allowed => {
            let ppath = l.at(name);
            let pt = Obj { map: pm, path: &ppath };
            let get = |field: &'static str, p: &mut Problems| -> TypeResult<String> {
                let v = pt.code(&[field], p)?.map(|(_, v)| v).unwrap_or_default();
                if v.is_empty() {
                    p.push(pt.at(field), "es obligatorio");
                } else if v.chars().count() > 60 || v.chars().any(char::is_control) {
                    p.push(pt.at(field), "hasta 60 caracteres, sin caracteres de control");
                }
                Ok(v)
            };
            let id_type = get("tipo_documento", p)?;
            let id_type = health_id_type(&id_type).map(str::to_string).unwrap_or_else(|| {
                if !id_type.is_empty() {
                    let list: Vec<&str> = HEALTH_ID_TYPES.iter().map(|(c, _)| *c).collect();
                    p.push(pt.at("tipo_documento"), format!("debe ser uno de: {}", list.join(", ")));
                }
                id_type
            });
            let user = HealthUser {
                id_type,
                id_number: get("numero_documento", p)?,
                first_name: get("primer_nombre", p)?,
                last_name: get("primer_apellido", p)?,
            };
            if !extras
                .users
                .iter()
                .any(|x| x.id_type == user.id_type && x.id_number == user.id_number)
            {
                extras.users.push(user);
            }
        }
        Some((name, _)) => p.push(l.at(name), "solo para un documento del sector salud (tipo_operacion 11)"),
        None if required => p.push(
            l.at("paciente"),
            "es obligatorio en una factura del sector salud: tipo_documento, numero_documento, primer_nombre, primer_apellido",
        ),
        None => {}
    }
    Ok(())
}

/// A patient's identification type: the annex's letters, or the
/// authority's numeric code of the same document.
fn health_id_type(t: &str) -> Option<&'static str> {
    let t = t.trim().to_ascii_uppercase();
    if let Some((c, _)) = HEALTH_ID_TYPES.iter().find(|(c, _)| *c == t) {
        return Some(c);
    }
    Some(match t.as_str() {
        "11" => "RC",
        "12" => "TI",
        "13" => "CC",
        "22" => "CE",
        "41" | "PASAPORTE" => "PA",
        "42" => "DE",
        "47" => "PE",
        "48" => "PT",
        _ => return None,
    })
}
