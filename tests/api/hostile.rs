//! A hostile client against every keyed endpoint that takes input: valid
//! requests mutated field by field (null, wrong types, huge and fractional
//! numbers, control and XML-forbidden characters, 100 kB strings, nesting
//! bombs, duplicated keys), broken whole bodies, wrong content types, bad
//! path ids and garbage query strings. A fixed-seed xorshift picks among the
//! hostile values, so every run sends the same requests.
//!
//! The rule under test (decisions.md §3): bad input gets a 4xx in the error
//! envelope and changes nothing; the server never answers 5xx nor panics.
//! Some mutations leave a request valid and it is accepted; those are
//! accounted for: the numbering advanced by exactly the accepted documents,
//! with no gap, and the subscription, customers, companies, resolutions and
//! keys by exactly what was accepted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use base64::Engine;
use emisor::api::invoice_request::examples;
use reqwest::blocking::{Body, RequestBuilder};
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::*;

// ---------------------------------------------------------------------------
// Deterministic choice.

/// xorshift64*: reproducible picks without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SEED: u64 = 0x0BAD_5EED_CAFE_F00D;

// ---------------------------------------------------------------------------
// Hostile values.

/// `[[[…]]]`, `depth` deep.
fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `{"a":{"a":…1…}}`, `depth` deep.
fn nested_objects(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

/// Hostile JSON values as raw text, by kind: some (`1e400`, a lone
/// surrogate, nesting past serde_json's limit) cannot be built as a `Value`.
fn hostile_kinds() -> Vec<Vec<String>> {
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
fn wrong_types(original: &Value) -> Vec<String> {
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
fn bad_ids() -> Vec<String> {
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
fn bad_queries() -> Vec<String> {
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

// ---------------------------------------------------------------------------
// JSON paths and mutations.

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every value inside `v` (objects, arrays and leaves), by path.
fn paths(v: &Value) -> Vec<Vec<Step>> {
    fn walk(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
        let children: Vec<(Step, &Value)> = match v {
            Value::Object(m) => m.iter().map(|(k, c)| (Step::Key(k.clone()), c)).collect(),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, c)| (Step::Index(i), c))
                .collect(),
            _ => Vec::new(),
        };
        for (step, child) in children {
            prefix.push(step);
            out.push(prefix.clone());
            walk(child, prefix, out);
            prefix.pop();
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

fn show(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Key(k) if s.is_empty() => s.push_str(k),
            Step::Key(k) => s.push_str(&format!(".{k}")),
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

fn get<'a>(v: &'a Value, path: &[Step]) -> &'a Value {
    path.iter().fold(v, |v, step| match step {
        Step::Key(k) => &v[k.as_str()],
        Step::Index(i) => &v[*i],
    })
}

/// `body` without the value at `path`.
fn removed(body: &Value, path: &[Step]) -> String {
    let mut b = body.clone();
    if let Some((last, parent)) = path.split_last() {
        match (at(&mut b, parent), last) {
            (Value::Object(m), Step::Key(k)) => {
                m.remove(k);
            }
            (Value::Array(a), Step::Index(i)) => {
                a.remove(*i);
            }
            _ => {}
        }
    }
    b.to_string()
}

const MARKER: &str = "__hostile_marker__";

/// `body` with the value at `path` replaced by the raw JSON text `raw`.
fn replaced(body: &Value, path: &[Step], raw: &str) -> String {
    let mut b = body.clone();
    *at(&mut b, path) = json!(MARKER);
    b.to_string().replacen(&format!("\"{MARKER}\""), raw, 1)
}

/// The key at `path` twice, `raw` first and its own value last: the body is
/// refused whatever the values (decisions.md §5), with the key named.
fn duplicated(body: &Value, path: &[Step], raw: &str) -> Option<(String, String)> {
    let Some((Step::Key(k), _)) = path.split_last() else {
        return None;
    };
    let own = get(body, path).to_string();
    let mut b = body.clone();
    *at(&mut b, path) = json!(MARKER);
    let key = json!(k).to_string();
    let text = b.to_string().replacen(
        &format!("{key}:\"{MARKER}\""),
        &format!("{key}:{raw},{key}:{own}"),
        1,
    );
    Some((k.clone(), text))
}

fn abbreviate(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        let head: String = s.chars().take(40).collect();
        format!("{head}…({} bytes)", s.len())
    }
}

/// How hard a value is hit.
enum Plan {
    /// Every hostile value.
    All,
    /// One hostile value of each kind, picked by the seeded generator.
    OneOfEach,
    Skip,
}

/// One mutated request body.
struct Mutation {
    what: String,
    text: String,
    /// A wrong JSON type where an object or array belongs, which every
    /// endpoint must refuse (decisions.md §3: 400).
    must_refuse: bool,
    /// The key given twice, when that is the mutation.
    duplicate: Option<String>,
}

/// Field mutations of `body`: for every value, null, wrong types, removal,
/// a duplicated key, and hostile values as `plan` says.
fn mutations(
    body: &Value,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    mut plan: impl FnMut(&[Step]) -> Plan,
) -> Vec<Mutation> {
    let mut out = Vec::new();
    for path in paths(body) {
        let original = get(body, &path);
        let structure = original.is_object() || original.is_array();
        let mut raws: Vec<(String, bool)> = vec![("null".into(), false)];
        raws.extend(wrong_types(original).into_iter().map(|r| (r, structure)));
        match plan(&path) {
            Plan::All => raws.extend(kinds.iter().flatten().map(|r| (r.clone(), false))),
            Plan::OneOfEach => {
                raws.extend(kinds.iter().map(|k| (k[rng.below(k.len())].clone(), false)))
            }
            Plan::Skip => continue,
        }
        let name = show(&path);
        for (raw, must_refuse) in raws {
            out.push(Mutation {
                what: format!("{name} = {}", abbreviate(&raw)),
                text: replaced(body, &path, &raw),
                must_refuse,
                duplicate: None,
            });
        }
        out.push(Mutation {
            what: format!("{name} removed"),
            text: removed(body, &path),
            must_refuse: false,
            duplicate: None,
        });
        let kind = &kinds[rng.below(kinds.len())];
        let raw = &kind[rng.below(kind.len())];
        if let Some((key, text)) = duplicated(body, &path, raw) {
            // A first value that is not JSON (a lone surrogate, nesting
            // past the limit) makes the body not JSON before any key repeats.
            let json = serde_json::from_str::<Value>(raw).is_ok();
            out.push(Mutation {
                what: format!("{name} duplicated with {}", abbreviate(raw)),
                text,
                must_refuse: true,
                duplicate: json.then_some(key),
            });
        }
    }
    out
}

/// `lines[2].tax_totals[0]` → `lines[*].tax_totals[*]`.
fn shape(path: &[Step]) -> String {
    let generic: Vec<Step> = path
        .iter()
        .map(|s| match s {
            Step::Index(_) => Step::Key("*".into()),
            k => k.clone(),
        })
        .collect();
    show(&generic)
}

/// A whole body, broken.
struct Attack {
    what: String,
    body: Vec<u8>,
    /// Not one JSON object: every endpoint must refuse it (an empty body
    /// may mean defaults, a BOM may be skipped, padding may be ignored).
    must_refuse: bool,
}

/// Whole bodies that are broken, built from a valid one.
fn body_attacks(valid: &str) -> Vec<Attack> {
    let b = valid.as_bytes();
    let attack = |what: &str, body: Vec<u8>| Attack {
        what: what.to_string(),
        body,
        must_refuse: !matches!(what, "empty" | "whitespace" | "BOM" | "padded to 300 kB"),
    };
    let mut out: Vec<Attack> = [
        ("empty", ""),
        ("whitespace", " \n\t "),
        ("null", "null"),
        ("array", "[]"),
        ("string", "\"x\""),
        ("number", "0"),
        ("form", "a=1&b=2"),
        ("xml", "<x/>"),
        ("unclosed", "{"),
    ]
    .into_iter()
    .map(|(what, text)| attack(what, text.as_bytes().to_vec()))
    .collect();
    for cut in [1, b.len() / 3, b.len() / 2, b.len() - 1] {
        out.push(attack(&format!("truncated at {cut}"), b[..cut].to_vec()));
    }
    let padded = |n: usize| format!(r#"{{"pad":"{}",{}"#, "x".repeat(n), &valid[1..]);
    out.extend([
        attack("trailing garbage", [b, b"x"].concat()),
        attack("two objects", [b, b].concat()),
        attack("BOM", [b"\xEF\xBB\xBF", b].concat()),
        attack("invalid UTF-8", [&b[..2], b"\xFF\xFE", &b[2..]].concat()),
        attack("NUL byte", [&b[..1], b"\0", &b[1..]].concat()),
        attack("unclosed depth bomb", "[".repeat(100_000).into_bytes()),
        attack("object depth bomb", nested_objects(10_000).into_bytes()),
        // Over actix's own 256 KiB default, under our 1 MiB.
        attack("padded to 300 kB", padded(300_000).into_bytes()),
        attack("over 1 MiB", padded(1_100_000).into_bytes()),
    ]);
    out
}

/// Content types a JSON body should not come with.
const WRONG_CONTENT_TYPES: [Option<&str>; 5] = [
    None,
    Some("text/plain"),
    Some("application/x-www-form-urlencoded"),
    Some("application/xml"),
    Some("multipart/form-data; boundary=x"),
];

// ---------------------------------------------------------------------------
// Sending and checking.

/// What came back.
struct Answer {
    status: u16,
    body: Option<Value>,
}

impl Answer {
    fn accepted(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends the requests, checks every answer, and keeps the tally.
struct Probe<'a> {
    app: &'a TestApp,
    key: String,
    sent: usize,
    by_status: BTreeMap<u16, usize>,
    /// Requests sent when each section started.
    sections: Vec<(&'static str, usize)>,
    failures: Vec<String>,
}

impl<'a> Probe<'a> {
    fn new(app: &'a TestApp) -> Self {
        Probe {
            app,
            key: app.sk_test(),
            sent: 0,
            by_status: BTreeMap::new(),
            sections: Vec::new(),
            failures: Vec::new(),
        }
    }

    fn section(&mut self, name: &'static str) {
        self.sections.push((name, self.sent));
    }

    /// `facturacion 1234, clientes 56 …`
    fn tally(&self) -> String {
        let ends = self.sections.iter().skip(1).map(|s| s.1).chain([self.sent]);
        self.sections
            .iter()
            .zip(ends)
            .map(|((name, start), end)| format!("{name} {}", end - start))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn fail(&mut self, what: &str, why: String) {
        self.failures.push(format!("{what}: {why}"));
    }

    /// Sends and checks: no 5xx, every error in the envelope.
    fn send(&mut self, what: &str, req: RequestBuilder) -> Answer {
        self.sent += 1;
        let res = match req.send() {
            Ok(r) => r,
            Err(e) => {
                self.fail(what, format!("no answer: {e}"));
                return Answer {
                    status: 0,
                    body: None,
                };
            }
        };
        let status = res.status().as_u16();
        *self.by_status.entry(status).or_default() += 1;
        let text = res.text().unwrap_or_default();
        let body: Option<Value> = serde_json::from_str(&text).ok();
        if status >= 500 {
            self.fail(what, format!("{status}: {}", abbreviate(&text)));
        } else if status >= 400 {
            let envelope = body.as_ref().is_some_and(|b| {
                b["success"] == false
                    && b["error"]["code"].as_str().is_some_and(|c| !c.is_empty())
                    && b["message"].as_str().is_some_and(|m| !m.is_empty())
            });
            if !envelope {
                self.fail(
                    what,
                    format!("{status} not in the envelope: {}", abbreviate(&text)),
                );
            }
        }
        Answer { status, body }
    }

    /// A request that must have been refused.
    fn refused(&mut self, what: &str, a: &Answer, must: bool) {
        if must && a.accepted() {
            self.fail(what, format!("accepted ({}): a 4xx was due", a.status));
        }
    }

    /// The answer to a mutated body: refused when it must be, and a key
    /// given twice refused as malformed JSON naming the key.
    fn judged(&mut self, what: &str, a: &Answer, m: &Mutation) {
        self.refused(what, a, m.must_refuse);
        if let Some(key) = &m.duplicate {
            let body = a.body.clone().unwrap_or_default();
            let named = body["message"]
                .as_str()
                .is_some_and(|msg| msg.contains(&format!("duplicate key `{key}`")));
            if a.status != 400 || body["error"]["code"] != "MALFORMED_JSON" || !named {
                self.fail(
                    what,
                    format!("{}: {body}, not MALFORMED_JSON naming `{key}`", a.status),
                );
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.app.url)
    }

    /// A request with credentials: the admin token, or the API key.
    fn request(&self, method: Method, path: &str, admin: bool) -> RequestBuilder {
        let req = self.app.client.request(method, self.url(path));
        if admin {
            req.bearer_auth(self.app.admin_token())
        } else {
            req.header("X-Api-Key", &self.key)
        }
    }

    /// A keyed request.
    fn keyed(&mut self, method: Method, path: &str, ct: Option<&str>, body: Vec<u8>) -> Answer {
        let what = format!(
            "{method} {path} [{}]",
            abbreviate(&String::from_utf8_lossy(&body))
        );
        let mut req = self.request(method, path, false);
        if let Some(ct) = ct {
            req = req.header("Content-Type", ct);
        }
        self.send(&what, req.body(body))
    }

    fn get(&mut self, path: &str) -> Answer {
        self.keyed(Method::GET, path, None, Vec::new())
    }

    fn post_json(&mut self, path: &str, what: &str, body: impl Into<Vec<u8>>) -> Answer {
        let req = self
            .request(Method::POST, path, false)
            .header("Content-Type", "application/json")
            .body(body.into());
        self.send(&format!("POST {path} {what}"), req)
    }

    /// An admin request.
    fn admin(
        &mut self,
        method: Method,
        path: &str,
        what: &str,
        body: impl Into<Vec<u8>>,
    ) -> Answer {
        let what = format!("{method} {path} {what}");
        let req = self
            .request(method, path, true)
            .header("Content-Type", "application/json")
            .body(body.into());
        self.send(&what, req)
    }

    /// A JSON endpoint fed every whole-body attack, the wrong content types
    /// and an over-1-MiB body streamed without a length. `valid` makes a
    /// fresh valid body (unique where that matters); `on_accept` sees every
    /// accepted request's body and answer.
    fn body_attacks(
        &mut self,
        method: Method,
        path: &str,
        admin: bool,
        valid: &mut dyn FnMut() -> String,
        on_accept: &mut dyn FnMut(&str, &Answer),
    ) {
        let sample = valid();
        for attack in body_attacks(&sample) {
            let what = format!("{method} {path} {}", attack.what);
            let req = self
                .request(method.clone(), path, admin)
                .header("Content-Type", "application/json")
                .body(attack.body.clone());
            let a = self.send(&what, req);
            self.refused(&what, &a, attack.must_refuse);
            if a.accepted() {
                on_accept(&String::from_utf8_lossy(&attack.body), &a);
            }
        }
        // The content type is not looked at: JSON is JSON, and not-JSON is
        // refused whatever it claims to be.
        for ct in WRONG_CONTENT_TYPES {
            for body in [valid(), "{".to_string()] {
                let what = format!("{method} {path} content type {ct:?}: {body:.20}");
                let mut req = self.request(method.clone(), path, admin);
                if let Some(ct) = ct {
                    req = req.header("Content-Type", ct);
                }
                let a = self.send(&what, req.body(body.clone()));
                self.refused(&what, &a, body == "{");
                if a.accepted() {
                    on_accept(&body, &a);
                }
            }
        }
        // Chunked: no Content-Length to refuse up front.
        let big = format!(r#"{{"pad":"{}",{}"#, "x".repeat(1_100_000), &sample[1..]);
        let req = self
            .request(method.clone(), path, admin)
            .header("Content-Type", "application/json")
            .body(Body::new(std::io::Cursor::new(big.into_bytes())));
        let what = format!("{method} {path} chunked over 1 MiB");
        let a = self.send(&what, req);
        if a.status != 413 && a.status != 0 {
            self.fail(&what, format!("answered {}, not 413", a.status));
        }
    }
}

// ---------------------------------------------------------------------------
// What the server holds, before and after.

fn data(res: reqwest::blocking::Response) -> Value {
    let (status, body) = json(res);
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// Numbering (next number by prefix), subscription usage and customers.
#[derive(Debug, PartialEq)]
struct Holdings {
    next: BTreeMap<String, u64>,
    used: u64,
    customers: BTreeSet<String>,
}

fn holdings(app: &TestApp) -> Holdings {
    let key = app.sk_test();
    let next = (1..=10)
        .map(|tipo| {
            let d = data(app.get(&format!("/v1/api/facturacion/consecutivo/{tipo}"), &key));
            (
                d["prefijo"].as_str().unwrap().to_string(),
                d["siguiente"].as_u64().unwrap(),
            )
        })
        .collect();
    let used = data(app.get("/v1/api/facturacion/suscripcion", &key))["usados"]
        .as_u64()
        .unwrap();
    let mut customers = BTreeSet::new();
    for page in 1.. {
        let d = data(app.get(&format!("/v1/api/clientes?limit=100&page={page}"), &key));
        let items = d["items"].as_array().unwrap();
        customers.extend(
            items
                .iter()
                .map(|c| c["identification_number"].as_str().unwrap().to_string()),
        );
        if items.len() < 100 {
            break;
        }
    }
    Holdings {
        next,
        used,
        customers,
    }
}

/// What accepted requests legitimately changed.
#[derive(Default)]
struct Accepted {
    /// Numbers of the accepted documents, by prefix.
    numbers: BTreeMap<String, Vec<u64>>,
    documents: u64,
    /// Identification numbers of customers written.
    customers: BTreeSet<String>,
}

impl Accepted {
    fn document(&mut self, sent: &str, a: &Answer) {
        let data = &a.body.as_ref().expect("accepted document answers JSON")["data"];
        // The unified answer nests the record in `documento`; the Spanish
        // one is flat.
        let d = if data["documento"].is_object() {
            &data["documento"]
        } else {
            data
        };
        let prefix = d["prefijo"].as_str().expect("prefijo").to_string();
        let number = d["numero"]
            .as_str()
            .and_then(|n| n.parse().ok())
            .expect("numero");
        self.numbers.entry(prefix).or_default().push(number);
        self.documents += 1;
        // The server parsed it, so it is JSON.
        if let Ok(body) = serde_json::from_str::<Value>(sent) {
            if let Some(id) = body["customer"]["identification_number"].as_str() {
                self.customers.insert(id.trim().to_string());
            }
            if let Some(id) = spanish_customer(&body) {
                self.customers.insert(id);
            }
        }
    }

    fn customer(&mut self, a: &Answer) {
        let d = &a.body.as_ref().expect("accepted customer answers JSON")["data"];
        if let Some(id) = d["identification_number"].as_str() {
            self.customers.insert(id.to_string());
        }
    }

    /// Everything `after` differs from `before` by, explained.
    fn explains(&self, before: &Holdings, after: &Holdings) -> Vec<String> {
        let mut problems = Vec::new();
        for (prefix, numbers) in &self.numbers {
            if !before.next.contains_key(prefix) {
                problems.push(format!(
                    "documents accepted with unknown prefix {prefix}: {numbers:?}"
                ));
            }
        }
        for (prefix, from) in &before.next {
            let to = after.next[prefix];
            let mut got = self.numbers.get(prefix).cloned().unwrap_or_default();
            got.sort_unstable();
            let expected: Vec<u64> = (*from..to).collect();
            if got != expected {
                problems.push(format!(
                    "{prefix}: numbering went from {from} to {to}, accepted documents have {got:?}"
                ));
            }
        }
        if after.used != before.used + self.documents {
            problems.push(format!(
                "subscription usage went from {} to {}, {} documents accepted",
                before.used, after.used, self.documents
            ));
        }
        let expected: BTreeSet<String> = before.customers.union(&self.customers).cloned().collect();
        if after.customers != expected {
            problems.push(format!(
                "customers: {:?} appeared, {:?} expected",
                after
                    .customers
                    .difference(&before.customers)
                    .collect::<Vec<_>>(),
                self.customers
                    .difference(&before.customers)
                    .collect::<Vec<_>>()
            ));
        }
        problems
    }
}

// ---------------------------------------------------------------------------
// The setup: originals for the notes, a second company.

struct World {
    /// Originals by the type they are for: invoice (1), DS (4), POS (9).
    invoice: u64,
    support: u64,
    pos: u64,
    /// A document of the second company, invisible to the first's key.
    foreign: u64,
}

fn issue_draft(app: &TestApp, key: &str, body: Value, reference: &str) -> u64 {
    let mut body = body;
    body["transmit"] = json!(false);
    body["referencia_externa"] = json!(reference);
    let d = data(app.post("/v1/api/facturacion", key, &body));
    d["documento"]["id"].as_u64().unwrap()
}

fn setup(app: &TestApp) -> World {
    let key = app.sk_test();
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other_key = second["data"]["sk_test"].as_str().unwrap().to_string();
    World {
        invoice: issue_draft(app, &key, examples::invoice(), "orig-fe"),
        support: issue_draft(app, &key, examples::support_document(), "orig-ds"),
        pos: issue_draft(app, &key, examples::pos(), "orig-pos"),
        foreign: issue_draft(app, &other_key, examples::invoice(), "orig-other"),
    }
}

/// The valid bodies to mutate: every type, drafts, notes pointing at their
/// originals.
fn facturacion_bodies(w: &World) -> Vec<(&'static str, Value)> {
    examples::all()
        .into_iter()
        .map(|(name, body)| {
            let original = match body["id_tipo_documento"].as_u64() {
                Some(5) => w.support,
                Some(10) => w.pos,
                _ => w.invoice,
            };
            let mut body = examples::with_reference(body, original);
            body["transmit"] = json!(false);
            body["referencia_externa"] = json!("hostile-base");
            (name, body)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The attacks, endpoint by endpoint.

/// A fresh `referencia_externa`, so idempotency never masks a check.
fn fresh_reference() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("hostile-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn facturacion(p: &mut Probe, w: &World, kinds: &[Vec<String>], rng: &mut Rng, acc: &mut Accepted) {
    const PATH: &str = "/v1/api/facturacion";
    let mut seen = BTreeSet::new();
    for (name, base) in facturacion_bodies(w) {
        // Top-level fields in every body (their meaning depends on the
        // type); deeper ones where first met (`invoice_lines[*].code`).
        let plan = |path: &[Step]| {
            if path.len() == 1 || seen.insert(shape(path)) {
                Plan::OneOfEach
            } else {
                Plan::Skip
            }
        };
        for m in mutations(&base, kinds, rng, plan) {
            // The reference is unique unless it is what is being mutated.
            let text = if m.what.starts_with("referencia_externa") {
                m.text.clone()
            } else {
                let fresh = json!(fresh_reference()).to_string();
                m.text.replacen("\"hostile-base\"", &fresh, 1)
            };
            let what = format!("{name}: {}", m.what);
            let a = p.post_json(PATH, &what, text.clone());
            p.judged(&what, &a, &m);
            if a.accepted() {
                acc.document(&text, &a);
            }
        }
    }
    let invoice = facturacion_bodies(w).remove(0).1;
    let mut valid = || {
        let mut b = invoice.clone();
        b["referencia_externa"] = json!(fresh_reference());
        b.to_string()
    };
    p.body_attacks(Method::POST, PATH, false, &mut valid, &mut |sent, a| {
        acc.document(sent, a)
    });
}

fn clientes(p: &mut Probe, kinds: &[Vec<String>], rng: &mut Rng, acc: &mut Accepted) {
    const PATH: &str = "/v1/api/clientes";
    let base = examples::company_customer();
    for m in mutations(&base, kinds, rng, |_| Plan::OneOfEach) {
        let a = p.post_json(PATH, &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        if a.accepted() {
            acc.customer(&a);
        }
    }
    let mut valid = || base.to_string();
    p.body_attacks(Method::POST, PATH, false, &mut valid, &mut |_, a| {
        acc.customer(a)
    });
    for q in bad_queries().into_iter().chain(
        [
            "?limit=0",
            "?limit=-1",
            "?limit=101",
            "?limit=1e3",
            "?page=0",
            "?page=4294967296",
            "?q=%00",
            "?q=%FF",
        ]
        .map(String::from),
    ) {
        p.get(&format!("{PATH}{q}"));
    }
}

fn contingency(p: &mut Probe, w: &World, kinds: &[Vec<String>], rng: &mut Rng) {
    const PATH: &str = "/v1/api/facturacion/contingencia/enviar";
    // Valid and harmless: an id that is not a pending contingency document.
    let base = json!({"id_empresa": 1, "documento_ids": [w.invoice]});
    for m in mutations(&base, kinds, rng, |_| Plan::All) {
        let a = p.post_json(PATH, &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
    }
    let mut valid = || base.to_string();
    p.body_attacks(Method::POST, PATH, false, &mut valid, &mut |_, _| {});
    // Another company's document and id_empresa.
    p.post_json(
        PATH,
        "foreign id",
        json!({"id_empresa": 1, "documento_ids": [w.foreign]}).to_string(),
    );
    p.post_json(
        PATH,
        "foreign company",
        json!({"id_empresa": 2, "documento_ids": []}).to_string(),
    );
}

/// Ids in paths, query strings and document types.
fn reads(p: &mut Probe, w: &World) {
    const F: &str = "/v1/api/facturacion";
    let ids = bad_ids()
        .into_iter()
        .chain([w.foreign.to_string(), "4000000".into()]);
    for id in ids {
        for path in [
            format!("{F}/{id}/status?id_empresa=1"),
            format!("{F}/{id}/xml"),
            format!("{F}/{id}/zip"),
            format!("{F}/{id}/pdf"),
        ] {
            let a = p.get(&path);
            p.refused(&path, &a, true);
        }
        let path = format!("{F}/reenviar/{id}");
        let a = p.keyed(
            Method::POST,
            &path,
            Some("application/json"),
            b"{}".to_vec(),
        );
        p.refused(&path, &a, true);
    }
    // `+1` is document 1 to Rust's parser: answered, whatever it is.
    p.get(&format!("{F}/+1/status?id_empresa=1"));
    p.get(&format!("{F}/+1/xml"));
    // An id a document of this company has: only the query is hostile.
    for q in bad_queries() {
        p.get(&format!("{F}/{}/status{q}", w.invoice));
        p.get(&format!("{F}/suscripcion{q}"));
        p.get(&format!("{F}/{}/xml{q}", w.invoice));
        p.get(&format!("{F}/{}/pdf{q}", w.invoice));
    }
    let tipos = bad_ids()
        .into_iter()
        .chain(
            [
                "+1", "11", "255", "256", "FE", "fE", "t03", "nap", "x", "%201%20", "1.0",
            ]
            .map(String::from),
        )
        .chain(["nc".repeat(5_000)]);
    for t in tipos {
        p.get(&format!("{F}/consecutivo/{t}"));
    }
}

/// Every keyed route with a wrong method, a broken WebSocket handshake, and
/// keys that are no keys.
fn methods_and_keys(p: &mut Probe, w: &World) {
    const F: &str = "/v1/api/facturacion";
    let routes = [
        F.to_string(),
        format!("{F}/{}/status", w.invoice),
        format!("{F}/{}/xml", w.invoice),
        format!("{F}/{}/zip", w.invoice),
        format!("{F}/{}/pdf", w.invoice),
        format!("{F}/reenviar/{}", w.invoice),
        format!("{F}/consecutivo/1"),
        format!("{F}/suscripcion"),
        format!("{F}/contingencia/enviar"),
        "/v1/api/clientes".into(),
        "/v1/api/api-keys/test".into(),
    ];
    for route in &routes {
        for m in [Method::PUT, Method::DELETE, Method::PATCH, Method::OPTIONS] {
            let what = format!("{m} {route}");
            let a = p.keyed(m, route, Some("application/json"), b"{}".to_vec());
            p.refused(&what, &a, true);
        }
    }
    let a = p.get("/v1/api/ws");
    p.refused("GET /v1/api/ws without upgrade", &a, true);
    let req = p
        .request(Method::GET, "/v1/api/ws", false)
        .header("Connection", "upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "99");
    let a = p.send("GET /v1/api/ws version 99", req);
    p.refused("GET /v1/api/ws version 99", &a, true);

    let keys: [&[u8]; 6] = [
        b"",
        b"sk_test_",
        b"sk_live_x",
        &[b"sk_test_".as_slice(), &[b'a'; 7_000]].concat(),
        b"sk_test_\xFF\xFE",
        b"Bearer sk_test_x",
    ];
    for key in keys {
        for route in [&routes[0], &routes[1], &routes[8]] {
            let what = format!(
                "POST {route} key {}",
                abbreviate(&String::from_utf8_lossy(key))
            );
            let header = reqwest::header::HeaderValue::from_bytes(key).unwrap();
            let req = p.app.client.post(p.url(route)).header("X-Api-Key", header);
            let a = p.send(&what, req.body("{}"));
            p.refused(&what, &a, true);
        }
    }
    let a = p.send("GET without key", p.app.client.get(p.url(&routes[6])));
    p.refused("GET without key", &a, true);
    let url = p.url(&format!("{}?api_key=sk_test_nope", routes[6]));
    let a = p.send("GET key in query", p.app.client.get(url));
    p.refused("GET key in query", &a, true);
}

// ---------------------------------------------------------------------------
// Admin.

/// Company 1 as the admin API shows it: untouched by the admin attacks.
fn company_one(app: &TestApp) -> Value {
    json!([
        data(app.admin_get("/admin/companies/1")),
        data(app.admin_get("/admin/companies/1/resoluciones")),
        data(app.admin_get("/admin/companies/1/api-keys")),
    ])
}

/// Where `after` differs from `before`, if it does.
fn difference(what: &str, before: &Value, after: &Value) -> Option<String> {
    if before == after {
        return None;
    }
    let leaf_changed = |p: &Vec<Step>| {
        let v = get(before, p);
        !v.is_object() && !v.is_array() && v != get(after, p)
    };
    let how = match paths(before).into_iter().find(leaf_changed) {
        Some(p) => format!(
            "{} was {} and is {}",
            show(&p),
            get(before, &p),
            get(after, &p)
        ),
        None => format!("is now {}", abbreviate(&after.to_string())),
    };
    Some(format!("{what} changed: {how}"))
}

/// Waits for a test-set run of company 2 to end, so the next request is
/// judged on its body rather than on a run in progress.
fn wait_for_test_set(app: &TestApp) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let (_, run) = json(app.admin_get("/admin/companies/2/set-pruebas"));
        if run["data"]["estado"] != "en_progreso" {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("test set of company 2 still running after 60 s");
}

/// What accepted admin requests created: companies, and resolutions and
/// keys of company 2.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Created {
    companies: usize,
    resolutions: usize,
    keys: usize,
}

impl Created {
    fn count(&mut self, route: &str, a: &Answer) {
        if a.status != 201 {
            return;
        }
        match route {
            "/admin/companies" => self.companies += 1,
            "/admin/companies/2/resoluciones" => self.resolutions += 1,
            "/admin/companies/2/api-keys" => self.keys += 1,
            _ => {}
        }
    }
}

fn admin_counts(app: &TestApp) -> Created {
    let len = |path: &str| data(app.admin_get(path)).as_array().unwrap().len();
    Created {
        companies: len("/admin/companies"),
        resolutions: len("/admin/companies/2/resoluciones"),
        keys: len("/admin/companies/2/api-keys"),
    }
}

/// `POST /admin/companies`, each request with a NIT of its own.
fn admin_companies(p: &mut Probe, kinds: &[Vec<String>], rng: &mut Rng, created: &mut Created) {
    const PATH: &str = "/admin/companies";
    let mut nit = 700_000_000u64;
    let mut company = || {
        nit += 1;
        json!({"nit": nit.to_string(), "razon_social": "Hostil S.A.S.", "direccion": "Calle 1",
               "email": "hostil@example.test", "tipo_organizacion": 1,
               "rate_limit_per_minute": 100, "limite_documentos_mes": 10, "demo": false})
    };
    let base = company();
    for m in mutations(&base, kinds, rng, |_| Plan::OneOfEach) {
        let text = if m.what.starts_with("nit") {
            m.text.clone()
        } else {
            m.text
                .replacen(&base["nit"].to_string(), &company()["nit"].to_string(), 1)
        };
        let a = p.admin(Method::POST, PATH, &m.what, text);
        p.judged(&m.what, &a, &m);
        created.count(PATH, &a);
    }
    // PATCH refuses a limit of 0 requests a minute; so must creation.
    let mut zero = company();
    zero["rate_limit_per_minute"] = json!(0);
    let a = p.admin(
        Method::POST,
        PATH,
        "rate_limit_per_minute = 0",
        zero.to_string(),
    );
    p.refused("POST /admin/companies rate_limit_per_minute = 0", &a, true);
    created.count(PATH, &a);
    let mut valid = || company().to_string();
    p.body_attacks(Method::POST, PATH, true, &mut valid, &mut |_, a| {
        created.count(PATH, a)
    });
}

/// Valid bodies of company 2's endpoints; what they accept changes company
/// 2 only.
fn company_two_bodies() -> Vec<(Method, &'static str, Value)> {
    let p12 = base64::engine::general_purpose::STANDARD.encode(crate::admin::pkcs12(-1, 365));
    vec![
        (
            Method::PATCH,
            "",
            json!({"rate_limit_per_minute": 100000, "limite_documentos_mes": 100000,
                   "webhook_url": ""}),
        ),
        (
            Method::POST,
            "/software",
            json!({"tipo": "facturacion", "software_id": "sw-hostil", "pin": "12345",
                   "test_set_id": "ts-hostil", "proveedor_nit": "900123456"}),
        ),
        (
            Method::POST,
            "/resoluciones",
            json!({"id_tipo_documento": 1, "numero_resolucion": "18760000099",
                   "fecha_resolucion": "2024-01-01", "prefijo": "HST", "desde": 1, "hasta": 1000,
                   "vigencia_desde": "2024-01-01", "vigencia_hasta": "2024-12-31",
                   "clave_tecnica": "abc"}),
        ),
        (
            Method::POST,
            "/certificado",
            json!({"pkcs12_base64": p12, "password": "secreto"}),
        ),
        (
            Method::POST,
            "/api-keys",
            json!({"ambiente": "test", "label": "hostil"}),
        ),
        (
            Method::POST,
            "/set-pruebas",
            json!({"facturas": 1, "notas_credito": 1, "notas_debito": 0}),
        ),
    ]
}

fn admin_company_two(p: &mut Probe, kinds: &[Vec<String>], rng: &mut Rng, created: &mut Created) {
    for (method, tail, base) in company_two_bodies() {
        let path = format!("/admin/companies/2{tail}");
        let test_set = tail == "/set-pruebas";
        // The plan's counts are small integers that are summed: every
        // boundary number goes there.
        let plan = |_: &[Step]| if test_set { Plan::All } else { Plan::OneOfEach };
        for m in mutations(&base, kinds, rng, plan) {
            let a = p.admin(method.clone(), &path, &m.what, m.text.clone());
            p.judged(&m.what, &a, &m);
            created.count(&path, &a);
            if test_set && a.accepted() {
                wait_for_test_set(p.app);
            }
        }
        let mut valid = || base.to_string();
        p.body_attacks(method.clone(), &path, true, &mut valid, &mut |_, a| {
            created.count(&path, a)
        });
        if test_set {
            wait_for_test_set(p.app);
        }
        // The valid body on ids that are no company (a third of them).
        for id in bad_ids().into_iter().step_by(3) {
            let path = format!("/admin/companies/{id}{tail}");
            let a = p.admin(method.clone(), &path, "bad id", base.to_string());
            p.refused(&path, &a, true);
        }
    }
}

fn admin_reads(p: &mut Probe) {
    for id in bad_ids() {
        for tail in [
            "",
            "/resoluciones",
            "/api-keys",
            "/webhooks",
            "/set-pruebas",
        ] {
            let path = format!("/admin/companies/{id}{tail}");
            let a = p.admin(Method::GET, &path, "bad id", Vec::new());
            p.refused(&path, &a, true);
        }
        let path = format!("/admin/api-keys/{id}/revoke");
        let a = p.admin(Method::POST, &path, "bad id", Vec::new());
        p.refused(&path, &a, true);
    }
    for token in ["", "x", "Bearer", &"a".repeat(10_000)] {
        let req = p
            .app
            .client
            .get(p.url("/admin/companies"))
            .header("Authorization", format!("Bearer {token}"));
        p.send(&format!("admin token {}", abbreviate(token)), req);
    }
}

fn admin(p: &mut Probe, kinds: &[Vec<String>], rng: &mut Rng) -> Created {
    let mut created = Created::default();
    admin_companies(p, kinds, rng, &mut created);
    admin_company_two(p, kinds, rng, &mut created);
    admin_reads(p);
    created
}

// ---------------------------------------------------------------------------

#[test]
fn hostile_client_gets_4xx_envelopes_and_changes_nothing() {
    let app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "1000000")
            .env("EMISOR_AUTHORITY__SIM_ASYNC_DELAY_S", "0.01")
            .env("EMISOR_RESILIENCE__TIME_SCALE", "0.01"),
    );
    let started = Instant::now();
    let world = setup(&app);
    let kinds = hostile_kinds();
    let mut rng = Rng(SEED);
    let mut p = Probe::new(&app);

    // The keyed API: documents, customers, contingency, reads.
    let before = holdings(&app);
    let mut acc = Accepted::default();
    p.section("facturacion");
    facturacion(&mut p, &world, &kinds, &mut rng, &mut acc);
    p.section("facturacion-es");
    facturacion_es(&mut p, &world, &kinds, &mut rng, &mut acc);
    p.section("clientes");
    clientes(&mut p, &kinds, &mut rng, &mut acc);
    p.section("contingency");
    contingency(&mut p, &world, &kinds, &mut rng);
    p.section("support documents and POS");
    families(&mut p, &world, &kinds, &mut rng, &mut acc);
    p.section("reads");
    reads(&mut p, &world);
    p.section("methods and keys");
    methods_and_keys(&mut p, &world);
    let after = holdings(&app);
    let mut problems = acc.explains(&before, &after);

    // The admin API, against a second company.
    let one = company_one(&app);
    let counts = admin_counts(&app);
    p.section("admin");
    let created = admin(&mut p, &kinds, &mut rng);
    let now = admin_counts(&app);
    let expected = Created {
        companies: counts.companies + created.companies,
        resolutions: counts.resolutions + created.resolutions,
        keys: counts.keys + created.keys,
    };
    if now != expected {
        problems.push(format!(
            "admin (companies, resolutions, keys): {counts:?} + accepted {created:?} != {now:?}"
        ));
    }
    problems.extend(difference("company 1", &one, &company_one(&app)));

    let (status, health) = json(
        app.client
            .get(format!("{}/healthz", app.url))
            .send()
            .unwrap(),
    );
    assert_eq!(status, 200, "alive at the end: {health}");
    let log = app.log();
    for bad in ["panicked", "internal error"] {
        if let Some(line) = log.lines().find(|l| l.contains(bad)) {
            problems.push(format!("server log: {line}"));
        }
    }
    eprintln!(
        "hostile: {} requests ({}) in {:.1} s, by status {:?}; accepted {} documents, {} customers",
        p.sent,
        p.tally(),
        started.elapsed().as_secs_f64(),
        p.by_status,
        acc.documents,
        acc.customers.len()
    );
    problems.extend(p.failures.iter().cloned());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// One body, sent raw: the duplicate-key cases cannot be built as a `Value`.
fn send_text(app: &TestApp, method: Method, path: &str, admin: bool, text: String) -> (u16, Value) {
    let req = app
        .client
        .request(method, format!("{}{path}", app.url))
        .header("Content-Type", "application/json");
    let req = if admin {
        req.bearer_auth(app.admin_token())
    } else {
        req.header("X-Api-Key", app.sk_test())
    };
    json(req.body(text).send().unwrap())
}

/// `text` (one object) with `insert` placed right after `anchor`.
fn inserted(text: &str, anchor: &str, insert: &str) -> String {
    assert!(text.contains(anchor), "{anchor} not in {text}");
    text.replacen(anchor, &format!("{anchor}{insert}"), 1)
}

#[test]
fn a_key_twice_is_malformed_json_naming_it_on_keyed_and_admin_endpoints() {
    let app = TestApp::spawn();
    let mut invoice = examples::invoice();
    invoice["transmit"] = json!(false);
    invoice["referencia_externa"] = json!("dup-keys");
    let invoice = invoice.to_string();
    let customer = examples::company_customer().to_string();
    let next =
        || data(app.get("/v1/api/facturacion/consecutivo/fe", &app.sk_test()))["siguiente"].clone();
    let numbering = next();
    let customers = data(app.get("/v1/api/clientes", &app.sk_test()))["total"].clone();
    let companies = data(app.admin_get("/admin/companies"));
    // (method, path, admin, body, path of the key given twice)
    let cases = [
        (
            Method::POST,
            "/v1/api/facturacion",
            false,
            inserted(&invoice, "{", r#""transmit":true,"#),
            "transmit",
        ),
        (
            Method::POST,
            "/v1/api/facturacion",
            false,
            inserted(
                &invoice,
                r#""customer":{"#,
                r#""email":"otro@example.test","#,
            ),
            "customer.email",
        ),
        (
            Method::POST,
            "/v1/api/facturacion",
            false,
            inserted(&invoice, r#""invoice_lines":[{"#, r#""description":"x","#),
            "invoice_lines[0].description",
        ),
        (
            Method::POST,
            "/v1/api/clientes",
            false,
            inserted(
                &customer,
                r#""type_document_identification":{"#,
                r#""code":"13","#,
            ),
            "type_document_identification.code",
        ),
        (
            Method::POST,
            "/admin/companies",
            true,
            r#"{"nit":"811000001","razon_social":"Dup S.A.S.","nit":"811000002"}"#.into(),
            "nit",
        ),
        (
            Method::PATCH,
            "/admin/companies/1",
            true,
            r#"{"rate_limit_per_minute":5,"rate_limit_per_minute":7}"#.into(),
            "rate_limit_per_minute",
        ),
        // The test-set plan ignores unknown fields; a duplicate inside one
        // is still found.
        (
            Method::POST,
            "/admin/companies/1/set-pruebas",
            true,
            r#"{"facturas":1,"extra":{"y":[{"z":1,"z":2}]}}"#.into(),
            "extra.y[0].z",
        ),
    ];
    for (method, path, admin, text, at) in cases {
        let key = at.rsplit('.').next().unwrap();
        let (status, body) = send_text(&app, method.clone(), path, admin, text.clone());
        assert_eq!(status, 400, "{method} {path} {text}: {body}");
        assert_eq!(
            body["error"]["code"], "MALFORMED_JSON",
            "{method} {path} {text}: {body}"
        );
        assert_eq!(
            body["message"],
            format!("{at}: duplicate key `{key}`"),
            "{body}"
        );
    }
    // Nothing was written: no number taken, no customer, company or run.
    assert_eq!(next(), numbering);
    assert_eq!(
        data(app.get("/v1/api/clientes", &app.sk_test()))["total"],
        customers
    );
    let now = data(app.admin_get("/admin/companies"));
    assert_eq!(now, companies);
    assert_error(
        app.admin_get("/admin/companies/1/set-pruebas"),
        404,
        "NOT_FOUND",
    );
    // The bodies without their duplicate are accepted.
    let (status, body) = json(app.post_raw("/v1/api/facturacion", &app.sk_test(), invoice));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["documento"]["numero"],
        numbering.to_string().trim_matches('"')
    );
}

/// The event and registry routes (issue 16) against garbage: every answer
/// a 4xx in the envelope, nothing stored, nothing sent to the authority.
#[test]
fn hostile_event_and_registry_requests_get_4xx_and_change_nothing() {
    let app = TestApp::spawn_with(
        Launch::default().env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000"),
    );
    let key = app.sk_test();
    let cufe = "a".repeat(96);
    let huge = "x".repeat(100_000);
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let bomb = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><Invoice xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\">&c;</Invoice>";
    let event_paths = [
        "eventos/acuse-recibo",
        "eventos/recibo-bien",
        "eventos/aceptacion-expresa",
        "eventos/aceptacion-tacita",
        "eventos/reclamo",
    ];
    let mut bodies: Vec<(String, String)> = Vec::new();
    for path in event_paths {
        for body in [
            "".to_string(),
            "null".into(),
            "[]".into(),
            "{}".into(),
            "{\"cufe\": 5}".into(),
            "{\"cufe\": null}".into(),
            json!({"cufe": ""}).to_string(),
            json!({"cufe": huge}).to_string(),
            json!({"cufe": "zz\u{0}<&>"}).to_string(),
            json!({"cufe": cufe, "id_empresa": 999}).to_string(),
            json!({"cufe": cufe, "id_empresa": "uno"}).to_string(),
            json!({"cufe": cufe, "motivo": ["01"]}).to_string(),
            json!({"cufe": cufe, "motivo": huge}).to_string(),
            format!("{{\"cufe\": \"{cufe}\", \"cufe\": \"{cufe}\"}}"),
            json!({"cufe": cufe}).to_string(),
            nested_objects(10_000),
        ] {
            bodies.push((path.to_string(), body));
        }
    }
    for body in [
        json!({"xml_base64": "not base64!"}).to_string(),
        json!({"xml_base64": b64("")}).to_string(),
        json!({"xml_base64": b64("<Invoice")}).to_string(),
        json!({"xml_base64": b64(bomb)}).to_string(),
        json!({"xml_base64": b64(&format!("<Invoice xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2\">{huge}</Invoice>"))}).to_string(),
        json!({"xml_base64": base64::engine::general_purpose::STANDARD.encode([0xff, 0xfe, 0x00])}).to_string(),
        json!({"xml_base64": 42}).to_string(),
        json!({"id_empresa": 1}).to_string(),
        "{\"xml_base64\": \"a\", \"xml_base64\": \"b\"}".into(),
    ] {
        bodies.push(("eventos/cargar-documento".into(), body));
    }
    for body in [
        json!({"cufe": cufe}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "999"}).to_string(),
        json!({"cufe": cufe, "codigo_evento": 36}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036"}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {"tipo_documento": "31", "numero_documento": huge, "nombre": "x"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {"tipo_documento": "31", "numero_documento": "9001", "dv": "77", "nombre": "x"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "036", "endosatario": {"tipo_documento": "<x>", "numero_documento": "9001", "nombre": "x"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "035", "condiciones_financieras": {"valor_nominal_factura": "mucho"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "035", "condiciones_financieras": {"fecha_vencimiento_pago": "2030-02-30"}}).to_string(),
        json!({"cufe": cufe, "codigo_evento": "035"}).to_string(),
    ] {
        bodies.push(("registry/registrar-evento".into(), body));
    }
    for (path, body) in &bodies {
        let res = app.post_raw(&format!("/v1/api/{path}"), &key, body.clone());
        let status = res.status().as_u16();
        let text = res.text().unwrap();
        assert!(
            (400..500).contains(&status),
            "{path} {}: {status} {text}",
            abbreviate(body)
        );
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"));
        assert_eq!(v["success"], false, "{path}: {text}");
        assert!(v["error"]["code"].is_string(), "{path}: {text}");
    }
    // The XML form of the upload, with garbage.
    for body in [&b"\xff\xfe"[..], b"", bomb.as_bytes(), huge.as_bytes()] {
        let res = app
            .client
            .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
            .header("X-Api-Key", &key)
            .header("Content-Type", "application/xml")
            .body(body.to_vec())
            .send()
            .unwrap();
        let status = res.status().as_u16();
        assert!((400..500).contains(&status), "XML upload: {status}");
    }
    for path in [
        "eventos/documentos?page=0",
        "eventos/documentos?limit=0",
        "eventos/documentos?limit=1000",
        "eventos/documentos?page=-1",
        "eventos/documentos?page=abc",
        "eventos/documentos/zzz",
        "eventos/documentos/%00",
        &format!("eventos/documentos/{cufe}"),
        &format!("eventos/documentos/{cufe}/eventos/1/xml"),
        &format!("eventos/documentos/{cufe}/eventos/-1/xml"),
        "registry/facturas-elegibles?limit=101",
        "registry/hoja-de-vida/..%2F..%2Fetc",
        &format!("registry/hoja-de-vida/{}", "f".repeat(5000)),
    ] {
        let res = app.get(&format!("/v1/api/{path}"), &key);
        let status = res.status().as_u16();
        assert!((400..500).contains(&status), "GET {path}: {status}");
    }
    // Nothing stored, nothing sent.
    let (_, list) = json(app.get("/v1/api/eventos/documentos", &key));
    assert_eq!(list["data"]["total"], 0, "{list}");
    let (_, eligible) = json(app.get("/v1/api/registry/facturas-elegibles", &key));
    assert_eq!(eligible["data"]["total"], 0, "{eligible}");
    let stats = crate::flow_helpers::sim_stats(&app);
    assert!(
        stats["calls"].get("SendEventUpdateStatus").is_none(),
        "{stats}"
    );
}

// ---------------------------------------------------------------------------
// The Spanish-named API (`/facturacion-es/*`): every route's example, with
// its aliases, mutated field by field; accepted ones are drafts, and the
// numbering must show exactly them.

/// The customer a Spanish body names, as stored: a NIT without dots or
/// check digit.
fn spanish_customer(body: &Value) -> Option<String> {
    if body.get("customer").is_some() {
        return None;
    }
    let c = body.get("cliente").or_else(|| body.get("proveedor"));
    let c = c.filter(|c| c.is_object())?;
    let id = ["numero_identificacion", "nit", "cedula"]
        .iter()
        .find_map(|k| match &c[*k] {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })?;
    let nit = c["tipo_documento"]
        .as_str()
        .is_some_and(|t| t.eq_ignore_ascii_case("nit") || t == "31")
        || c["tipo_documento"] == 31
        || (c.get("tipo_documento").is_none() && c.get("nit").is_some());
    if nit {
        let digits: String = id.chars().filter(|ch| *ch != '.' && *ch != ' ').collect();
        return Some(digits.split('-').next().unwrap_or_default().to_string());
    }
    Some(id)
}

fn facturacion_es(
    p: &mut Probe,
    w: &World,
    kinds: &[Vec<String>],
    rng: &mut Rng,
    acc: &mut Accepted,
) {
    use emisor::api::facturacion_es::examples as es;
    let mut seen = BTreeSet::new();
    for (name, _, path, body) in es::all() {
        let mut base = body;
        if base.get("documento_referencia").is_some() {
            let original = if path.ends_with("nota-ajuste-ds") {
                w.support
            } else {
                w.invoice
            };
            base["documento_referencia"] = json!(original);
        }
        base["transmitir"] = json!(false);
        base["referencia"] = json!("hostile-base");
        let plan = |path: &[Step]| {
            if path.len() == 1 || seen.insert(format!("{name}:{}", shape(path))) {
                Plan::OneOfEach
            } else {
                Plan::Skip
            }
        };
        for m in mutations(&base, kinds, rng, plan) {
            let text = if m.what.starts_with("referencia") {
                m.text.clone()
            } else {
                let fresh = json!(fresh_reference()).to_string();
                m.text.replacen("\"hostile-base\"", &fresh, 1)
            };
            let what = format!("es {name}: {}", m.what);
            let a = p.post_json(path, &what, text.clone());
            p.judged(&what, &a, &m);
            if a.accepted() {
                acc.document(&text, &a);
                let sent: Value = serde_json::from_str(&text).unwrap_or_default();
                if path.ends_with("/pos") && !sent["cliente"].is_object() {
                    // The final consumer.
                    acc.customers.insert("222222222222".into());
                }
            }
        }
    }
    // Whole-body attacks on the generic route.
    let mut valid = || {
        let mut b = es::generica();
        b["transmitir"] = json!(false);
        b["referencia"] = json!(fresh_reference());
        b.to_string()
    };
    p.body_attacks(
        Method::POST,
        "/v1/api/facturacion-es/",
        false,
        &mut valid,
        &mut |sent, a| acc.document(sent, a),
    );
}

// ---------------------------------------------------------------------------
// Support documents and POS (`/documentos-soporte`, `/pos`).

/// The valid bodies of the two families (drafts: nothing is transmitted).
fn support_body() -> Value {
    json!({
        "proveedor": {"numero_identificacion": "1020304050", "nombre": "Pedro Pérez",
                      "tipo_documento": "13", "correo": "pedro@example.test", "municipio": "05001"},
        "lineas": [{"descripcion": "Servicio", "cantidad": 2, "precio_unitario": 50000,
                    "unidad_medida": "E48", "retenciones": [{"tipo": "07", "porcentaje": 4}]}],
        "forma_pago": "1", "metodo_pago": "10", "centro_costos": "ADM",
        "transmitir": false, "referencia_externa": "hostile-base"
    })
}

fn pos_body() -> Value {
    json!({
        "id_caja": "2", "id_cajero": "5",
        "lineas": [{"descripcion": "Café", "cantidad": 2, "precio_unitario": 4500,
                    "porcentaje_iva": 8, "tipo_impuesto": "04", "descuento_valor": 500}],
        "propina_voluntaria": 1000,
        "pagos": [{"forma": "1", "metodo": "10", "monto": 10180}],
        "transmitir": false, "referencia_externa": "hostile-base"
    })
}

impl Accepted {
    /// An accepted support document or POS receipt (or note): its number,
    /// and the counterparty it upserted.
    fn family_document(&mut self, sent: &str, a: &Answer) {
        let d = &a.body.as_ref().expect("accepted document answers JSON")["data"];
        let prefix = d["prefijo"].as_str().expect("prefijo").to_string();
        let number = d["numero"].as_u64().expect("numero");
        self.numbers.entry(prefix).or_default().push(number);
        self.documents += 1;
        if let Ok(body) = serde_json::from_str::<Value>(sent) {
            for id in [
                &body["proveedor"]["numero_identificacion"],
                &body["cliente"]["numero_documento"],
            ] {
                let id = match id {
                    Value::String(s) => Some(s.trim().to_string()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                };
                if let Some(id) = id {
                    self.customers.insert(id);
                }
            }
            if body.get("cliente").is_none_or(Value::is_null)
                && body.get("lineas").is_some()
                && body.get("proveedor").is_none()
            {
                self.customers.insert("222222222222".into());
            }
        }
    }
}

fn families(p: &mut Probe, w: &World, kinds: &[Vec<String>], rng: &mut Rng, acc: &mut Accepted) {
    const DS: &str = "/v1/api/documentos-soporte";
    const POS: &str = "/v1/api/pos";
    let mut seen = BTreeSet::new();
    let fresh = |text: &str, what: &str| {
        if what.starts_with("referencia_externa") {
            text.to_string()
        } else {
            let r = json!(fresh_reference()).to_string();
            text.replacen("\"hostile-base\"", &r, 1)
        }
    };
    for (path, base) in [
        (format!("{DS}/emitir"), support_body()),
        (format!("{POS}/emitir"), pos_body()),
    ] {
        let plan = |path: &[Step]| {
            if path.len() == 1 || seen.insert(shape(path)) {
                Plan::OneOfEach
            } else {
                Plan::Skip
            }
        };
        for m in mutations(&base, kinds, rng, plan) {
            let text = fresh(&m.text, &m.what);
            let a = p.post_json(&path, &m.what, text.clone());
            p.judged(&m.what, &a, &m);
            if a.accepted() {
                acc.family_document(&text, &a);
            }
        }
        let mut valid = || {
            let mut b = base.clone();
            b["referencia_externa"] = json!(fresh_reference());
            b.to_string()
        };
        p.body_attacks(Method::POST, &path, false, &mut valid, &mut |sent, a| {
            acc.family_document(sent, a)
        });
    }
    // Originals issued through these APIs, then their notes mutated.
    let mut original = |path: String, body: Value| {
        let mut b = body;
        b["referencia_externa"] = json!(fresh_reference());
        let text = b.to_string();
        let a = p.post_json(&path, "original", text.clone());
        assert!(a.accepted(), "original {path}: {:?}", a.body);
        acc.family_document(&text, &a);
        a.body.unwrap()["data"]["id"].as_u64().unwrap()
    };
    let ds = original(format!("{DS}/emitir"), support_body());
    let pos = original(format!("{POS}/emitir"), pos_body());
    let notes = [
        (
            format!("{DS}/{ds}/nota-ajuste"),
            json!({"documento_referencia": ds, "concepto_nota": "3", "motivo": "Ajuste",
                   "lineas": [{"descripcion": "Ajuste", "cantidad": 1, "precio_unitario": 1000}],
                   "transmitir": false, "referencia_externa": "hostile-base"}),
        ),
        (
            format!("{POS}/{pos}/nota-ajuste"),
            json!({"concepto": "1", "motivo": "Devolución",
                   "lineas": [{"descripcion": "Café", "cantidad": 1, "precio_unitario": 4500, "porcentaje_iva": 8}],
                   "transmitir": false, "referencia_externa": "hostile-base"}),
        ),
    ];
    for (path, base) in notes {
        for m in mutations(&base, kinds, rng, |_| Plan::OneOfEach) {
            let text = fresh(&m.text, &m.what);
            let a = p.post_json(&path, &m.what, text.clone());
            p.judged(&m.what, &a, &m);
            if a.accepted() {
                acc.family_document(&text, &a);
            }
        }
    }
    // Path ids and query strings of every read.
    let ids = bad_ids().into_iter().chain([
        w.foreign.to_string(),
        w.invoice.to_string(),
        "4000000".into(),
    ]);
    for id in ids {
        for path in [
            format!("{DS}/{id}"),
            format!("{DS}/{id}/pdf"),
            format!("{DS}/{id}/xml"),
            format!("{POS}/{id}"),
            format!("{POS}/{id}/tirilla"),
        ] {
            let a = p.get(&path);
            p.refused(&path, &a, true);
        }
        for path in [
            format!("{DS}/{id}/consultar-tax"),
            format!("{DS}/{id}/nota-ajuste"),
            format!("{POS}/{id}/nota-ajuste"),
        ] {
            let a = p.keyed(
                Method::POST,
                &path,
                Some("application/json"),
                br#"{"concepto":"1","concepto_nota":"1","motivo":"x"}"#.to_vec(),
            );
            p.refused(&path, &a, true);
        }
    }
    let list_queries = [
        "?page=0",
        "?limit=0",
        "?limit=101",
        "?limit=-1",
        "?page=4294967296",
        "?fecha_desde=2024-13-01",
        "?fecha_desde=2025-02-01&fecha_hasta=2025-01-01",
        "?estado=7",
        "?estado=1,x",
        "?estado=%00",
        "?proveedor=%00",
        "?id_caja=%FF",
        "?id_cajero=1&id_cajero=2",
    ];
    for q in bad_queries()
        .into_iter()
        .chain(list_queries.map(String::from))
    {
        p.get(&format!("{DS}{q}"));
        p.get(&format!("{POS}{q}"));
        p.get(&format!("{POS}/arqueo{q}"));
        p.get(&format!("{POS}/{pos}/tirilla{q}"));
    }
    for w in ["90", "0", "-80", "80.0", "8O", "%00", "99999999999"] {
        let path = format!("{POS}/{pos}/tirilla?width={w}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
    for q in ["?fecha=hoy", "?fecha=2025-02-30", "?fecha=%00"] {
        let path = format!("{POS}/arqueo{q}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
}

// ---------------------------------------------------------------------------
// Payroll (issue 15): `/nomina/enviar`, `/nomina/ajuste` and the reads.

/// A valid draft payroll; `document` keeps equal bodies distinct.
fn payroll_draft(document: &str) -> Value {
    let mut body = crate::nomina::monthly(document);
    body["transmit"] = json!(false);
    body
}

fn fresh_employee() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("77{:06}", N.fetch_add(1, Ordering::Relaxed))
}

/// The number an accepted payroll answer took.
fn payroll_number(a: &Answer) -> u64 {
    a.body.as_ref().expect("accepted payroll answers JSON")["data"]["numero"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .expect("numero")
}

fn payroll_reads(p: &mut Probe, foreign_id: u64, foreign_cune: &str, own_id: u64) {
    const N: &str = "/v1/api/nomina";
    for id in bad_ids().into_iter().chain([foreign_id.to_string()]) {
        for path in [
            format!("{N}/{id}"),
            format!("{N}/{id}/xml"),
            format!("{N}/{id}/zip"),
            format!("{N}/{id}/pdf"),
        ] {
            let a = p.get(&path);
            p.refused(&path, &a, true);
        }
    }
    let tracks =
        bad_ids()
            .into_iter()
            .chain([foreign_cune.to_string(), "f".repeat(96), "x".repeat(5_000)]);
    for t in tracks {
        let path = format!("{N}/estado/{t}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
    for q in bad_queries().into_iter().chain(
        [
            "?tipo=",
            "?tipo=ajuste",
            "?tipo=OTRO",
            "?tipo=%00",
            "?estado=aceptada,",
            "?estado=ACEPTADA",
            "?estado=2",
            "?estado=%FF",
            "?fecha_desde=2025-02-30",
            "?fecha_desde=2025-03-02&fecha_hasta=2025-03-01",
            "?limit=0",
            "?limit=101",
            "?page=0",
            "?page=4294967296",
        ]
        .map(String::from),
    ) {
        p.get(&format!("{N}/{own_id}{q}"));
        p.get(&format!("{N}/listar{q}"));
    }
    let routes = [
        format!("{N}/enviar"),
        format!("{N}/ajuste"),
        format!("{N}/{own_id}"),
        format!("{N}/{own_id}/xml"),
        format!("{N}/estado/{}", "a".repeat(96)),
    ];
    for route in &routes {
        for m in [Method::PUT, Method::DELETE, Method::PATCH] {
            let what = format!("{m} {route}");
            let a = p.keyed(m, route, Some("application/json"), b"{}".to_vec());
            p.refused(&what, &a, true);
        }
    }
}

#[test]
fn hostile_client_on_payroll_gets_4xx_envelopes_and_changes_nothing() {
    let app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "1000000"),
    );
    let key = app.sk_test();
    let issue = |key: &str, body: &Value| data(app.post("/v1/api/nomina/enviar", key, body));
    let original = issue(&key, &payroll_draft(&fresh_employee()));
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other_key = second["data"]["sk_test"].as_str().unwrap().to_string();
    let foreign = issue(&other_key, &payroll_draft(&fresh_employee()));
    let foreign_cune = foreign["cune"].as_str().unwrap().to_string();

    let kinds = hostile_kinds();
    let mut rng = Rng(SEED);
    let mut p = Probe::new(&app);
    let first: u64 = original["numero"].as_str().unwrap().parse().unwrap();
    let mut numbers: Vec<u64> = Vec::new();

    p.section("nomina/enviar");
    let base = payroll_draft("7700000000");
    let mut seen = BTreeSet::new();
    let plan = |path: &[Step]| {
        if path.len() == 1 || seen.insert(shape(path)) {
            Plan::OneOfEach
        } else {
            Plan::Skip
        }
    };
    for m in mutations(&base, &kinds, &mut rng, plan) {
        let a = p.post_json("/v1/api/nomina/enviar", &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        if a.accepted() {
            numbers.push(payroll_number(&a));
        }
    }
    let mut valid = || payroll_draft(&fresh_employee()).to_string();
    p.body_attacks(
        Method::POST,
        "/v1/api/nomina/enviar",
        false,
        &mut valid,
        &mut |_, a| numbers.push(payroll_number(a)),
    );

    p.section("nomina/ajuste");
    let adjustment = json!({
        "cune_referencia": original["cune"],
        "tipo_nota": 1,
        "transmit": false,
        "empleado": base["empleado"],
        "devengados": [{"seccion": "BASICO", "dias_trabajados": 30, "sueldo_trabajado": 1500000}],
        "deducciones": [{"seccion": "SALUD", "porcentaje": 4, "valor_total": 60000}]
    });
    for m in mutations(&adjustment, &kinds, &mut rng, |_| Plan::OneOfEach) {
        let a = p.post_json("/v1/api/nomina/ajuste", &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        if a.accepted() {
            numbers.push(payroll_number(&a));
        }
    }
    let mut foreign_adjustment = adjustment.clone();
    foreign_adjustment["cune_referencia"] = json!(foreign_cune);
    let a = p.post_json(
        "/v1/api/nomina/ajuste",
        "another company's CUNE",
        foreign_adjustment.to_string(),
    );
    p.refused("ajuste of another company's payroll", &a, true);
    let mut n = 0u32;
    let mut valid = || {
        n += 1;
        let mut b = adjustment.clone();
        b["notas"] = json!([format!("ajuste {n}")]);
        b.to_string()
    };
    p.body_attacks(
        Method::POST,
        "/v1/api/nomina/ajuste",
        false,
        &mut valid,
        &mut |_, a| numbers.push(payroll_number(a)),
    );

    p.section("nomina reads");
    let own_id = original["id"].as_u64().unwrap();
    payroll_reads(
        &mut p,
        foreign["id"].as_u64().unwrap(),
        &foreign_cune,
        own_id,
    );

    // The numbering advanced by exactly the accepted payrolls, no gap.
    let last: u64 = issue(&key, &payroll_draft(&fresh_employee()))["numero"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut problems = Vec::new();
    numbers.sort_unstable();
    let expected: Vec<u64> = (first + 1..last).collect();
    if numbers != expected {
        problems.push(format!(
            "payroll numbering went from {first} to {last}, accepted payrolls have {numbers:?}"
        ));
    }
    let log = app.log();
    for bad in ["panicked", "internal error"] {
        if let Some(line) = log.lines().find(|l| l.contains(bad)) {
            problems.push(format!("server log: {line}"));
        }
    }
    eprintln!(
        "hostile payroll: {} requests ({}), by status {:?}; accepted {} payrolls",
        p.sent,
        p.tally(),
        p.by_status,
        numbers.len()
    );
    problems.extend(p.failures.iter().cloned());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------
// Email (issue 12): `/email/documento/:id`, `/email/reenviar/:id_correo`,
// `/email/logs/:id_documento`.

/// Addresses no mail server could take, or that smuggle a header or a
/// second recipient.
fn bad_addresses() -> Vec<String> {
    [
        "",
        " ",
        "a",
        "a@",
        "@example.test",
        "a@@example.test",
        "a b@example.test",
        "a@exa mple.test",
        "a@example..test",
        "a@-example.test",
        "a.@example.test",
        ".a@example.test",
        "a@example.test,b@example.test",
        "a@example.test;b@example.test",
        "a@example.test b@example.test",
        "<a@example.test>",
        "Cliente <a@example.test>",
        "a@example.test\r\nBcc: b@example.test",
        "a@example.test\nSubject: x",
        "a\u{0}@example.test",
        "a@example.test\u{0}",
        "a@exa\u{7}mple.test",
        "a@[999.1.1.1]",
        "a@example.test\u{202e}",
        "😀@😀",
    ]
    .map(String::from)
    .into_iter()
    .chain([
        // Past the 64-byte local part, the 254-byte domain, a 63-byte label.
        format!("{}@example.test", "a".repeat(65)),
        format!("a@{}.test", "b".repeat(64)),
        format!("a@{}test", "b.".repeat(130)),
        // 100 kB.
        format!("{}@example.test", "x".repeat(100_000)),
        format!("a@{}", "ñ".repeat(50_000)),
    ])
    .collect()
}

/// `n` good addresses.
fn addresses(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("copia{i}@example.test")).collect()
}

/// How many emails each of `docs` has, as `key` sees them.
fn mail_counts(app: &TestApp, docs: &[(u64, &str)]) -> Vec<u64> {
    docs.iter()
        .map(|(doc, key)| {
            let (status, res) = json(app.get(&format!("/v1/api/email/logs/{doc}?limit=1"), key));
            assert_eq!(status, 200, "{res}");
            res["data"]["total"].as_u64().unwrap()
        })
        .collect()
}

/// Waits until every email of `doc` has left the queue (the automatic one).
fn settled(app: &TestApp, doc: u64, key: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, res) = json(app.get(&format!("/v1/api/email/logs/{doc}?limit=100"), key));
        assert_eq!(status, 200, "{res}");
        let items = res["data"]["items"].as_array().unwrap().clone();
        if !items.is_empty() && items.iter().all(|l| l["status"] != "queued") {
            return items;
        }
        assert!(Instant::now() < deadline, "emails of {doc}: {items:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An invoice issued synchronously (accepted) with `key`; its id.
fn accepted(app: &TestApp, key: &str) -> u64 {
    let mut body = examples::invoice();
    body["referencia_externa"] = json!(fresh_reference());
    let d = data(app.post("/v1/api/facturacion", key, &body));
    assert_eq!(d["id_estado_documento"], 2, "{d}");
    d["documento"]["id"].as_u64().unwrap()
}

#[test]
fn hostile_client_on_email_gets_4xx_envelopes_and_queues_nothing() {
    const E: &str = "/v1/api/email";
    let app = TestApp::spawn_with(
        Launch::default()
            .capture_log()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "1000000"),
    );
    let key = app.sk_test();
    let (status, second) = json(app.admin_post(
        "/admin/companies",
        &json!({"nit": "800197268", "razon_social": "Otra S.A.S.", "demo": true}),
    ));
    assert_eq!(status, 201, "{second}");
    let other_key = second["data"]["sk_test"].as_str().unwrap().to_string();
    let own = accepted(&app, &key);
    let draft = issue_draft(&app, &key, examples::invoice(), &fresh_reference());
    let foreign = accepted(&app, &other_key);
    // The automatic emails of both accepted invoices, out of the queue.
    let own_mail = settled(&app, own, &key)[0]["id_correo"].as_u64().unwrap();
    let foreign_mail = settled(&app, foreign, &other_key)[0]["id_correo"]
        .as_u64()
        .unwrap();
    let docs = [(own, key.as_str()), (draft, &key), (foreign, &other_key)];
    let before = mail_counts(&app, &docs);

    let kinds = hostile_kinds();
    let mut rng = Rng(SEED);
    let mut p = Probe::new(&app);
    // Sends that were accepted (a mutation may leave a body valid).
    let mut queued = 0u64;

    p.section("email/documento");
    let send = format!("{E}/documento/{own}");
    let base = json!({
        "to": ["cliente@example.test"],
        "cc": ["copia@example.test"],
        "id_empresa": 1
    });
    for m in mutations(&base, &kinds, &mut rng, |_| Plan::All) {
        let a = p.post_json(&send, &m.what, m.text.clone());
        p.judged(&m.what, &a, &m);
        queued += u64::from(a.accepted());
    }
    let mut valid = || base.to_string();
    p.body_attacks(Method::POST, &send, false, &mut valid, &mut |_, _| {
        queued += 1
    });
    for bad in bad_addresses() {
        for body in [
            json!({"to": [bad.clone()]}),
            json!({"to": ["cliente@example.test"], "cc": [bad.clone()]}),
            json!({"to": ["cliente@example.test", bad.clone()], "cc": []}),
        ] {
            let what = format!("address {}", abbreviate(&body.to_string()));
            let a = p.post_json(&send, &what, body.to_string());
            p.refused(&what, &a, true);
            if a.accepted() {
                queued += 1;
            } else if a.status != 422 && a.status != 413 {
                p.fail(&what, format!("{}: a bad address is a 422", a.status));
            }
        }
    }
    // Too many recipients: 20 in all is the most.
    for (to, cc) in [(1, 20), (21, 0), (10, 11), (1, 1_000), (1, 30_000)] {
        let body = json!({"to": addresses(to), "cc": addresses(cc)}).to_string();
        let what = format!("{to} to and {cc} cc");
        let a = p.post_json(&send, &what, body);
        p.refused(&what, &a, true);
        queued += u64::from(a.accepted());
    }
    for body in [
        json!({"to": []}),
        json!({"to": "cliente@example.test"}),
        json!({"to": [["cliente@example.test"]]}),
        json!({"to": [{"email": "cliente@example.test"}]}),
        json!({"to": [1]}),
        json!({"cc": "copia@example.test"}),
        json!({"cc": [null]}),
        json!({"id_empresa": 2}),
        json!({"id_empresa": "1"}),
        json!({"bcc": ["copia@example.test"]}),
        json!({"to": ["cliente@example.test"], "adjuntos": []}),
    ] {
        let what = body.to_string();
        let a = p.post_json(&send, &what, what.clone());
        p.refused(&what, &a, true);
        queued += u64::from(a.accepted());
    }
    // Ids that name no document of the key's company, or one not accepted.
    let ids =
        bad_ids()
            .into_iter()
            .chain([foreign.to_string(), draft.to_string(), "4000000".into()]);
    for id in ids {
        let path = format!("{E}/documento/{id}");
        for body in ["", "{}", r#"{"to": ["cliente@example.test"]}"#] {
            let a = p.post_json(&path, &format!("[{body}]"), body);
            p.refused(&path, &a, true);
            queued += u64::from(a.accepted());
        }
    }
    let a = p.post_json(&format!("{E}/documento/{draft}"), "draft", "{}");
    if a.status != 409 {
        p.fail(
            "a draft is mailed",
            format!("{}: INVALID_STATE is a 409", a.status),
        );
    }

    p.section("email/reenviar");
    let resend = format!("{E}/reenviar/{own_mail}");
    let mut resent = 0u64;
    for attack in body_attacks(r#"{"id_empresa":1}"#) {
        let what = format!("POST {resend} {}", attack.what);
        let req = p
            .request(Method::POST, &resend, false)
            .header("Content-Type", "application/json")
            .body(attack.body.clone());
        let a = p.send(&what, req);
        p.refused(&what, &a, attack.must_refuse);
        resent += u64::from(a.accepted());
    }
    for body in [
        r#"{"id_empresa":2}"#,
        r#"{"id_empresa":"1"}"#,
        r#"{"id_empresa":-1}"#,
        r#"{"id_empresa":1.5}"#,
        r#"{"id_empresa":18446744073709551616}"#,
        r#"{"to":["otro@example.test"]}"#,
        r#"{"id_empresa":1,"id_empresa":1}"#,
        "[]",
        "null",
    ] {
        let a = p.post_json(&resend, body, body);
        p.refused(&format!("reenviar {body}"), &a, true);
        resent += u64::from(a.accepted());
    }
    let ids = bad_ids()
        .into_iter()
        .chain([foreign_mail.to_string(), "4000000".into()]);
    for id in ids {
        let path = format!("{E}/reenviar/{id}");
        for body in ["", "{}"] {
            let a = p.post_json(&path, &format!("[{body}]"), body);
            p.refused(&path, &a, true);
            resent += u64::from(a.accepted());
        }
    }

    p.section("email/logs");
    let ids = bad_ids()
        .into_iter()
        .chain([foreign.to_string(), "4000000".into()]);
    for id in ids {
        let path = format!("{E}/logs/{id}");
        let a = p.get(&path);
        p.refused(&path, &a, true);
    }
    for q in bad_queries().into_iter().chain(
        [
            "?limit=0",
            "?limit=101",
            "?limit=-1",
            "?limit=abc",
            "?page=0",
            "?page=-1",
            "?page=4294967296",
            "?page=4294967295&limit=100",
            "?page=1.5",
        ]
        .map(String::from),
    ) {
        p.get(&format!("{E}/logs/{own}{q}"));
    }

    p.section("email methods and keys");
    let routes = [
        format!("{E}/documento/{own}"),
        format!("{E}/reenviar/{own_mail}"),
        format!("{E}/logs/{own}"),
    ];
    for route in &routes {
        for m in [Method::PUT, Method::DELETE, Method::PATCH] {
            let what = format!("{m} {route}");
            let a = p.keyed(m, route, Some("application/json"), b"{}".to_vec());
            p.refused(&what, &a, true);
        }
    }
    let keys: [&[u8]; 6] = [
        b"",
        b"sk_test_",
        b"sk_live_x",
        &[b"sk_test_".as_slice(), &[b'a'; 7_000]].concat(),
        b"sk_test_\xFF\xFE",
        b"Bearer sk_test_x",
    ];
    for route in &routes {
        let method = if route.contains("/logs/") {
            Method::GET
        } else {
            Method::POST
        };
        for key in keys {
            let what = format!(
                "{method} {route} key {}",
                abbreviate(&String::from_utf8_lossy(key))
            );
            let header = reqwest::header::HeaderValue::from_bytes(key).unwrap();
            let req = p
                .app
                .client
                .request(method.clone(), p.url(route))
                .header("X-Api-Key", header)
                .header("Content-Type", "application/json");
            let a = p.send(&what, req.body("{}"));
            p.refused(&what, &a, true);
            if a.accepted() {
                // Whichever it was, one more email of the document.
                queued += 1;
            } else if a.status != 401 {
                p.fail(&what, format!("{}: a bad key is a 401", a.status));
            }
        }
        let what = format!("{method} {route} without key");
        let req = p.app.client.request(method.clone(), p.url(route));
        let a = p.send(&what, req.body("{}"));
        p.refused(&what, &a, true);
        if a.status != 401 {
            p.fail(&what, format!("{}: no key is a 401", a.status));
        }
    }

    // Nothing queued but what was accepted: on the document mailed, on the
    // draft and on the other company's invoice.
    let after = mail_counts(&app, &docs);
    let mut problems = Vec::new();
    // The email resent was sent: each resend accepted is a new email.
    let expected = vec![before[0] + queued + resent, before[1], before[2]];
    if after != expected {
        problems.push(format!(
            "emails of (own, draft, foreign) went {before:?} → {after:?}; \
             accepted {queued} sends and {resent} resends"
        ));
    }
    let log = app.log();
    for bad in ["panicked", "internal error"] {
        if let Some(line) = log.lines().find(|l| l.contains(bad)) {
            problems.push(format!("server log: {line}"));
        }
    }
    eprintln!(
        "hostile email: {} requests ({}), by status {:?}; accepted {queued} sends, {resent} resends",
        p.sent,
        p.tally(),
        p.by_status,
    );
    problems.extend(p.failures.iter().cloned());
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---------------------------------------------------------------------------
// XML uploads whose work grows faster than their size: the shape is bounded
// before any parse, the work runs on the upload pool off the HTTP workers,
// and a full pool answers 503 BUSY at once.

const UBL_INVOICE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2";

/// An `Invoice` holding `levels` nested elements that each declare a new
/// prefix: roxmltree copies every prefix in scope into each, so parsing it
/// is cubic (5,000 levels, 137 KB: 153 s of one worker).
fn prefix_nesting(levels: usize) -> String {
    let mut xml = format!("<Invoice xmlns=\"{UBL_INVOICE_NS}\">");
    for i in 0..levels {
        xml.push_str(&format!("<p{i}:a xmlns:p{i}=\"u\">"));
    }
    for i in (0..levels).rev() {
        xml.push_str(&format!("</p{i}:a>"));
    }
    xml.push_str("</Invoice>");
    xml
}

/// A readable invoice whose buyer is `buyer`, with `declarations`
/// namespace declarations on its root in all, `elements` elements in all,
/// and a signature whose one reference covers the whole document: the
/// signature check canonicalises every element with every namespace in
/// scope (350 declarations × 60,000 elements, 250 KB: 27 s of a worker).
fn namespace_heavy(buyer: &str, declarations: usize, elements: usize) -> String {
    const DS: &str = "http://www.w3.org/2000/09/xmldsig#";
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Invoice xmlns=\"{UBL_INVOICE_NS}\" \
         xmlns:cac=\"urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2\" \
         xmlns:cbc=\"urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2\" \
         xmlns:ds=\"{DS}\""
    );
    for i in 4..declarations {
        xml.push_str(&format!(" xmlns:n{i}=\"urn:n:{i}\""));
    }
    xml.push('>');
    let party = |role: &str, nit: &str| {
        format!("<cac:{role}><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>{nit}</cbc:CompanyID></cac:PartyTaxScheme></cac:Party></cac:{role}>")
    };
    let head = [
        "<cbc:ProfileExecutionID>2</cbc:ProfileExecutionID><cbc:ID>SETP990000001</cbc:ID>".to_string(),
        format!("<cbc:UUID>{}</cbc:UUID><cbc:IssueDate>2026-01-02</cbc:IssueDate>", "ab".repeat(48)),
        party("AccountingSupplierParty", "900000099"),
        party("AccountingCustomerParty", buyer),
        "<cac:LegalMonetaryTotal><cbc:PayableAmount currencyID=\"COP\">1.00</cbc:PayableAmount></cac:LegalMonetaryTotal>".into(),
    ]
    .concat();
    let signature = format!(
        "<ds:Signature><ds:SignedInfo>\
         <ds:CanonicalizationMethod Algorithm=\"http://www.w3.org/TR/2001/REC-xml-c14n-20010315\"/>\
         <ds:SignatureMethod Algorithm=\"http://www.w3.org/2001/04/xmldsig-more#rsa-sha256\"/>\
         <ds:Reference URI=\"\"><ds:Transforms><ds:Transform Algorithm=\"{DS}enveloped-signature\"/></ds:Transforms>\
         <ds:DigestMethod Algorithm=\"http://www.w3.org/2001/04/xmlenc#sha256\"/>\
         <ds:DigestValue>AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</ds:DigestValue></ds:Reference>\
         </ds:SignedInfo><ds:SignatureValue>AAAA</ds:SignatureValue></ds:Signature>"
    );
    let fixed = 1 + head.matches("<c").count() + signature.matches("<ds:").count();
    xml.push_str(&head);
    for _ in fixed..elements {
        xml.push_str("<e/>");
    }
    xml.push_str(&signature);
    xml.push_str("</Invoice>");
    xml
}

fn upload_json(
    client: &reqwest::blocking::Client,
    app: &TestApp,
    key: &str,
    xml: &str,
) -> reqwest::blocking::Response {
    let body = json!({ "xml_base64": base64::engine::general_purpose::STANDARD.encode(xml) });
    client
        .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
        .header("X-Api-Key", key)
        .json(&body)
        .send()
        .expect("upload answered")
}

#[test]
fn hostile_xml_uploads_are_bounded_and_the_api_stays_responsive() {
    let app = TestApp::spawn_with(
        Launch::default()
            .env("EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE", "100000")
            .env("EMISOR_UPLOADS__WORKERS", "1")
            .env("EMISOR_UPLOADS__QUEUE", "1"),
    );
    let key = app.sk_test();
    let nit = app.keys["nit"].as_str().unwrap().to_string();
    // Each answer must come well before the old costs (seconds to hours).
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let refused = |res: reqwest::blocking::Response, needle: &str| {
        let status = res.status().as_u16();
        let v: Value = res.json().unwrap();
        assert_eq!(status, 422, "{v}");
        assert_eq!(v["error"]["code"], "VALIDATION_ERROR", "{v}");
        let m = v["message"].as_str().unwrap();
        assert!(m.contains(needle), "{needle}: {m}");
    };

    // Cubic parse: refused before parsing, as JSON and as XML.
    let nesting = prefix_nesting(5000);
    refused(upload_json(&client, &app, &key, &nesting), "100 levels");
    let raw = client
        .post(format!("{}/v1/api/eventos/cargar-documento", app.url))
        .header("X-Api-Key", &key)
        .header("Content-Type", "application/xml")
        .body(nesting)
        .send()
        .unwrap();
    refused(raw, "100 levels");
    // Quadratic canonicalisation: over the namespace bound.
    refused(
        upload_json(&client, &app, &key, &namespace_heavy(&nit, 350, 60_000)),
        "more than 100 namespaces",
    );
    // At the bounds: read, canonicalised and refused on its digest.
    let at_limit = namespace_heavy(&nit, 100, 100_000);
    refused(upload_json(&client, &app, &key, &at_limit), "signature");
    refused(
        upload_json(&client, &app, &key, &namespace_heavy(&nit, 100, 100_001)),
        "100000 elements",
    );

    // Sixteen at once on one thread and one place in the queue, while a
    // health probe runs: the probe never waits, the uploads are refused on
    // their content or told to come back.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let uploads: Vec<_> = (0..16)
        .map(|_| {
            let (client, url, key, body) = (client.clone(), app.url.clone(), key.clone(), at_limit.clone());
            std::thread::spawn(move || {
                let res = client
                    .post(format!("{url}/v1/api/eventos/cargar-documento"))
                    .header("X-Api-Key", &key)
                    .json(&json!({ "xml_base64": base64::engine::general_purpose::STANDARD.encode(body) }))
                    .send()
                    .expect("upload answered");
                let retry = res.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
                let status = res.status().as_u16();
                let v: Value = res.json().unwrap();
                (status, v["error"]["code"].as_str().unwrap_or("").to_string(), retry)
            })
        })
        .collect();
    let probe = {
        let (done, url) = (done.clone(), app.url.clone());
        std::thread::spawn(move || {
            let quick = reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(3))
                .build()
                .unwrap();
            let mut answered = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let res = quick.get(format!("{url}/healthz")).send();
                assert!(
                    res.as_ref().is_ok_and(|r| r.status().is_success()),
                    "/healthz during the uploads: {res:?}"
                );
                answered += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            answered
        })
    };
    let answers: Vec<_> = uploads.into_iter().map(|t| t.join().unwrap()).collect();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(probe.join().unwrap() > 0);
    let busy: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 503).collect();
    for (status, code, retry) in &answers {
        match status {
            422 => assert_eq!(code, "VALIDATION_ERROR"),
            503 => {
                assert_eq!(code, "BUSY");
                assert!(retry.is_some(), "503 BUSY without Retry-After");
            }
            other => panic!("{other} {code}"),
        }
    }
    assert!(!busy.is_empty(), "{answers:?}");
    assert!(busy.len() < answers.len(), "{answers:?}");

    // Nothing stored.
    let (_, list) = json(app.get("/v1/api/eventos/documentos", &key));
    assert_eq!(list["data"]["total"], 0, "{list}");
}
