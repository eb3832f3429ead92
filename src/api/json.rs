//! Request bodies. Our own JSON extractor so that every body problem gets the
//! envelope and the field's path: not JSON or a wrong JSON type → 400
//! MALFORMED_JSON; a required field missing or a value out of its set → 422
//! naming it; over 1 MiB → 413.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// Largest body accepted (decisions.md §4).
pub const MAX_BODY: usize = 1 << 20;

pub struct Json<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = RawBody::from_request(req, payload);
        Box::pin(async move { parse(&body.await?.0).map(Json) })
    }
}

/// A body of at most [`MAX_BODY`] bytes, whatever it holds, refused in the
/// envelope when larger (actix's own `Bytes` answers a bare 413, at 256 KiB).
pub struct RawBody(pub Vec<u8>);

impl FromRequest for RawBody {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > MAX_BODY) {
                return Err(ApiError::PayloadTooLarge { limit: MAX_BODY });
            }
            let mut body = Vec::with_capacity(declared.unwrap_or(1024).min(MAX_BODY));
            while let Some(chunk) = payload.next().await {
                let chunk = chunk.map_err(|e| ApiError::MalformedJson(format!("body: {e}")))?;
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(ApiError::PayloadTooLarge { limit: MAX_BODY });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(RawBody(body))
        })
    }
}

/// Parses a body, classifying the failure as decisions.md §3 says. A body
/// is one JSON object and nothing after it.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::MalformedJson(
            "request body is empty; JSON expected".into(),
        ));
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    let value: object::Object<T> = serde_path_to_error::deserialize(&mut *de).map_err(classify)?;
    // `deserialize` stops after the value: `{…}x` and `{…}{…}` are not JSON.
    de.end()
        .map_err(|e| ApiError::MalformedJson(format!("body is not valid JSON: {e}")))?;
    Ok(value.0)
}

/// [`parse`] for a body already read as a JSON value (no second pass over
/// the text).
pub fn parse_value<T: DeserializeOwned>(body: &serde_json::Value) -> Result<T, ApiError> {
    let value: object::Object<T> = serde_path_to_error::deserialize(body).map_err(classify)?;
    Ok(value.0)
}

fn classify(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let text = inner.to_string();
    // serde_json appends " at line L column C"; the path says more.
    let reason = text.split(" at line ").next().unwrap_or(&text).to_string();
    match inner.classify() {
        serde_json::error::Category::Data => {
            if let Some(field) = missing_field(&reason) {
                let full = join_path(&path, field);
                ApiError::validation(full, "is required")
            } else if reason.starts_with("invalid type") {
                ApiError::MalformedJson(format!("{}: {reason}", display_path(&path)))
            } else {
                ApiError::validation(display_path(&path), reason)
            }
        }
        _ => ApiError::MalformedJson(format!("body is not valid JSON: {text}")),
    }
}

/// Structs from JSON objects only. serde also reads a struct from an array,
/// field by field in order, so `"payment_form": []` or a customer sent as
/// `["800197268", "A", "a@b.co"]` would pass for objects, where decisions.md
/// §3 makes a wrong JSON type a 400. Every struct-typed field of a request
/// says `#[serde(deserialize_with = "object::…")]`; [`parse`] does the body.
pub mod object {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::value::MapAccessDeserializer;
    use serde::de::{MapAccess, Visitor};
    use serde::{Deserialize, Deserializer};

    /// A `T` read from a JSON object, and from nothing else.
    pub struct Object<T>(pub T);

    struct ObjectVisitor<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
        type Value = Object<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(Object)
        }
    }

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(ObjectVisitor(PhantomData))
        }
    }

    pub fn required<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
        Object::deserialize(d).map(|o| o.0)
    }

    pub fn option<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        Option::<Object<T>>::deserialize(d).map(|o| o.map(|o| o.0))
    }

    /// An optional array of objects.
    pub fn option_vec<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Vec<T>>, D::Error> {
        let items = Option::<Vec<Object<T>>>::deserialize(d)?;
        Ok(items.map(|v| v.into_iter().map(|o| o.0).collect()))
    }
}

