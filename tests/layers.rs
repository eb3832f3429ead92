//! The layers of `src/` hold (docs/architecture.md, "Layers"): arrows point
//! down only; the folders of `store/src/` import each other without a circle
//! (docs/storage.md, "Layout of the store crate").
//! Read from the source, so a change that breaks a layer fails here, not in
//! review. Test code (a file's `#[cfg(test)]` tail or item, `tests.rs`,
//! `*_tests.rs`) is exempt: tests may reach across layers to check what
//! they check.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` (or `dir` itself, a file), test files left
/// out.
fn sources(dir: &Path) -> Vec<PathBuf> {
    if dir.is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs")
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n != "tests.rs" && !n.ends_with("_tests.rs"))
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A file's code without its test code and comment lines. A `#[cfg(test)]`
/// before a one-line item (`mod tests;`) leaves that item out; before a
/// block (`mod tests {`), by convention at the end, the rest of the file.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            match lines.next() {
                Some(item) if item.trim_end().ends_with(';') => continue,
                _ => break,
            }
        }
        if !line.trim_start().starts_with("//") {
            out.push(line);
        }
    }
    out.join("\n")
}

fn src(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(rel)
}

/// `(file, needle)` for every needle found in the files under `dirs`.
fn offenders(dirs: &[&str], needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        let root = src(dir);
        assert!(root.exists(), "{} does not exist", root.display());
        for file in sources(&root) {
            let code = code(&file);
            for needle in needles {
                if contains_word(&code, needle) {
                    found.push(format!("{} uses {needle}", file.display()));
                }
            }
            // `use emisor_store::{…, Store, …}` names the trait too.
            let groups = code.split("emisor_store::{").skip(1);
            for group in groups.filter_map(|g| g.split('}').next()) {
                if needles.contains(&"dyn Store") && contains_word(group, "Store") {
                    found.push(format!("{} imports emisor_store::Store", file.display()));
                }
            }
        }
    }
    found
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `needle` in `code`, not as part of a longer identifier.
fn contains_word(code: &str, needle: &str) -> bool {
    code.match_indices(needle).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + needle.len()..].chars().next();
        !before.is_some_and(ident_char) && !after.is_some_and(ident_char)
    })
}

/// The module a file under `root` is: `api/pos/mapping.rs` is
/// `["api", "pos", "mapping"]`, `api/pos/mod.rs` is `["api", "pos"]`.
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Every path `code` names through `crate::` or `super::`, made absolute
/// from the crate's root: in `api/pos/mapping.rs`, `super::model::X` is
/// `api::pos::model::X`, and `crate::http::{auth, error::ApiError}` names
/// `http::auth` and `http::error::ApiError`.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| ident_char(c) || c == ':') {
                continue; // inside a longer path (`super::super::`)
            }
            let mut rest = &code[i..];
            let mut base: Vec<String> = if start == "crate::" {
                rest = &rest["crate::".len()..];
                Vec::new()
            } else {
                let mut base = module.to_vec();
                while let Some(r) = rest.strip_prefix("super::") {
                    rest = r;
                    if base.pop().is_none() {
                        break;
                    }
                }
                base
            };
            tree(rest, &mut base, &mut out);
        }
    }
    out
}

/// Reads one use tree (`a::b`, `a::{b, c::d}`, `self`) after `prefix`;
/// returns what it did not read.
fn tree<'a>(mut rest: &'a str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> &'a str {
    let depth = prefix.len();
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            rest = group;
            loop {
                rest = rest.trim_start();
                if let Some(r) = rest.strip_prefix('}') {
                    rest = r;
                    break;
                }
                if rest.is_empty() {
                    break;
                }
                let before = rest.len();
                rest = tree(rest, &mut prefix.clone(), out);
                // `a as b`, `*`: skip to the next member of the group.
                if rest.len() == before || !rest.trim_start().starts_with([',', '}']) {
                    let end = rest.find([',', '}']).unwrap_or(rest.len());
                    rest = &rest[end..];
                }
                rest = rest.strip_prefix(',').unwrap_or(rest);
            }
            break;
        }
        let end = rest.find(|c: char| !ident_char(c)).unwrap_or(rest.len());
        let ident = &rest[..end];
        rest = &rest[end..];
        if ident.is_empty() || ident == "self" {
            out.push(prefix.clone());
            break;
        }
        prefix.push(ident.to_string());
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => {
                out.push(prefix.clone());
                break;
            }
        }
    }
    prefix.truncate(depth);
    rest
}

