//! Request bodies. Our own JSON extractor so that every body problem gets the
//! envelope and the field's path: not JSON, a wrong JSON type or a key given
//! twice in one object → 400 MALFORMED_JSON; a required field missing or a
//! value out of its set → 422 naming it; over 1 MiB → 413; not in full
//! within `[server] body_timeout_s` → 408.

mod canonical;
pub mod escape;
mod unique_keys;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use futures_util::StreamExt;
use serde::de::{DeserializeOwned, IgnoredAny};

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
/// envelope when larger (actix's own `Bytes` answers a bare 413, at 256 KiB)
/// or when it has not arrived in full within `[server] body_timeout_s`
/// (408): a client trickling its body would otherwise hold a connection
/// and a worker's task for as long as it likes.
pub struct RawBody(pub Vec<u8>);

/// Seconds a body may take when the settings cannot be reached (the
/// embedded default).
const DEFAULT_BODY_TIMEOUT_S: u64 = 30;

impl FromRequest for RawBody {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let limit_s = req
            .app_data::<actix_web::web::Data<super::state::AppState>>()
            .map_or(DEFAULT_BODY_TIMEOUT_S, |s| s.settings.server.body_timeout_s);
        let mut payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > MAX_BODY) {
                return Err(ApiError::PayloadTooLarge { limit: MAX_BODY });
            }
            let read = async {
                let mut body = Vec::with_capacity(declared.unwrap_or(1024).min(MAX_BODY));
                while let Some(chunk) = payload.next().await {
                    let chunk = chunk.map_err(|e| ApiError::MalformedJson(format!("body: {e}")))?;
                    if body.len() + chunk.len() > MAX_BODY {
                        return Err(ApiError::PayloadTooLarge { limit: MAX_BODY });
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(RawBody(body))
            };
            tokio::time::timeout(Duration::from_secs(limit_s), read)
                .await
                .map_err(|_| ApiError::RequestTimeout { limit_s })?
        })
    }
}

/// Parses a body, classifying the failure as decisions.md §3 says. A body
/// is one JSON object, with no key twice in any object, and nothing after it.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::MalformedJson(
            "request body is empty; JSON expected".into(),
        ));
    }
    // Most bodies are fine: read without tracking the path (which copies
    // every key it passes); a body with a problem is read again with it,
    // for the answer. Tracking changes no outcome, only the error's detail.
    if let Ok(value) = parse_untracked(body) {
        return Ok(value);
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    let value: object::Object<T> =
        serde_path_to_error::deserialize(unique_keys::UniqueKeys::new(&mut *de))
            .map_err(|e| classify(duplicate_key(body).unwrap_or(e)))?;
    // `deserialize` stops after the value: `{…}x` and `{…}{…}` are not JSON.
    de.end()
        .map_err(|e| ApiError::MalformedJson(format!("body is not valid JSON: {e}")))?;
    Ok(value.0)
}

/// A body read as `T` (as [`parse`] reads it) with its canonical JSON (what
/// the body read as a `serde_json::Value` serializes to: sorted keys, no
/// whitespace), the bytes a request is stored and compared by. A body that
/// is fine is read twice in passes that build no `Value`; any other is
/// read the way it always was, so its refusal is the same.
pub fn parse_canonical<T: DeserializeOwned>(body: &[u8]) -> Result<(T, Vec<u8>), ApiError> {
    if let Ok(canonical) = canonical::canonical(body) {
        if let Ok(value) = parse_untracked(body) {
            return Ok((value, canonical));
        }
    }
    let value: serde_json::Value = parse(body)?;
    let canonical =
        serde_json::to_vec(&value).map_err(|e| ApiError::MalformedJson(e.to_string()))?;
    Ok((parse_value(&value)?, canonical))
}

/// [`parse`]'s reading, without the path.
fn parse_untracked<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let value: object::Object<T> =
        serde::Deserialize::deserialize(unique_keys::UniqueKeys::new(&mut *de))?;
    de.end()?;
    Ok(value.0)
}

