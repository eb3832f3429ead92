//! Decimals written into JSON, by the answers and by the bodies an API
//! stores itself: amounts as text with two decimals, and exact JSON numbers
//! (arbitrary precision, what the request readers take back exactly).

use rust_decimal::Decimal;

/// An amount as the answers write it: rounded half-up to 2 decimals,
/// always with both (`19000.00`).
pub fn money(d: Decimal) -> String {
    crate::engine::totals::cents(d)
}

/// A JSON number with the decimal's exact text (arbitrary precision).
pub fn num(d: Decimal) -> serde_json::Value {
    serde_json::from_str(&d.normalize().to_string()).unwrap_or(serde_json::Value::Null)
}

/// A decimal string as a JSON number, exactly as written (no float).
pub fn json_number(decimal: &str) -> serde_json::Number {
    serde_json::from_str::<serde_json::Number>(decimal)
        .unwrap_or_else(|_| serde_json::Number::from(0))
}

/// Decimals written as exact JSON numbers (what `amount::*` reads back),
/// for bodies this API stores itself.
pub mod exact {
    use rust_decimal::Decimal;
    use serde::{Serialize, Serializer};

    pub fn required<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        super::num(*d).serialize(s)
    }

    pub fn option<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
        d.map(super::num).serialize(s)
    }
}