fn missing_field(reason: &str) -> Option<&str> {
    reason
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
}

fn join_path(parent: &str, field: &str) -> String {
    if parent.is_empty() || parent == "." {
        field.to_string()
    } else {
        format!("{parent}.{field}")
    }
}

fn display_path(path: &str) -> String {
    if path.is_empty() || path == "." {
        "body".into()
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        email: String,
    }
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        customer: Inner,
        n: u32,
    }

    fn code_and_field(body: &str) -> (&'static str, String) {
        match parse::<Outer>(body.as_bytes()) {
            Err(ApiError::Validation { details, .. }) => {
                ("VALIDATION_ERROR", details[0].field.clone())
            }
            Err(e) => (e.code().as_str(), e.to_string()),
            Ok(_) => ("OK", String::new()),
        }
    }

    #[test]
    fn classification() {
        assert_eq!(
            code_and_field(r#"{"customer":{"email":"a"},"n":1}"#).0,
            "OK"
        );
        assert_eq!(
            code_and_field(r#"{"customer":{},"n":1}"#),
            ("VALIDATION_ERROR", "customer.email".into())
        );
        assert_eq!(
            code_and_field(r#"{"customer":{"email":"a"}}"#),
            ("VALIDATION_ERROR", "n".into())
        );
        let (code, msg) = code_and_field(r#"{"customer":{"email":5},"n":1}"#);
        assert_eq!(code, "MALFORMED_JSON");
        assert!(msg.contains("customer.email"), "{msg}");
        assert_eq!(code_and_field("{not json").0, "MALFORMED_JSON");
        assert_eq!(code_and_field("").0, "MALFORMED_JSON");
        // Positional arrays, scalars: not an object.
        assert_eq!(
            code_and_field(r#"[{"email":"a@b.co"}, 1]"#).0,
            "MALFORMED_JSON"
        );
        assert_eq!(code_and_field("[]").0, "MALFORMED_JSON");
        assert_eq!(code_and_field(" 7").0, "MALFORMED_JSON");
    }

    #[test]
    fn one_object_and_nothing_after_it() {
        let ok = r#"{"customer":{"email":"a"},"n":1}"#;
        for bad in [
            format!("{ok}x"),
            format!("{ok}{ok}"),
            format!("{ok},"),
            r#"[{"email":"a"},1]"#.to_string(),
        ] {
            assert_eq!(code_and_field(&bad).0, "MALFORMED_JSON", "{bad}");
        }
        assert_eq!(code_and_field(&format!(" {ok} \n")).0, "OK");
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Strict {
        #[serde(deserialize_with = "object::required")]
        customer: Inner,
        #[serde(default, deserialize_with = "object::option")]
        extra: Option<Inner>,
        #[serde(default, deserialize_with = "object::option_vec")]
        lines: Option<Vec<Inner>>,
    }

    #[test]
    fn struct_fields_take_objects_only() {
        let strict = |body: &str| match parse::<Strict>(body.as_bytes()) {
            Ok(_) => "OK".to_string(),
            Err(ApiError::Validation { details, .. }) => details[0].field.clone(),
            Err(e) => format!("{}: {e}", e.code()),
        };
        assert_eq!(strict(r#"{"customer":{"email":"a"}}"#), "OK");
        assert_eq!(
            strict(r#"{"customer":{"email":"a"},"extra":null,"lines":[{"email":"b"}]}"#),
            "OK"
        );
        assert_eq!(strict(r#"{"customer":{}}"#), "customer.email");
        assert_eq!(strict(r#"{"extra":{"email":"a"}}"#), "customer");
        for (body, path) in [
            (r#"{"customer":["a"]}"#, "customer"),
            (r#"{"customer":{"email":"a"},"extra":[]}"#, "extra"),
            (r#"{"customer":{"email":"a"},"lines":[["b"]]}"#, "lines[0]"),
        ] {
            let got = strict(body);
            assert!(
                got.starts_with("MALFORMED_JSON") && got.contains(path),
                "{body}: {got}"
            );
        }
    }
}