/// Every path each file under `root` names, by file.
fn paths_by_file(root: &Path, dir: &Path) -> Vec<(PathBuf, Vec<Vec<String>>)> {
    sources(dir)
        .into_iter()
        .map(|file| {
            let paths = named_paths(&code(&file), &module_of(root, &file));
            (file, paths)
        })
        .collect()
}

/// The folders and files right under `root` (`main.rs` and `lib.rs` are
/// the crate's root, not a module of it).
fn top_level_modules(root: &Path) -> BTreeSet<String> {
    fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|m| m != "main" && m != "lib")
        .collect()
}

/// The arrows between the top-level `modules` under `root`, each with the
/// first file found drawing it and what that file names.
fn arrows_between(root: &Path, modules: &BTreeSet<String>) -> BTreeMap<(String, String), String> {
    let mut arrows = BTreeMap::new();
    for (file, paths) in paths_by_file(root, root) {
        let Some(from) = module_of(root, &file)
            .first()
            .filter(|m| modules.contains(*m))
            .cloned()
        else {
            continue;
        };
        for path in paths {
            let Some(to) = path
                .first()
                .filter(|to| **to != from && modules.contains(*to))
            else {
                continue;
            };
            arrows.entry((from.clone(), to.clone())).or_insert_with(|| {
                let file = file.strip_prefix(root).unwrap_or(&file);
                format!("src/{} names {}", file.display(), path.join("::"))
            });
        }
    }
    arrows
}

/// Import circles between the top-level modules of the crate under
/// `root`: each circle's modules, and for each of its arrows a file that
/// draws it and what it names.
fn circles_between_top_level_modules(root: &Path) -> Vec<String> {
    let modules = top_level_modules(root);
    let arrows = arrows_between(root, &modules);
    let mut found = Vec::new();
    for circle in strongly_connected(&modules, &arrows) {
        let mut why: Vec<String> = arrows
            .iter()
            .filter(|((a, b), _)| circle.contains(a) && circle.contains(b))
            .map(|((a, b), file)| format!("  {a} -> {b}: {file}"))
            .collect();
        why.insert(0, format!("circle: {}", circle.join(", ")));
        found.push(why.join("\n"));
    }
    found
}

