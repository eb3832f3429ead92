//! Hostile values.

use super::*;

/// `[[[…]]]`, `depth` deep.
pub(super) fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `{"a":{"a":…1…}}`, `depth` deep.
pub(super) fn nested_objects(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

/// Hostile JSON values as raw text, by kind: some (`1e400`, a lone
/// surrogate, nesting past serde_json's limit) cannot be built as a `Value`.
pub(super) fn hostile_kinds() -> Vec<Vec<String>> {
    let kind = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    vec![
        // Huge, negative and boundary numbers.
        kind(&[
            "1e400",
            "-1e400",
            "99999999999999999999999",
            "79228162514264337593543950336",
            "1000000000000001",
            "2147483648",
            "4294967295",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "-1",
            "-0",
            "0",
            "1E+2",
        ]),
        // Fractions.
        kind(&["0.0000001", "1e-400", "1.5", "0.005"]),
        // Strings that are not what a field wants, numbers as strings.
        kind(&[
            r#""""#,
            r#"" ""#,
            r#""abc""#,
            r#""1""#,
            r#""-1""#,
            r#""1e400""#,
            r#""NaN""#,
            r#""true""#,
            r#""2024-02-30""#,
            r#""' OR 1=1 --""#,
        ]),
        // Control, XML-forbidden and tricky characters.
        kind(&[
            r#""\u0000""#,
            r#""\u0001""#,
            r#""a\u0008b""#,
            r#""\uFFFE""#,
            r#""\uFFFF""#,
            r#""\uD800""#,
            r#""😀""#,
            r#""\u202Eabc""#,
            r#""<a>&amp;]]></a>""#,
        ]),
        // Very long strings (100 kB).
        vec![
            format!("\"{}\"", "x".repeat(100_000)),
            format!("\"{}\"", "ñ".repeat(50_000)),
        ],
        // Structures and nesting bombs.
        vec![
            "true".into(),
            "[]".into(),
            "[1,2,3]".into(),
            "[null]".into(),
            "{}".into(),
            r#"{"code":{}}"#.into(),
            nested_arrays(200),  // past serde_json's recursion limit
            nested_objects(100), // within it: a deep wrong type
        ],
    ]
}

/// Values of the wrong JSON type for `original` (a number as a string
/// among them).
pub(super) fn wrong_types(original: &Value) -> Vec<String> {
    match original {
        Value::Number(n) => vec![format!("\"{n}\""), "{}".into()],
        Value::String(s) if s.parse::<f64>().is_ok() => vec![s.clone(), r#"["a"]"#.into()],
        Value::String(_) => vec!["1".into(), r#"["a"]"#.into()],
        Value::Bool(b) => vec![format!("\"{b}\""), "1".into()],
        Value::Array(_) => vec!["{}".into(), r#""[]""#.into()],
        Value::Object(_) => vec!["[]".into(), r#""{}""#.into()],
        Value::Null => vec!["{}".into()],
    }
}

/// Path ids that name nothing: refused with a 4xx, never a 5xx. (`+1` is
/// not among them: Rust reads it as 1.)
pub(super) fn bad_ids() -> Vec<String> {
    [
        "0",
        "-1",
        "99999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "abc",
        "%00",
        "%FF",
        "%",
        "1.5",
        "1e3",
        "%201",
        "0x1",
        "%EF%BC%91", // fullwidth digit one
        "1%2F2",
        "..%2F..",
    ]
    .map(String::from)
    .into_iter()
    .chain([&"9".repeat(300)].map(String::clone))
    .collect()
}

/// Query strings: missing, duplicated and garbage parameters.
pub(super) fn bad_queries() -> Vec<String> {
    [
        "",
        "?",
        "?&&&",
        "?=",
        "?id_empresa",
        "?id_empresa=",
        "?id_empresa=abc",
        "?id_empresa=-1",
        "?id_empresa=0",
        "?id_empresa=2",
        "?id_empresa=1.0",
        "?id_empresa=99999999999999999999",
        "?id_empresa=%00",
        "?id_empresa=%FF",
        "?id_empresa=%31",
        "?id_empresa=1&id_empresa=1",
        "?id_empresa=1&id_empresa=2",
        "?id_empresa=2&id_empresa=1",
        "?id_empresa=1&check_tax=yes",
        "?id_empresa=1&check_tax=1",
        "?id_empresa=1&check_tax=true&check_tax=false",
        "?id_empresa=1&ambiente=3",
        "?id_empresa=1&ambiente=",
        "?id_empresa=1&ambiente=%00",
        "?id_empresa=1&unknown=1",
        "?id_empresa[]=1",
        "?id_empresa=1;drop",
        "?id_empresa=1&%FF=%FF",
    ]
    .map(String::from)
    .into_iter()
    .chain([format!("?id_empresa=1&q={}", "x".repeat(4_000))])
    .collect()
}
