//! Decimals written as their exact text (`"1.50"`, scale kept) in a
//! stored domain request: the crate-wide serde of `Decimal` writes a
//! float, and a document built again must be the same to the last digit
//! and the last trailing zero.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(d)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    let text = std::borrow::Cow::<str>::deserialize(d)?;
    Decimal::from_str(&text).map_err(serde::de::Error::custom)
}

/// An optional decimal, as its exact text or `null`.
pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.collect_str(d),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Decimal>, D::Error> {
        let text = Option::<std::borrow::Cow<str>>::deserialize(d)?;
        text.map(|t| Decimal::from_str(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;
    use serde::Serialize;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Amounts {
        #[serde(with = "super")]
        a: Decimal,
        #[serde(with = "super::option")]
        b: Option<Decimal>,
        #[serde(with = "super::option")]
        c: Option<Decimal>,
    }

    #[test]
    fn decimals_keep_their_digits_and_scale() {
        let x = Amounts {
            a: dec!(1.50),
            b: Some(dec!(0.1000000000000000000000000001)),
            c: None,
        };
        let text = serde_json::to_string(&x).unwrap();
        let back: Amounts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, x);
        assert_eq!(back.a.to_string(), "1.50");
    }
}
