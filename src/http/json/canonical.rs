//! The canonical JSON of a body, written in one pass over its text: the
//! bytes `serde_json::to_vec(&value)` gives for the body read as a
//! `serde_json::Value` (keys sorted as a `BTreeMap` sorts them, no
//! whitespace, serde_json's escapes, numbers as their text), without
//! building that `Value`. A `Value` is a string, a map node or a vector per
//! key and value, made and freed on every request: a measurable share of
//! the HTTP worker's CPU a document (docs/performance.md).
//!
//! An object's entries are written where they are read, then put in key
//! order: each entry's bytes are moved once per enclosing object, and a
//! body is a few KB at most a few levels deep.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The key under which serde_json (`arbitrary_precision`) hands a number
/// to a visitor: a one-entry map whose value is the number's text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// The canonical JSON of `body`, or the reason it is not one JSON value
/// (or holds a key twice in an object). Callers that need the exact
/// refusal read the body again the ordinary way.
pub fn canonical(body: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(body.len());
    let mut work = Work::default();
    let mut de = serde_json::Deserializer::from_slice(body);
    Writer {
        out: &mut out,
        work: &mut work,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// Room every object of a body shares, so that none allocates its own: a
/// stack of entries (an object's above those of the objects it is in) and
/// the buffer an object's entries are put in order through.
#[derive(Default)]
struct Work<'de> {
    /// An entry: its key, and where its `"key":value` bytes lie in `out`.
    entries: Vec<(Cow<'de, str>, usize, usize)>,
    scratch: Vec<u8>,
}

/// Writes the value it is given, canonically, at the end of `out`.
struct Writer<'o, 'de> {
    out: &'o mut Vec<u8>,
    work: &'o mut Work<'de>,
}

impl<'de> Writer<'_, 'de> {
    /// A writer for a value inside this one.
    fn child(&mut self) -> Writer<'_, 'de> {
        Writer {
            out: self.out,
            work: self.work,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Writer<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// serde_json's own escaping of a string (what a `Value`'s string gets).
fn write_str<E: de::Error>(out: &mut Vec<u8>, s: &str) -> Result<(), E> {
    serde_json::to_writer(out, s).map_err(E::custom)
}

impl<'de> Visitor<'de> for Writer<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    // An integer's digits, as a `Value`'s number writes them (other
    // numbers come as a map, below).
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        serde_json::to_writer(self.out, &v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        serde_json::to_writer(self.out, &v).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        serde_json::to_writer(self.out, &serde_json::Value::from(v)).map_err(E::custom)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        write_str(self.out, v)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            if seq.next_element_seed(self.child())?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let start = self.out.len();
        let base = self.work.entries.len();
        while let Some(key) = map.next_key_seed(KeyText)? {
            if self.work.entries.len() == base && key == NUMBER_TOKEN {
                // A number, as a `Value` reads it: its text, parsed.
                let text = map.next_value_seed(KeyText)?;
                let number: serde_json::Number = text.parse().map_err(de::Error::custom)?;
                return serde_json::to_writer(&mut *self.out, &number).map_err(de::Error::custom);
            }
            let from = self.out.len();
            write_str(self.out, &key)?;
            self.out.push(b':');
            map.next_value_seed(self.child())?;
            let to = self.out.len();
            self.work.entries.push((key, from, to));
        }
        let Work { entries, scratch } = &mut *self.work;
        let mine = entries.get_mut(base..).unwrap_or_default();
        mine.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if let Some((a, _)) = mine
            .iter()
            .zip(mine.iter().skip(1))
            .find(|(a, b)| a.0 == b.0)
        {
            return Err(de::Error::custom(format_args!("duplicate key `{}`", a.0)));
        }
        scratch.clear();
        scratch.extend_from_slice(self.out.get(start..).unwrap_or_default());
        self.out.truncate(start);
        self.out.push(b'{');
        for (i, (_, from, to)) in mine.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            // Each entry's span was written after `start`, within what
            // `scratch` copied.
            #[allow(clippy::indexing_slicing)]
            self.out
                .extend_from_slice(&scratch[from - start..to - start]);
        }
        self.out.push(b'}');
        entries.truncate(base);
        Ok(())
    }
}

/// A key (or a number's text), borrowed from the body when it has no
/// escapes.
struct KeyText;

impl<'de> DeserializeSeed<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the body's `Value` serializes to: the reference.
    fn through_value(body: &str) -> Option<Vec<u8>> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        serde_json::to_vec(&value).ok()
    }

    fn same_as_value(body: &str) {
        let want = through_value(body).unwrap();
        let got = canonical(body.as_bytes()).unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(want).unwrap(),
            "{body}"
        );
    }

    #[test]
    fn writes_what_the_value_of_the_body_writes() {
        for body in [
            r#"{}"#,
            r#"[]"#,
            r#" { "b" : 1 , "a" : [ 1 , 2.50 , -0 , 1E2 , 1e-7 , true , false , null , { } , [ ] ] } "#,
            r#"{"z":{"y":{"x":[{"w":"v","a":"b"}]}},"m":"\u00e9\n\t\/\"\\","é":"ñ","E":1}"#,
            r#"{"\u0041":1,"B":2,"a\u0000":"\ud83d\ude00","":0}"#,
            r#"{"n":123456789012345678901234567890.000001,"neg":-12.3e+4,"i":-9223372036854775809}"#,
            r#"{"s":"control \u001f and \u007f and \u2028"}"#,
            r#""just a string""#,
            r#"42"#,
            r#"{"$serde_json::private::Number":"12.50"}"#,
        ] {
            same_as_value(body);
        }
    }

    #[test]
    fn an_invoice_request_is_written_as_its_value_is() {
        // The issuing load's invoice (benches/load/facturacion.lua), one line.
        let body = r#"{"id_tipo_documento":1,"transmit":false,"referencia_externa":"load-1-2-3",
            "customer":{"identification_number":"900123456","name":"Cliente Carga S.A.S.",
            "email":"carga@example.com","type_document_identification":{"code":"31"},
            "type_organization":{"code":"1"},"address":"Calle 1 # 2-3",
            "municipality":{"code":"11001","name":"Bogot\u00e1"}},
            "invoice_lines":[{"description":"Producto 1","invoiced_quantity":1,"price_amount":1000,
            "unit_measure":{"code":"94"},"tax_totals":[{"tax_code":"01","tax_name":"IVA","percent":19}]}]}"#;
        same_as_value(body);
    }

    #[test]
    fn refuses_what_is_not_one_json_value_or_repeats_a_key() {
        for body in [
            "",
            "  ",
            "{",
            r#"{"a":1}x"#,
            r#"{"a":1}{}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"b":{"a":1,"\u0061":2}}"#,
            r#"{"a":01}"#,
            r#"{"$serde_json::private::Number":"x"}"#,
            r#"{"$serde_json::private::Number":"1","b":2}"#,
        ] {
            assert!(canonical(body.as_bytes()).is_err(), "{body}");
        }
    }

    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            (-1e12f64..1e12).prop_map(serde_json::Value::from),
            "\\PC{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::vec(("\\PC{0,6}", inner), 0..6)
                    .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any value, written with its keys in reverse order and spaced
        /// out, comes back as the `Value` route writes it.
        #[test]
        fn any_body_is_written_as_its_value_is(value in json()) {
            let body = serde_json::to_string_pretty(&value).unwrap();
            let reversed = reverse_keys(&value);
            let want = through_value(&body).unwrap();
            prop_assert_eq!(canonical(body.as_bytes()).unwrap(), want.clone());
            prop_assert_eq!(canonical(reversed.as_bytes()).unwrap(), want);
        }
    }

    /// `value`'s JSON with every object's keys written last to first.
    fn reverse_keys(value: &serde_json::Value) -> String {
        match value {
            serde_json::Value::Object(map) => {
                let inner: Vec<String> = map
                    .iter()
                    .rev()
                    .map(|(k, v)| {
                        format!("{}: {}", serde_json::to_string(k).unwrap(), reverse_keys(v))
                    })
                    .collect();
                format!("{{ {} }}", inner.join(", "))
            }
            serde_json::Value::Array(items) => {
                let inner: Vec<String> = items.iter().map(reverse_keys).collect();
                format!("[{}]", inner.join(","))
            }
            other => serde_json::to_string(other).unwrap(),
        }
    }
}
