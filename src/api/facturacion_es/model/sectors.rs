//! `tipo_operacion` and what its sectors carry: health (`salud`,
//! `copago_cuota_moderadora`) and cargo transport (`transporte`).

use serde_json::{Map, Value};

use super::super::names::Names;
use super::super::reader::{Obj, Problems, TypeResult};
use super::health::read_health;
use super::route::is_support;
use super::Extras;
use crate::api::invoice_request::mapping::codes::department_name;
use crate::api::invoice_request::request::{HealthRequest, TransportRequest};
use crate::engine::model::DocumentKind;

/// The operation and its sector's data.
pub(super) struct Sectors {
    pub(super) operation: Option<String>,
    /// A health document (`tipo_operacion` 11).
    pub(super) health: bool,
    pub(super) salud: Option<HealthRequest>,
    /// Cargo transport (`tipo_operacion` 12): applies to every line.
    pub(super) transport: Option<TransportRequest>,
}

pub(super) fn read_sectors(
    top: &Obj<'_>,
    kind: DocumentKind,
    names: &mut Names,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<Sectors> {
    let support = is_support(kind);
    let operation = top.code(&["tipo_operacion"], p)?;
    if operation.is_some() {
        names.set("id_tipo_operacion", "tipo_operacion");
    }
    let op = operation.as_ref().map(|(_, o)| o.as_str());
    let health = op == Some("11") && !support;
    let transport_op = op == Some("12") && !support;
    let salud = match top.object(&["salud"], p)? {
        Some((_, m)) => Some(read_health(m, p)?),
        None => None,
    };
    if let Some((name, c)) = top.decimal(&["copago_cuota_moderadora"], p)? {
        if !health {
            p.push(
                name,
                "solo para un documento del sector salud (tipo_operacion 11)",
            );
        } else if c.is_sign_negative() && !c.is_zero() {
            p.push(name, "no puede ser negativo");
        } else {
            names.set("salud.copago", name);
            extras.copay = Some(c);
        }
    }
    let transport = match top.object(&["transporte"], p)? {
        Some((_, m)) if transport_op => Some(read_transport(m, extras, p)?),
        Some(_) => {
            p.push(
                "transporte",
                "solo para una factura de transporte de carga (tipo_operacion 12)",
            );
            None
        }
        None => {
            if transport_op {
                p.push(
                    "transporte",
                    "es obligatorio en una factura de transporte de carga (tipo_operacion 12): remesa_numero y manifiesto_numero",
                );
            }
            None
        }
    };
    Ok(Sectors {
        operation: operation.map(|(_, o)| o),
        health,
        salud,
        transport,
    })
}

fn read_transport(
    m: &Map<String, Value>,
    extras: &mut Extras,
    p: &mut Problems,
) -> TypeResult<TransportRequest> {
    let t = Obj {
        map: m,
        path: "transporte",
    };
    let required = |name: &'static str, p: &mut Problems| -> TypeResult<Option<String>> {
        let v = t
            .code(&[name], p)?
            .map(|(_, v)| v)
            .filter(|v| !v.is_empty());
        if v.is_none() {
            p.push(
                t.at(name),
                "es obligatorio en una factura de transporte de carga",
            );
        }
        Ok(v)
    };
    let consignment = required("remesa_numero", p)?;
    let manifest = required("manifiesto_numero", p)?;
    let plate = t.code(&["vehiculo_placa"], p)?.map(|(_, v)| v);
    let place = |name: &'static str, p: &mut Problems| -> TypeResult<Option<String>> {
        let v = t.code(&[name], p)?.map(|(_, v)| v);
        if let Some(code) = &v {
            let ok = code.len() == 5
                && code.bytes().all(|b| b.is_ascii_digit())
                && department_name(&code[..2]).is_some();
            if !ok {
                p.push(
                    t.at(name),
                    "debe ser el código DIVIPOLA de 5 dígitos del municipio (p. ej. 11001)",
                );
            }
        }
        Ok(v)
    };
    let origin = place("origen", p)?;
    let destination = place("destino", p)?;
    let mut parts = Vec::new();
    if let Some(v) = &plate {
        parts.push(format!("vehículo {v}"));
    }
    if let Some(v) = &origin {
        parts.push(format!("origen {v}"));
    }
    if let Some(v) = &destination {
        parts.push(format!("destino {v}"));
    }
    if !parts.is_empty() {
        extras.transport_note = Some(format!("Transporte de carga: {}", parts.join(", ")));
    }
    Ok(TransportRequest {
        radicado_rndc: manifest,
        numero_remesa: consignment,
        valor_flete: None,
        cantidad: None,
        unidad: None,
    })
}