/// The groups of more than one module that reach each other (Tarjan).
fn strongly_connected(
    nodes: &BTreeSet<String>,
    arrows: &BTreeMap<(String, String), String>,
) -> Vec<Vec<String>> {
    struct Walk<'a> {
        arrows: &'a BTreeMap<(String, String), String>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        groups: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            let next: Vec<&'a str> = self
                .arrows
                .keys()
                .filter(|(a, _)| a == v)
                .map(|(_, b)| b.as_str())
                .collect();
            for w in next {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        groups: Vec::new(),
    };
    for node in nodes {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.groups
}

/// Folders under `src/api/` that every family may import: the unified
/// request the invoicing families translate onto. Every other folder
/// there is a route family.
const SHARED_UNDER_API: &[&str] = &["invoice_request"];

/// What a family (and the shared request) may import, beside its own
/// folder and [`SHARED_UNDER_API`]: the HTTP floor, issuing, the engine.
const BELOW_THE_FAMILIES: &[&str] = &["http", "issuing", "engine"];

/// The folders under `src/api/`.
fn api_folders() -> Vec<String> {
    fs::read_dir(src("api"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_engine_is_pure_domain_code() {
    let bad = offenders(
        &["engine"],
        &[
            "emisor_actors",
            "emisor_store",
            "actix",
            "actix_web",
            "awc",
            "sled",
            "crate::api",
            "crate::admin",
            "crate::http",
            "crate::issuing",
            "crate::authority",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn issuing_knows_no_api() {
    let bad = offenders(
        &["issuing"],
        &["crate::api", "crate::admin", "crate::http", "HttpResponse"],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The PDF is drawn from views of its own, built by its caller from what
/// was stored.
#[test]
fn the_pdf_knows_no_store_and_no_http() {
    let bad = offenders(
        &["render"],
        &[
            "emisor_store",
            "emisor_actors",
            "actix_web",
            "crate::api",
            "crate::admin",
            "crate::http",
            "crate::issuing",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

/// Async code holds the async store handle only: the synchronous traits
/// (whose writes fsync on the calling thread) are for the CLI, start-up
/// and provisioning, which run on threads that may block.
#[test]
fn async_code_never_calls_the_synchronous_store() {
    let bad = offenders(
        &[
            "api",
            "http",
            "issuing",
            "ops",
            "admin/auth.rs",
            "admin/companies.rs",
            "admin/credentials.rs",
            "admin/keys.rs",
            "admin/test_set.rs",
            "admin/test_set_run.rs",
        ],
        &[
            "SledStore",
            "dyn Store",
            "emisor_store::Store",
            "CompanyStore",
            "CredentialStore",
            "ApiKeyStore",
            "CustomerStore",
            "DocumentStore",
            "JobStore",
            "EventStore",
            "SettingsStore",
            "StoreHealth",
            "ReceivedStore",
            "web::block",
        ],
    );
    assert!(bad.is_empty(), "{bad:#?}");
}

#[test]
fn modules_live_where_their_names_say() {
    let bad = offenders(&[""], &["#[path"]);
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A family folder under `src/api/` imports no other family folder (and the
/// shared request none at all), so a family changes without touching
/// another.
#[test]
fn no_family_imports_another() {
    let folders = api_folders();
    assert!(folders.iter().any(|f| f == "facturacion"), "{folders:?}");
    let mut bad = Vec::new();
    for folder in &folders {
        for (file, paths) in paths_by_file(&src(""), &src(&format!("api/{folder}"))) {
            for path in paths {
                if let ["api", other, ..] = path.iter().map(String::as_str).collect::<Vec<_>>()[..]
                {
                    let family =
                        folders.iter().any(|f| f == other) && !SHARED_UNDER_API.contains(&other);
                    if family && other != folder.as_str() {
                        bad.push(format!("{} names {}", file.display(), path.join("::")));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A family imports only what is below it: the HTTP floor (which holds the
/// state), the shared unified request, issuing and the engine (and the
/// store's types, outside `crate`).
#[test]
fn families_stand_on_the_floor() {
    let mut bad = Vec::new();
    for folder in api_folders() {
        for (file, paths) in paths_by_file(&src(""), &src(&format!("api/{folder}"))) {
            for path in paths {
                let allowed = match path.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                    ["api", inner, ..] => inner == folder || SHARED_UNDER_API.contains(&inner),
                    [top, ..] => BELOW_THE_FAMILIES.contains(&top),
                    [] => false,
                };
                if !allowed {
                    bad.push(format!("{} names {}", file.display(), path.join("::")));
                }
            }
        }
    }
    bad.extend(offenders(&["api", "admin"], &["document_by_code"]));
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A note's original is issuing's to look up and check
/// (`issuing::reference`): the API and the admin API hand it over named (by
/// id or by code) and never look it up, check it or fill it themselves, nor
/// turn a code into a document through the store's code index.
#[test]
fn families_leave_a_notes_original_to_issuing() {
    let forbidden: &[&[&str]] = &[
        &["issuing", "reference", "original"],
        &["issuing", "reference", "check"],
        &["issuing", "reference", "resolve"],
    ];
    let mut bad = Vec::new();
    for dir in ["api", "admin"] {
        for (file, paths) in paths_by_file(&src(""), &src(dir)) {
            for path in paths {
                if forbidden
                    .iter()
                    .any(|f| path.starts_with(&f.iter().map(|s| s.to_string()).collect::<Vec<_>>()))
                {
                    bad.push(format!("{} names {}", file.display(), path.join("::")));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// The HTTP floor (with the state every handler reaches, `http/state.rs`),
/// `ops` and the metrics import no family and nothing else above them.
#[test]
fn the_floor_state_ops_and_metrics_import_no_family() {
    let above = |dir: &str| -> &'static [&'static str] {
        match dir {
            "http" => &["api", "admin", "ops", "openapi", "startup", "cli"],
            "metrics.rs" => &["api", "admin", "ops", "http", "openapi", "startup", "cli"],
            _ => &["api", "admin", "openapi", "startup", "cli"],
        }
    };
    let mut bad = Vec::new();
    assert!(src("http/state.rs").is_file(), "the state left the floor");
    for dir in ["http", "ops", "metrics.rs"] {
        assert!(src(dir).exists(), "src/{dir} is gone");
        for (file, paths) in paths_by_file(&src(""), &src(dir)) {
            for path in paths {
                if path
                    .first()
                    .is_some_and(|top| above(dir).contains(&top.as_str()))
                {
                    bad.push(format!("{} names {}", file.display(), path.join("::")));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}

/// No two top-level modules of `src/` import each other, however long the
/// way round: the layers are a stack, not a web.
#[test]
fn no_circle_between_the_top_level_modules() {
    let modules = top_level_modules(&src(""));
    let arrows = arrows_between(&src(""), &modules);
    for (a, b) in [("api", "http"), ("http", "issuing"), ("startup", "api")] {
        let arrow = (a.to_string(), b.to_string());
        assert!(arrows.contains_key(&arrow), "{a} -> {b} not seen");
    }
    let circles = circles_between_top_level_modules(&src(""));
    assert!(circles.is_empty(), "{}", circles.join("\n"));
}

/// The readers above see what they should: a circle, a `super::` path and
/// a group are found where they are.
#[test]
fn the_path_reader_reads_groups_and_super() {
    let module: Vec<String> = ["api", "pos", "mapping"].map(String::from).to_vec();
    let code = "use super::model::X;\nuse crate::http::{auth, error::{ApiError, FieldError}};\n\
                use super::super::family::Y;\nlet a = crate::issuing::files::Layout::A4;\n\
                use crate::metrics::{*, Gauge as G, self};";
    let mut paths: Vec<String> = named_paths(code, &module)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "api::family::Y",
            "api::pos::model::X",
            "http::auth",
            "http::error::ApiError",
            "http::error::FieldError",
            "issuing::files::Layout::A4",
            "metrics",
            "metrics",
            "metrics::Gauge",
        ]
    );
    let nodes: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let arrows: BTreeMap<(String, String), String> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
            .map(|(a, b)| ((a.to_string(), b.to_string()), String::new()))
            .into();
    assert_eq!(strongly_connected(&nodes, &arrows), [["a", "b", "c"]]);
}

// ---- store/src/: the folders of the store crate ----

/// The top-level modules of `store/src/` (a folder or a file; `lib.rs`
/// only declares and re-exports, the tests may reach anywhere).
fn store_modules() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("store/src");
    let mut out: Vec<String> = fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_stem()?.to_str()?.to_string();
            (path.is_dir() || path.extension().is_some_and(|x| x == "rs")).then_some(name)
        })
        .filter(|n| n != "lib" && n != "tests")
        .collect();
    out.sort();
    out
}

/// What a `crate::` path names first in `code`: for `crate::a::b` and
/// `crate::{a::b, c}`, `a` (and `c`).
fn store_crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut entry = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(store_first_segment(&entry));
                        entry.clear();
                        continue;
                    }
                    _ => {}
                }
                entry.push(c);
            }
            if !entry.trim().is_empty() {
                out.push(store_first_segment(&entry));
            }
        } else {
            out.push(store_first_segment(rest));
        }
    }
    out
}

fn store_first_segment(path: &str) -> String {
    path.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// One arrow between two modules of `store/src/` and the files drawing it.
struct StoreArrow {
    from: String,
    to: String,
    files: Vec<String>,
}

/// No import circle between the folders (and top-level files) of
/// `store/src/`: each imports only those below it, by their own paths, not
/// through what `lib.rs` re-exports. A failure names the files drawing each
/// arrow of the circle.
#[test]
fn store_folders_have_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("store/src");
    let modules = store_modules();
    let mut arrows: Vec<StoreArrow> = Vec::new();
    let mut through_root = Vec::new();
    for module in &modules {
        let path = root.join(module);
        let files = if path.is_dir() {
            sources(&path)
        } else {
            vec![root.join(format!("{module}.rs"))]
        };
        for file in files {
            let code = code(&file);
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            if code.contains("super::super") {
                through_root.push(format!("store/src/{shown} reaches out with super::super"));
            }
            for name in store_crate_paths(&code) {
                if !modules.contains(&name) {
                    through_root.push(format!("store/src/{shown} uses crate::{name}"));
                    continue;
                }
                if &name == module {
                    continue;
                }
                match arrows
                    .iter_mut()
                    .find(|a| a.from == *module && a.to == name)
                {
                    Some(arrow) if !arrow.files.contains(&shown) => arrow.files.push(shown.clone()),
                    Some(_) => {}
                    None => arrows.push(StoreArrow {
                        from: module.clone(),
                        to: name,
                        files: vec![shown.clone()],
                    }),
                }
            }
        }
    }
    assert!(through_root.is_empty(), "{through_root:#?}");
    let edges: Vec<(String, String)> = arrows
        .iter()
        .map(|a| (a.from.clone(), a.to.clone()))
        .collect();
    let circles = store_circles(&modules, &edges);
    let report: Vec<String> = circles
        .iter()
        .map(|group| {
            let inside: Vec<String> = arrows
                .iter()
                .filter(|a| group.contains(&a.from) && group.contains(&a.to))
                .map(|a| format!("{} -> {} in {}", a.from, a.to, a.files.join(", ")))
                .collect();
            format!("circle {group:?}:\n  {}", inside.join("\n  "))
        })
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The strongly connected groups of more than one module (Tarjan).
fn store_circles(nodes: &[String], edges: &[(String, String)]) -> Vec<Vec<String>> {
    struct Walk<'a> {
        nodes: &'a [String],
        edges: &'a [(String, String)],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl Walk<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            let targets: Vec<usize> = self
                .edges
                .iter()
                .filter(|(a, _)| *a == self.nodes[v])
                .filter_map(|(_, b)| self.nodes.iter().position(|n| n == b))
                .collect();
            for w in targets {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    group.push(self.nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        nodes,
        edges,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        stack: Vec::new(),
        on_stack: vec![false; nodes.len()],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..nodes.len() {
        if walk.index[v].is_none() {
            walk.visit(v);
        }
    }
    walk.found
}

/// Where `src/` names the store's engine: `SledStore` or `Stores`, a path
/// through `sled::` or `engine::sled`, or the engine's own `OpenOptions`
/// (not `std::fs`'s).
fn store_engine_names(code: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for word in ["SledStore", "Stores"] {
        if contains_word(code, word) {
            found.push(word);
        }
    }
    for path in ["sled::", "engine::sled"] {
        let named = code.match_indices(path).any(|(i, _)| {
            !code[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        if named {
            found.push(path);
        }
    }
    let store_groups = code
        .split("emisor_store::{")
        .skip(1)
        .filter_map(|g| g.split('}').next());
    if code.contains("emisor_store::OpenOptions")
        || store_groups
            .into_iter()
            .any(|g| contains_word(g, "OpenOptions"))
    {
        found.push("emisor_store::OpenOptions");
    }
    found
}

/// The store is opened through `emisor_store::open` and seen through its
/// traits (and `StoreHandle`, `AsyncStore`): no code of `src/` names the
/// engine behind them.
#[test]
fn store_engine_is_named_by_no_service_code() {
    let mut bad = Vec::new();
    for file in sources(&src("")) {
        for name in store_engine_names(&code(&file)) {
            bad.push(format!("{} names {name}", file.display()));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
