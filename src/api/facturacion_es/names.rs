//! The caller's own spelling of every field: the unified request's paths
//! (which the shared mapping and the engine report) → the Spanish paths the
//! caller sent (`invoice_lines[2].price_amount` → `productos[2].valor_unitario`),
//! and the refusal messages in Spanish.

use std::collections::HashMap;

use crate::http::error::{ApiError, FieldError};

/// Unified path (or path prefix) → the caller's path.
#[derive(Debug, Clone, Default)]
pub struct Names(HashMap<String, String>);

impl Names {
    pub fn set(&mut self, unified: impl Into<String>, spanish: impl Into<String>) {
        self.0.insert(unified.into(), spanish.into());
    }

    /// The caller's path of a unified path: the entry of the path itself or
    /// of its longest prefix (ending before a `.` or `[`), the rest kept.
    pub fn spanish(&self, unified: &str) -> String {
        if let Some(s) = self.0.get(unified) {
            return s.clone();
        }
        let cuts = unified
            .char_indices()
            .filter(|(_, c)| *c == '.' || *c == '[')
            .map(|(i, _)| i)
            .collect::<Vec<_>>();
        for &cut in cuts.iter().rev() {
            if let Some(s) = self.0.get(&unified[..cut]) {
                return format!("{s}{}", &unified[cut..]);
            }
        }
        unified.to_string()
    }

    /// A refusal of the shared mapping, named and worded for this caller.
    pub fn translate(&self, e: ApiError) -> ApiError {
        match e {
            ApiError::Validation { details, .. } => {
                ApiError::validation_list(self.details(details))
            }
            other => other,
        }
    }

    pub fn details(&self, details: Vec<FieldError>) -> Vec<FieldError> {
        details
            .into_iter()
            .map(|d| FieldError::new(self.spanish(&d.field), spanish_message(&d.message)))
            .collect()
    }
}

/// The common messages of the shared mapping and the engine, in Spanish;
/// others are kept as they are.
pub fn spanish_message(m: &str) -> String {
    let exact = match m {
        "is required" => Some("es obligatorio"),
        "must not be negative" => Some("no puede ser negativo"),
        "must be greater than zero" => Some("debe ser mayor que cero"),
        "is too large (at most 10^15)" => Some("es demasiado grande (máximo 10^15)"),
        "must be between 0 and 100" => Some("debe estar entre 0 y 100"),
        "is not an email address" => Some("no es una dirección de correo"),
        "document not found" => Some("documento no encontrado"),
        "up to 20 letters, digits or dashes" => Some("hasta 20 letras, dígitos o guiones"),
        "at most 450 characters" => Some("máximo 450 caracteres"),
        "at most 100 characters" => Some("máximo 100 caracteres"),
        "at most 50 characters" => Some("máximo 50 caracteres"),
        "must be `1` or `2`" => Some("debe ser `1` o `2`"),
        "ISO 3166-1 alpha-2, e.g. `CO`" => Some("código ISO 3166-1 de dos letras, p. ej. `CO`"),
        "must be the 5-digit DIVIPOLA municipality code (e.g. 11001)" => {
            Some("debe ser el código DIVIPOLA de 5 dígitos del municipio (p. ej. 11001)")
        }
        "a NIT has digits only, without check digit" => {
            Some("un NIT lleva solo dígitos, sin dígito de verificación")
        }
        "must be a coverage code 01 to 17" => Some("debe ser un código de cobertura de 01 a 17"),
        "amounts are too large" => Some("los valores son demasiado grandes"),
        crate::issuing::reference::UNKNOWN_CODE => {
            Some("no hay un documento de la empresa con ese CUFE")
        }
        _ => None,
    };
    if let Some(s) = exact {
        return s.to_string();
    }
    if let Some(rest) = m.strip_prefix("declared ") {
        if let Some((d, c)) = rest.split_once(" but computed ") {
            return format!("declarado {d} pero calculado {c}");
        }
    }
    if let Some(rest) = m.strip_prefix("is the code of document ") {
        if let Some((f, named)) = rest.split_once(", but ") {
            if let Some((field, id)) = named.rsplit_once(" is ") {
                return format!("es el CUFE del documento {f}, pero {field} es {id}");
            }
        }
    }
    if let Some(rest) = m.strip_prefix("must be one of: ") {
        return format!("debe ser uno de: {rest}");
    }
    if let Some(rest) = m.strip_prefix("unknown identification type ") {
        return format!("tipo de identificación desconocido {rest}");
    }
    m.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_names_the_path() {
        let mut n = Names::default();
        n.set("invoice_lines", "productos");
        n.set(
            "invoice_lines[1].price_amount",
            "productos[1].valor_unitario",
        );
        n.set("customer", "cliente");
        assert_eq!(
            n.spanish("invoice_lines[1].price_amount"),
            "productos[1].valor_unitario"
        );
        assert_eq!(
            n.spanish("invoice_lines[0].description"),
            "productos[0].description"
        );
        assert_eq!(n.spanish("customer.x"), "cliente.x");
        assert_eq!(n.spanish("other"), "other");
        assert_eq!(
            spanish_message("declared 10 but computed 12"),
            "declarado 10 pero calculado 12"
        );
        assert_eq!(
            spanish_message("is the code of document 7, but documento_referencia is 9"),
            "es el CUFE del documento 7, pero documento_referencia es 9"
        );
    }
}
