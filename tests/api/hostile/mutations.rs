//! JSON paths and mutations.

use super::*;

#[derive(Clone, Debug)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

/// Every value inside `v` (objects, arrays and leaves), by path.
pub(super) fn paths(v: &Value) -> Vec<Vec<Step>> {
    pub(super) fn walk(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
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

pub(super) fn show(path: &[Step]) -> String {
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

pub(super) fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, step| match step {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

pub(super) fn get<'a>(v: &'a Value, path: &[Step]) -> &'a Value {
    path.iter().fold(v, |v, step| match step {
        Step::Key(k) => &v[k.as_str()],
        Step::Index(i) => &v[*i],
    })
}

/// `body` without the value at `path`.
pub(super) fn removed(body: &Value, path: &[Step]) -> String {
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

pub(super) const MARKER: &str = "__hostile_marker__";

/// `body` with the value at `path` replaced by the raw JSON text `raw`.
pub(super) fn replaced(body: &Value, path: &[Step], raw: &str) -> String {
    let mut b = body.clone();
    *at(&mut b, path) = json!(MARKER);
    b.to_string().replacen(&format!("\"{MARKER}\""), raw, 1)
}

/// The key at `path` twice, `raw` first and its own value last: the body is
/// refused whatever the values (decisions.md §5), with the key named.
pub(super) fn duplicated(body: &Value, path: &[Step], raw: &str) -> Option<(String, String)> {
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

pub(super) fn abbreviate(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        let head: String = s.chars().take(40).collect();
        format!("{head}…({} bytes)", s.len())
    }
}

/// How hard a value is hit.
pub(super) enum Plan {
    /// Every hostile value.
    All,
    /// One hostile value of each kind, picked by the seeded generator.
    OneOfEach,
    Skip,
}

/// One mutated request body.
pub(super) struct Mutation {
    pub(super) what: String,
    pub(super) text: String,
    /// A wrong JSON type where an object or array belongs, which every
    /// endpoint must refuse (decisions.md §3: 400).
    pub(super) must_refuse: bool,
    /// The key given twice, when that is the mutation.
    pub(super) duplicate: Option<String>,
}

/// Field mutations of `body`: for every value, null, wrong types, removal,
/// a duplicated key, and hostile values as `plan` says.
pub(super) fn mutations(
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
pub(super) fn shape(path: &[Step]) -> String {
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
pub(super) struct Attack {
    pub(super) what: String,
    pub(super) body: Vec<u8>,
    /// Not one JSON object: every endpoint must refuse it (an empty body
    /// may mean defaults, a BOM may be skipped, padding may be ignored).
    pub(super) must_refuse: bool,
}

/// Whole bodies that are broken, built from a valid one.
pub(super) fn body_attacks(valid: &str) -> Vec<Attack> {
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
pub(super) const WRONG_CONTENT_TYPES: [Option<&str>; 5] = [
    None,
    Some("text/plain"),
    Some("application/x-www-form-urlencoded"),
    Some("application/xml"),
    Some("multipart/form-data; boundary=x"),
];
