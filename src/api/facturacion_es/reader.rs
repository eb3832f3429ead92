//! Reads the Spanish-named body straight from the parsed JSON value, field
//! by field, under any of a field's names (`precio`, `precio_unitario`,
//! `valor_unitario`), remembering which one the caller used so that every
//! error names the caller's own spelling. No second deserialization.
//!
//! A wrong JSON type is a 400 (the first one found ends the reading); a
//! missing or invalid value is a 422, all of them collected. A field given
//! under two of its names with different values is a 422 naming both; the
//! same value twice is accepted.

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use crate::api::invoice_request::request::amount::parse_exact;
use crate::http::error::{ApiError, FieldError};

/// A wrong JSON type: 400 MALFORMED_JSON naming the field.
pub type TypeResult<T> = Result<T, ApiError>;

/// The 422 problems found so far.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn has(&self, field: &str) -> bool {
        self.0.iter().any(|e| e.field == field)
    }
}

fn wrong_type(path: &str, expected: &str, got: &Value) -> ApiError {
    let got = match got {
        Value::Null => "null",
        Value::Bool(_) => "un booleano",
        Value::Number(_) => "un número",
        Value::String(_) => "un texto",
        Value::Array(_) => "una lista",
        Value::Object(_) => "un objeto",
    };
    ApiError::MalformedJson(format!(
        "{path}: tipo inválido: se esperaba {expected}, llegó {got}"
    ))
}

/// A JSON object being read, at `path` (`cliente`, `lineas[2]`; empty at
/// the top).
#[derive(Debug, Clone, Copy)]
pub struct Obj<'a> {
    pub map: &'a Map<String, Value>,
    pub path: &'a str,
}

/// A value found under one of its names.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    /// The name the caller used.
    pub name: &'static str,
    pub value: &'a Value,
}

impl<'a> Obj<'a> {
    pub fn new(value: &'a Value, path: &'a str) -> TypeResult<Obj<'a>> {
        match value {
            Value::Object(map) => Ok(Obj { map, path }),
            other => Err(wrong_type(
                if path.is_empty() { "body" } else { path },
                "un objeto",
                other,
            )),
        }
    }

    /// The path of a field of this object.
    pub fn at(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    /// The first of `names` present (not null); another one present with a
    /// different value is a problem naming both.
    pub fn find(&self, names: &[&'static str], p: &mut Problems) -> Option<Found<'a>> {
        let mut found: Option<Found<'a>> = None;
        for &name in names {
            let Some(value) = self.map.get(name).filter(|v| !v.is_null()) else {
                continue;
            };
            match found {
                None => found = Some(Found { name, value }),
                Some(first) if first.value != value => p.push(
                    self.at(first.name),
                    format!(
                        "se envió también como `{}` con otro valor ({} ≠ {}); envíe uno solo",
                        self.at(name),
                        first.value,
                        value
                    ),
                ),
                Some(_) => {}
            }
        }
        found
    }

    /// A text field.
    pub fn text(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, &'a str)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found {
                name,
                value: Value::String(s),
            }) => Ok(Some((name, s.as_str()))),
            Some(f) => Err(wrong_type(&self.at(f.name), "un texto", f.value)),
        }
    }

    /// A code: a text, or a non-negative JSON integer (`13` means `"13"`).
    pub fn code(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, String)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found { name, value }) => match value {
                Value::String(s) => Ok(Some((name, s.trim().to_string()))),
                Value::Number(n) if n.as_u64().is_some() => {
                    Ok(Some((name, n.as_u64().unwrap_or_default().to_string())))
                }
                other => Err(wrong_type(&self.at(name), "un código (texto)", other)),
            },
        }
    }

    /// An exact decimal from a JSON number.
    pub fn decimal(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, Decimal)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found {
                name,
                value: Value::Number(n),
            }) => {
                let text = n.to_string();
                match parse_exact(&text) {
                    Some(d) => Ok(Some((name, d))),
                    None => {
                        p.push(
                            self.at(name),
                            format!(
                                "el número {text} está fuera de rango o tiene más de 28 decimales"
                            ),
                        );
                        Ok(None)
                    }
                }
            }
            Some(f) => Err(wrong_type(&self.at(f.name), "un número", f.value)),
        }
    }

    pub fn boolean(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, bool)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found {
                name,
                value: Value::Bool(b),
            }) => Ok(Some((name, *b))),
            Some(f) => Err(wrong_type(&self.at(f.name), "true o false", f.value)),
        }
    }

    /// A non-negative JSON integer.
    pub fn integer(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, u64)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found {
                name,
                value: Value::Number(n),
            }) => match n.as_u64() {
                Some(u) => Ok(Some((name, u))),
                None => {
                    p.push(self.at(name), "debe ser un entero no negativo");
                    Ok(None)
                }
            },
            Some(f) => Err(wrong_type(&self.at(f.name), "un entero", f.value)),
        }
    }

    /// A nested object; `path` receives its path (kept by the caller so the
    /// returned reader can borrow it).
    pub fn object(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, &'a Map<String, Value>)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found {
                name,
                value: Value::Object(m),
            }) => Ok(Some((name, m))),
            Some(f) => Err(wrong_type(&self.at(f.name), "un objeto", f.value)),
        }
    }

    /// An array.
    pub fn array(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, &'a Vec<Value>)>> {
        match self.find(names, p) {
            None => Ok(None),
            Some(Found {
                name,
                value: Value::Array(a),
            }) => Ok(Some((name, a))),
            Some(f) => Err(wrong_type(&self.at(f.name), "una lista", f.value)),
        }
    }

    /// A date `YYYY-MM-DD`.
    pub fn date(
        &self,
        names: &[&'static str],
        p: &mut Problems,
    ) -> TypeResult<Option<(&'static str, chrono::NaiveDate)>> {
        let Some((name, text)) = self.text(names, p)? else {
            return Ok(None);
        };
        match chrono::NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d") {
            Ok(d) => Ok(Some((name, d))),
            Err(_) => {
                p.push(self.at(name), "debe ser una fecha AAAA-MM-DD");
                Ok(None)
            }
        }
    }
}

/// Every item of an array is an object: their maps.
pub fn objects<'a>(path: &str, items: &'a [Value]) -> TypeResult<Vec<&'a Map<String, Value>>> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Object(m) => Ok(m),
            other => Err(wrong_type(&format!("{path}[{i}]"), "un objeto", other)),
        })
        .collect()
}
