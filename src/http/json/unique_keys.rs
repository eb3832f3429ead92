//! A serde `Deserializer` adapter that refuses an object holding the same
//! key twice, at any depth, while the body is being read (decisions.md §5
//! "Duplicate JSON keys"). serde_json keeps the last of two equal keys and
//! serde's derived structs only catch known fields, so without this
//! `{"total": 1, "total": 2}` inside a map, a `serde_json::Value` or an
//! ignored field would pass silently. One pass: the check rides along the
//! deserialization the body needs anyway.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Start of the error message; the JSON extractor turns it into a 400.
pub const DUPLICATE_KEY: &str = "duplicate key `";

/// Where a map key's text is written while the key is deserialized.
type KeySlot<'a, 'de> = Option<&'a mut Option<Cow<'de, str>>>;

/// Wraps a deserializer; every map read through it checks its keys.
pub struct UniqueKeys<'a, 'de, D> {
    inner: D,
    /// Set while this deserializer reads a map key: the key is recorded.
    key: KeySlot<'a, 'de>,
}

impl<D> UniqueKeys<'_, '_, D> {
    pub fn new(inner: D) -> Self {
        UniqueKeys { inner, key: None }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method(Checked { inner: visitor, key: self.key })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for UniqueKeys<'_, 'de, D> {
    type Error = D::Error;

    forward_deserialize!(
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier
    );

    /// An ignored value (an unknown field) is still walked, so a duplicate
    /// inside it is found; an ignored key is read as the string it is.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let visitor = Checked {
            inner: visitor,
            key: self.key,
        };
        if visitor.key.is_some() {
            self.inner.deserialize_str(visitor)
        } else {
            self.inner.deserialize_any(visitor)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_unit_struct(name, Checked::value(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_newtype_struct(name, Checked::value(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple(len, Checked::value(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_tuple_struct(name, len, Checked::value(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_struct(name, fields, Checked::value(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_enum(name, variants, Checked::value(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A visitor whose maps check their keys, and which records a key's text
/// when it is reading one.
struct Checked<'a, 'de, V> {
    inner: V,
    key: KeySlot<'a, 'de>,
}

impl<V> Checked<'_, '_, V> {
    fn value(inner: V) -> Self {
        Checked { inner, key: None }
    }
}

impl<'de, V> Checked<'_, 'de, V> {
    /// Keeps a key's text, when this visitor reads a key: `text` runs only then.
    fn record(&mut self, text: impl FnOnce() -> Cow<'de, str>) {
        if let Some(slot) = self.key.as_deref_mut() {
            *slot = Some(text());
        }
    }
}

macro_rules! forward_visit {
    ($($method:ident: $ty:ty)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Checked<'_, 'de, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit!(
        visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
        visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
        visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char
        visit_bytes: &[u8] visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
    );

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<V::Value, E> {
        self.record(|| Cow::Owned(v.to_owned()));
        self.inner.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(mut self, v: &'de str) -> Result<V::Value, E> {
        self.record(|| Cow::Borrowed(v));
        self.inner.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(mut self, v: String) -> Result<V::Value, E> {
        self.record(|| Cow::Owned(v.clone()));
        self.inner.visit_string(v)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(UniqueKeys::new(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(UniqueKeys::new(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(Seq(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Map {
            inner: map,
            seen: Seen::default(),
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Enum(data))
    }
}

/// A seed whose value is read through [`UniqueKeys`].
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(UniqueKeys::new(d))
    }
}

/// A seed for a map key: its text lands in `slot`.
struct KeySeed<'a, 'de, S> {
    inner: S,
    slot: &'a mut Option<Cow<'de, str>>,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for KeySeed<'_, 'de, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(UniqueKeys {
            inner: d,
            key: Some(self.slot),
        })
    }
}

struct Seq<A>(A);

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct Map<'de, A> {
    inner: A,
    seen: Seen<'de>,
}

/// Objects up to this many keys are searched in order: faster than hashing
/// for the small objects requests are made of.
const FEW: usize = 16;

/// The keys of one object so far. Keys without escapes borrow from the
/// body, and the first [`FEW`] sit in an array inside the map's reader, so
/// a request's objects allocate nothing for their keys; a large object
/// moves to a hash set, so a body of many keys stays linear.
#[derive(Default)]
struct Seen<'de> {
    few: [Option<Cow<'de, str>>; FEW],
    /// How many of `few` are set (they are its first ones).
    len: usize,
    many: HashSet<Cow<'de, str>>,
}

impl<'de> Seen<'de> {
    /// Adds `key`, or gives it back when it is already there.
    fn add(&mut self, key: Cow<'de, str>) -> Result<(), Cow<'de, str>> {
        if self.many.is_empty() {
            if self.few.iter().take(self.len).flatten().any(|k| *k == key) {
                return Err(key);
            }
            if let Some(free) = self.few.get_mut(self.len) {
                *free = Some(key);
                self.len += 1;
                return Ok(());
            }
            self.many
                .extend(self.few.iter_mut().filter_map(Option::take));
        }
        if self.many.contains(&key) {
            return Err(key);
        }
        self.many.insert(key);
        Ok(())
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Map<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let mut slot = None;
        let key = self.inner.next_key_seed(KeySeed {
            inner: seed,
            slot: &mut slot,
        })?;
        if let Some(text) = slot {
            if let Err(text) = self.seen.add(text) {
                return Err(de::Error::custom(format_args!("{DUPLICATE_KEY}{text}`")));
            }
        }
        Ok(key)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

struct Enum<A>(A);

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, Variant(variant)))
    }
}

struct Variant<A>(A);

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Checked::value(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Checked::value(visitor))
    }
}