/// The first key given twice in `body`, as a parse error. A body is read
/// in one pass that stops at the first problem, which may be a value before
/// the duplicate; the duplicate still decides the answer (decisions.md §5),
/// so a failed body, and only a failed one, is scanned again for one.
fn duplicate_key(body: &[u8]) -> Option<serde_path_to_error::Error<serde_json::Error>> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    match serde_path_to_error::deserialize::<_, IgnoredAny>(unique_keys::UniqueKeys::new(de)) {
        Err(e)
            if e.inner()
                .to_string()
                .starts_with(unique_keys::DUPLICATE_KEY) =>
        {
            Some(e)
        }
        _ => None,
    }
}

/// [`parse`] for a body already read as a JSON value (no second pass over
/// the text); a `Value` read by [`parse`] has no duplicate keys left to find.
pub fn parse_value<T: DeserializeOwned>(body: &serde_json::Value) -> Result<T, ApiError> {
    // As in `parse`: the path only for the error.
    if let Ok(value) = <object::Object<T> as serde::Deserialize>::deserialize(body) {
        return Ok(value.0);
    }
    let value: object::Object<T> = serde_path_to_error::deserialize(body).map_err(|e| {
        // The text was read already: a number that does not fit its field
        // (300 for a u8, kept as text by arbitrary precision) surfaces as a
        // syntax error here, but it is a value of the right type, out of range.
        let path = e.path().to_string();
        match e.inner().classify() {
            serde_json::error::Category::Data => classify(e),
            _ if path != "." && !path.is_empty() => {
                let text = e.inner().to_string();
                let reason = text.split(" at line ").next().unwrap_or(&text).to_string();
                ApiError::validation(display_path(&path), reason)
            }
            _ => classify(e),
        }
    })?;
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
            } else if reason.starts_with("invalid type")
                || reason.starts_with(unique_keys::DUPLICATE_KEY)
            {
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
#[allow(clippy::panic)]
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

    /// Read first as a value (as `POST /facturacion` does), then typed: a
    /// number out of its field's range names the field, as `parse` does.
    #[test]
    fn a_number_out_of_range_names_its_field_when_read_from_a_value() {
        let value: serde_json::Value =
            serde_json::from_str(r#"{"customer":{"email":"a"},"n":4294967296}"#).unwrap();
        match parse_value::<Outer>(&value) {
            Err(ApiError::Validation { details, .. }) => assert_eq!(details[0].field, "n"),
            other => panic!("expected a 422 naming n, got {other:?}"),
        }
        match parse::<Outer>(br#"{"customer":{"email":"a"},"n":4294967296}"#) {
            Err(ApiError::Validation { details, .. }) => assert_eq!(details[0].field, "n"),
            other => panic!("expected a 422 naming n, got {other:?}"),
        }
    }

    /// The route `parse_canonical` replaced: the body as a `Value`, its
    /// JSON, then typed from the `Value`.
    fn through_value(body: &str) -> Result<(String, Vec<u8>), String> {
        let value: serde_json::Value = parse(body.as_bytes()).map_err(|e| format!("{e:?}"))?;
        let canonical = serde_json::to_vec(&value).unwrap();
        let outer: Outer = parse_value(&value).map_err(|e| format!("{e:?}"))?;
        Ok((format!("{outer:?}"), canonical))
    }

    #[test]
    fn parse_canonical_answers_as_the_value_route_did() {
        for body in [
            r#"{"n":7,"customer":{"email":"a@b.co","extra":[1,{"z":0,"y":"\u00e9"}]}}"#,
            r#" { "customer" : { "email" : "x" } , "n" : 1 , "a" : 1.50 } "#,
            r#"{"customer":{"email":"a"},"n":4294967296}"#,
            r#"{"customer":{"email":"a"},"n":-1}"#,
            r#"{"customer":{"email":"a"}}"#,
            r#"{"customer":["a"],"n":1}"#,
            r#"{"customer":{"email":"a","email":"b"},"n":1}"#,
            r#"{"customer":{"email":"a"},"n":1,"n":2}"#,
            r#"{"customer":{"email":"a"},"n":1}x"#,
            r#"{"customer":{"email":"a"},"n":"1"}"#,
            r#"[1]"#,
            "",
        ] {
            let got = parse_canonical::<Outer>(body.as_bytes())
                .map(|(outer, canonical)| (format!("{outer:?}"), canonical))
                .map_err(|e| format!("{e:?}"));
            assert_eq!(got, through_value(body), "{body}");
        }
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

    #[test]
    fn a_key_twice_in_one_object_is_malformed_and_named() {
        let malformed = |body: &str| match parse::<serde_json::Value>(body.as_bytes()) {
            Err(e @ ApiError::MalformedJson(_)) => e.to_string(),
            other => panic!("{body}: {other:?}"),
        };
        assert_eq!(malformed(r#"{"a":1,"a":2}"#), "a: duplicate key `a`");
        // Nested in objects and arrays, with the path to the key.
        assert_eq!(
            malformed(r#"{"a":{"b":[{"c":1},{"c":1,"d":0,"c":2}]}}"#),
            "a.b[1].c: duplicate key `c`"
        );
        // The same key once written with an escape is still the same key.
        assert_eq!(
            malformed(r#"{"ab":1,"a\u0062":2}"#),
            "ab: duplicate key `ab`"
        );
        // Large objects too, whichever side of the switch to hashing.
        let many: String = (0..40).map(|i| format!(r#""k{i}":{i},"#)).collect();
        for key in ["k0", "k15", "k16", "k39"] {
            assert_eq!(
                malformed(&format!(r#"{{{many}"{key}":0}}"#)),
                format!("{key}: duplicate key `{key}`")
            );
        }
        assert!(parse::<serde_json::Value>(format!(r#"{{{many}"k40":0}}"#).as_bytes()).is_ok());
        // Typed bodies: a known field, a field of a nested struct, and a
        // duplicate inside a field the struct ignores.
        for (body, path, key) in [
            (r#"{"customer":{"email":"a"},"n":1,"n":2}"#, "n", "n"),
            (
                r#"{"customer":{"email":"a","email":"b"},"n":1}"#,
                "customer.email",
                "email",
            ),
            (
                r#"{"customer":{"email":"a"},"n":1,"x":{"y":[{"z":1,"z":1}]}}"#,
                "x.y[0].z",
                "z",
            ),
        ] {
            let (code, msg) = code_and_field(body);
            assert_eq!(code, "MALFORMED_JSON", "{body}");
            assert_eq!(msg, format!("{path}: duplicate key `{key}`"), "{body}");
        }
        // A wrong first value, or an error met before the duplicate, does
        // not hide it.
        for body in [
            r#"{"customer":{"email":"a"},"n":"x","n":1}"#,
            r#"{"customer":{"email":7},"n":1,"n":1}"#,
            r#"{"customer":{},"n":1,"n":2}"#,
        ] {
            assert_eq!(
                code_and_field(body),
                ("MALFORMED_JSON", "n: duplicate key `n`".to_string()),
                "{body}"
            );
        }
    }

    #[test]
    fn equal_keys_in_different_objects_are_fine() {
        let v: serde_json::Value =
            parse(br#"{"a":{"x":1.50},"b":{"x":"1"},"l":[{"x":1},{"x":2}],"x":null}"#).unwrap();
        assert_eq!(v["l"][1]["x"], 2);
        // Numbers keep their text (arbitrary precision) through the check.
        assert_eq!(v["a"]["x"].to_string(), "1.50");
        assert_eq!(
            code_and_field(r#"{"customer":{"email":"a"},"n":1,"x":{"n":1}}"#).0,
            "OK"
        );
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
